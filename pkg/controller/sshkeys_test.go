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
	"bytes"
	"testing"

	"golang.org/x/crypto/ssh"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// TestSSHKeyPair: the private key parses, its public key is the one given
// and the only authorized one, and every pair is new.
func TestSSHKeyPair(t *testing.T) {
	keys, err := newSSHKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.ParsePrivateKey(keys[podbuilder.SSHPrivateKey])
	if err != nil {
		t.Fatalf("the private key does not parse: %v", err)
	}
	public := ssh.MarshalAuthorizedKey(signer.PublicKey())
	if !bytes.Equal(public, keys[podbuilder.SSHPublicKey]) || !bytes.Equal(public, keys[podbuilder.SSHAuthorizedKeys]) {
		t.Errorf("public key %q and authorized keys %q, want both %q", keys[podbuilder.SSHPublicKey],
			keys[podbuilder.SSHAuthorizedKeys], public)
	}
	other, err := newSSHKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other[podbuilder.SSHPrivateKey], keys[podbuilder.SSHPrivateKey]) {
		t.Error("two pairs share a private key")
	}
}

// TestSSHKeysBoundToTheJob: an MPI job makes its own key pair Secret, named
// for its UID, and its pods mount that one, not a Secret under the plain
// `<job>-ssh` (mpi-operator's, or planted), nor the Secret of a job deleted
// just before under the same name.
func TestSSHKeysBoundToTheJob(t *testing.T) {
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "horovod-ssh", Namespace: "ns"}}
	first := newMPIJob("horovod").job
	f := newFixture(t, planted, first)
	f.mustSync(first)
	f.checkKeysOf(first, "horovod-ssh-uid-horovod")
	f.observe()

	// Deleted, and created again at once: the garbage collector has not
	// removed the first job's pods and Secret yet.
	if err := f.jobClient.Tracker().Delete(fixtureKindOf(first).gvr(), "ns", "horovod"); err != nil {
		t.Fatal(err)
	}
	for _, name := range f.podNames() {
		if err := f.kubeClient.Tracker().Delete(podsGVR, "ns", name); err != nil {
			t.Fatal(err)
		}
	}
	again := newMPIJob("horovod").job
	again.SetUID("uid-horovod-again")
	if err := f.jobClient.Tracker().Add(again); err != nil {
		t.Fatal(err)
	}
	f.observe()
	f.mustSync(again)
	f.checkKeysOf(again, "horovod-ssh-uid-horovod-again")
}

// checkKeysOf checks that the last sync created the job's Secret under the
// name given, owned by the job, and that every pod it created mounts it.
func (f *fixture) checkKeysOf(job v1beta1.TrainingJob, want string) {
	f.t.Helper()
	var created []string
	for _, a := range f.kubeClient.Actions() {
		c, ok := a.(core.CreateAction)
		if !ok || a.GetResource().Resource != "secrets" {
			continue
		}
		s := c.GetObject().(*corev1.Secret)
		created = append(created, s.Name)
		if ref := metav1.GetControllerOf(s); ref == nil || ref.UID != job.GetUID() {
			f.t.Errorf("secret %s is controlled by %v, want the job %s", s.Name, ref, job.GetUID())
		}
	}
	if len(created) != 1 || created[0] != want {
		f.t.Errorf("created secrets %v, want [%s]", created, want)
	}
	pods := f.createdPods()
	if len(pods) == 0 {
		f.t.Fatal("no pod created")
	}
	for _, p := range pods {
		if got := mountedSecret(p); got != want {
			f.t.Errorf("pod %s mounts secret %q, want %q", p.Name, got, want)
		}
	}
}

// TestSSHKeysOfAnEarlierController: a job whose running pods mount the
// Secret an earlier controller named `<job>-ssh` makes no new key pair, and
// a pod made again mounts the keys the others trust.
func TestSSHKeysOfAnEarlierController(t *testing.T) {
	job := newMPIJob("horovod").withRestartPolicy(v1beta1.ReplicaTypeWorker, v1beta1.RestartPolicyOnFailure).job
	f := newFixture(t, job)
	f.step(job)
	f.setAll(func(p *corev1.Pod) {
		for i := range p.Spec.Volumes {
			if s := p.Spec.Volumes[i].Secret; s != nil {
				s.SecretName = "horovod-ssh"
			}
		}
	})
	// Gone, as with a node that was drained.
	if err := f.kubeClient.Tracker().Delete(podsGVR, "ns", "horovod-worker-1"); err != nil {
		t.Fatal(err)
	}
	f.observe()
	// Made again after the restart back-off.
	f.clock.Step(f.step(job))
	f.mustSync(job)
	pods := f.createdPods()
	if len(pods) != 1 || pods[0].Name != "horovod-worker-1" {
		t.Fatalf("created %v, want horovod-worker-1 again", f.createdPodNames())
	}
	if got := mountedSecret(pods[0]); got != "horovod-ssh" {
		t.Errorf("the new pod mounts secret %q, want horovod-ssh, as its peers", got)
	}
	for _, a := range f.kubeClient.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "secrets" {
			t.Errorf("a secret was created for a job whose pods have one: %v", a)
		}
	}
}

// mountedSecret is the Secret a pod mounts, "" for none.
func mountedSecret(p *corev1.Pod) string {
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			return v.Secret.SecretName
		}
	}
	return ""
}
