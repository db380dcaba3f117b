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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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

	secret, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Context(), "horovod-ssh", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the job's SSH key pair: %v", err)
	}
	if ref := metav1.GetControllerOf(secret); ref == nil || ref.Kind != string(framework.KindMPI) || ref.Name != "horovod" {
		t.Errorf("secret horovod-ssh is controlled by %+v, want the job", ref)
	}
	for _, key := range []string{podbuilder.SSHPrivateKey, podbuilder.SSHPublicKey, podbuilder.SSHAuthorizedKeys} {
		if len(secret.Data[key]) == 0 {
			t.Errorf("secret horovod-ssh has no %s", key)
		}
	}
	for _, p := range pods {
		if p.Name != "horovod-launcher-0" {
			continue
		}
		var hostfile string
		for _, c := range p.Spec.InitContainers {
			if c.Name == podbuilder.MPISetupInitName {
				hostfile = c.Command[len(c.Command)-1]
			}
		}
		suffix := ".horovod." + f.Namespace + ".svc"
		if want := "worker-0" + suffix + " slots=2\nworker-1" + suffix + " slots=2\n"; hostfile != want {
			t.Errorf("the launcher's hostfile %q, want %q", hostfile, want)
		}
		if v, _ := framework.EnvOf(&p.Spec.Containers[0], "OMPI_MCA_orte_default_hostfile"); v != podbuilder.MPIHostfile {
			t.Errorf("the launcher's OMPI_MCA_orte_default_hostfile %q, want %s", v, podbuilder.MPIHostfile)
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
