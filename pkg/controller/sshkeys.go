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

	"tensorstack.dev/training/pkg/controller/owner"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ensureSSHKeys gives a job whose kind needs one (MPIJob) its SSH key pair
// Secret, once: a new pair for a job that runs would lock its launcher out
// of its workers, so an existing Secret of the job is kept as it is. The
// pair is made only when the cache shows none.
func (r *reconciler) ensureSSHKeys(ctx context.Context) error {
	if !podbuilder.NeedsSSHKeys(r.kind.Adapter) {
		return nil
	}
	name := podbuilder.SSHSecretName(r.job.GetName())
	kind := owner.Secrets(r.c.kubeClient, r.c.secretIndexer, r.key.Namespace, "the job's replicas cannot reach each other over SSH")
	desired := &corev1.Secret{ObjectMeta: r.jobOwner.ObjectMeta(name), Type: corev1.SecretTypeOpaque}
	if cached, err := owner.Cached[*corev1.Secret](r.c.secretIndexer, r.key.Namespace, name); err != nil || cached == nil {
		keys, err := newSSHKeyPair()
		if err != nil {
			return fmt.Errorf("making the job's SSH key pair: %w", err)
		}
		desired.Data = keys
	}
	_, err := owner.Ensure(ctx, r.jobOwner, kind, desired)
	return err
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
