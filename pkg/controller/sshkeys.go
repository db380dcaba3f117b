/*
Copyright The TensorStack Training Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ensureSSHKeys gives a job whose kind needs one (MPIJob) its SSH key pair
// Secret, made before the job's first pod: a job with pods has it. The
// controller may only create Secrets, never read, list or change one (its
// role, artifacts/deploy), so a Secret of that name that exists already is
// taken to be the job's, made before a pause or a restart of the
// controller: the name holds the job's UID, which no one knows before the
// job exists (podbuilder.SSHSecretName).
func (r *reconciler) ensureSSHKeys(ctx context.Context) error {
	if !podbuilder.NeedsSSHKeys(r.kind.Adapter) || r.hasPods() {
		return nil
	}
	name := r.topo.SSHSecret
	keys, err := newSSHKeyPair()
	if err != nil {
		return fmt.Errorf("making the job's SSH key pair: %w", err)
	}
	secret := &corev1.Secret{ObjectMeta: r.jobOwner.ObjectMeta(name), Type: corev1.SecretTypeOpaque, Data: keys}
	_, err = r.c.kubeClient.CoreV1().Secrets(r.key.Namespace).Create(ctx, secret, metav1.CreateOptions{})
	switch {
	case err == nil:
		r.jobOwner.Normalf(owner.ReasonSuccessfulCreate, "Created secret %s", name)
		return nil
	case apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		r.jobOwner.Warningf(owner.ReasonFailedCreate, "Error creating secret %s: %v", name, err)
		return fmt.Errorf("creating secret %s: %w", name, err)
	}
}

// keepRunningPodsKeys keeps an MPI job whose pods an earlier controller made
// on the Secret those pods mount, named without the job's UID: a pod made
// now must hold the keys the running ones trust.
func (r *reconciler) keepRunningPodsKeys(pods []*corev1.Pod) {
	if !podbuilder.NeedsSSHKeys(r.kind.Adapter) {
		return
	}
	for _, p := range pods {
		if name := podbuilder.SSHSecretOf(r.job.GetName(), p); name != "" {
			r.topo.SSHSecret = name
			return
		}
	}
}

// hasPods says whether any replica of the job has a pod.
func (r *reconciler) hasPods() bool {
	for _, s := range r.slots {
		if s.pod != nil {
			return true
		}
	}
	return false
}

// newSSHKeyPair makes an Ed25519 key pair: the private key in OpenSSH's
// format, the public key, and the public key again as the only authorized
// one, under the names of the Secret's keys.
func newSSHKeyPair() (map[string][]byte, error) {
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	block, err := ssh.MarshalPrivateKey(private, "")
	if err != nil {
		return nil, err
	}
	sshPublic, err := ssh.NewPublicKey(public)
	if err != nil {
		return nil, err
	}
	authorized := ssh.MarshalAuthorizedKey(sshPublic)
	return map[string][]byte{
		podbuilder.SSHPrivateKey:     pem.EncodeToMemory(block),
		podbuilder.SSHPublicKey:      authorized,
		podbuilder.SSHAuthorizedKeys: authorized,
	}, nil
}
