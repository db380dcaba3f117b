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

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestMPIJobRunsToSuccess: an MPIJob on the kwok nodes gets its SSH key
// pair Secret, owned by the job; its launcher waits until both workers are
// ready, then writes its hostfile and runs; the job succeeds with the
// launcher, and the workers, still running, are cleaned up. kubectl finds
// it by its short name.
func TestMPIJobRunsToSuccess(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "mpi")
	ref := f.Create(framework.NewMPIJob("horovod").WithReplicas("launcher", 1).WithReplicas("worker", 2).
		SlotsPerWorker(2).ExitCode(0).RunFor("3s").Forever("worker"))
	pods := f.WaitForRunningPods(ref, 3)

	job := f.MustGetJob(ref)
	secret, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Context(), podbuilder.SSHSecretName(job), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the job's SSH key pair: %v", err)
	}
	if owner := metav1.GetControllerOf(secret); owner == nil || owner.Kind != string(framework.KindMPI) || owner.UID != job.GetUID() {
		t.Errorf("secret %s is controlled by %+v, want the job", secret.Name, owner)
	}
	for _, key := range []string{podbuilder.SSHPrivateKey, podbuilder.SSHPublicKey, podbuilder.SSHAuthorizedKeys} {
		if len(secret.Data[key]) == 0 {
			t.Errorf("secret %s has no %s", secret.Name, key)
		}
	}
	for _, p := range pods {
		if p.Name != "horovod-launcher-0" {
			continue
		}
		var hostfile string
		for _, v := range p.Spec.Volumes {
			if v.ConfigMap == nil {
				continue
			}
			cm, err := f.Kube.CoreV1().ConfigMaps(f.Namespace).Get(f.Context(), v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the launcher's config map volume %s: %v", v.Name, err)
			}
			if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != job.GetUID() {
				t.Errorf("config map %s is controlled by %+v, want the job", cm.Name, owner)
			}
			hostfile = cm.Data["hostfile"]
		}
		suffix := ".horovod." + f.Namespace + ".svc"
		if want := "worker-0" + suffix + " slots=2\nworker-1" + suffix + " slots=2\n"; hostfile != want {
			t.Errorf("the launcher's hostfile %q, want %q", hostfile, want)
		}
		// Open MPI 4's name and Open MPI 5's (PRRTE's): the launcher's image may have either.
		for _, name := range []string{"OMPI_MCA_orte_default_hostfile", "PRTE_MCA_prte_default_hostfile"} {
			if v, _ := framework.EnvOf(&p.Spec.Containers[0], name); v != podbuilder.MPIHostfile {
				t.Errorf("the launcher's %s %q, want %s", name, v, podbuilder.MPIHostfile)
			}
		}
	}

	// The launcher's gate opens once both workers are ready.
	f.WaitForPods(ref, "the launcher's startup gate open", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Name == "horovod-launcher-0" {
				return p.Annotations[podbuilder.AnnotationStartupGate] == podbuilder.StartupGateOpen, nil
			}
		}
		return false, nil
	})
	f.WaitForPhase(ref, v1beta1.JobSucceeded)
	f.WaitForPods(ref, "the running workers cleaned up", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if strings.Contains(p.Name, "-worker-") && p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if out := f.MustKubectl("get", "mj", "-n", f.Namespace, "-o", "name"); strings.TrimSpace(out) != "mpijob.batch.tensorstack.dev/horovod" {
		t.Errorf("kubectl get mj: %q", out)
	}
}

// TestMPIJobCreatedAgainUnderItsName: an MPIJob deleted and created again
// under the same name at once, ten times over, while the garbage collector
// still removes the last one's pods and Secret: every run's pods mount a key
// pair Secret this run owns, which stays until the run has succeeded, and a
// Secret planted under the plain `<job>-ssh` is never mounted.
func TestMPIJobCreatedAgainUnderItsName(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "mpi-again")
	planted := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "again-ssh", Namespace: f.Namespace},
		StringData: map[string]string{podbuilder.SSHAuthorizedKeys: "ssh-ed25519 AAAA planted"}}
	if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Create(f.Context(), planted, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	build := func() *framework.JobBuilder {
		return framework.NewMPIJob("again").WithReplicas("launcher", 1).WithReplicas("worker", 2).
			SlotsPerWorker(1).ExitCode(0).RunFor("3s").Forever("worker")
	}
	ref := f.Ref(framework.KindMPI, "again")
	for run := 1; run <= 10; run++ {
		// As soon as the name is free again.
		f.Eventually(framework.Timeout, "creating the job again", func(ctx context.Context) (bool, error) {
			err := f.CreateJob(ctx, build().Build(f.Namespace))
			if apierrors.IsAlreadyExists(err) {
				return false, nil
			}
			return err == nil, err
		})
		job := f.MustGetJob(ref)
		// Each of this run's pods as it was once seen started. Gathered over
		// polls: on a loaded machine the launcher can finish, and the
		// workers be deleted, before one list shows all three running.
		pods := map[string]corev1.Pod{}
		f.WaitForPods(ref, "this run's three pods started", framework.Timeout, func(all []corev1.Pod) (bool, error) {
			for _, p := range all {
				// Not the last run's, on their way out.
				started := p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded
				if owner := metav1.GetControllerOf(&p); owner != nil && owner.UID == job.GetUID() && started {
					pods[p.Name] = p
				}
			}
			return len(pods) == 3, nil
		})
		for _, p := range pods {
			name := ""
			for _, v := range p.Spec.Volumes {
				if v.Secret != nil {
					name = v.Secret.SecretName
				}
			}
			secret, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("run %d: pod %s mounts secret %q: %v", run, p.Name, name, err)
			}
			if owner := metav1.GetControllerOf(secret); owner == nil || owner.UID != job.GetUID() {
				t.Fatalf("run %d: pod %s mounts secret %s, controlled by %+v, not by this run (%s)",
					run, p.Name, name, owner, job.GetUID())
			}
		}
		f.WaitForPhase(ref, v1beta1.JobSucceeded)
		if err := f.DeleteJob(f.Context(), ref); err != nil {
			t.Fatalf("run %d: deleting the job: %v", run, err)
		}
		// The next run's pods take these pods' names: until these are gone
		// its workers wait (NameConflict), while its launcher, which kwok
		// runs without its startup gate, may finish alone.
		f.WaitForPods(ref, fmt.Sprintf("run %d's pods gone", run), framework.Timeout, func(all []corev1.Pod) (bool, error) {
			return len(all) == 0, nil
		})
	}
}
