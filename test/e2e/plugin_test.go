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
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/e2e/framework"
)

// replicaLogLine is a line every fake pod logs (hack/lib/local.sh gives
// kwok a ClusterLogs configuration).
const replicaLogLine = "fake training replica: step 2 loss 0.5"

// TestPluginEverydayVerbs drives a job through the kubectl training plugin,
// found by kubectl on PATH: pause to Paused, resume to Running, the logs of
// a replica, the status view, and debug.
func TestPluginEverydayVerbs(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "plugin")
	ref := f.Create(framework.NewPyTorchJob("resnet").WithReplicas("master", 1).WithReplicas("worker", 2))
	f.WaitForRunningPods(ref, 3)
	f.WaitForPhase(ref, v1beta1.JobRunning)

	r := f.KubectlTraining("pause", "pj/resnet")
	if r.Err != nil || !strings.Contains(r.Stdout, "pytorchtrainingjob.batch.tensorstack.dev/resnet paused") {
		t.Fatalf("pause: %s", r)
	}
	f.WaitForPhase(ref, v1beta1.JobPaused)
	f.WaitForNoPods(ref, framework.Timeout)

	// A plain name works when only one kind has a job of that name.
	r = f.KubectlTraining("resume", "resnet")
	if r.Err != nil || !strings.Contains(r.Stdout, "pytorchtrainingjob.batch.tensorstack.dev/resnet resumed") {
		t.Fatalf("resume: %s", r)
	}
	f.WaitForRunningPods(ref, 3)
	f.WaitForPhase(ref, v1beta1.JobRunning)

	r = f.KubectlTraining("logs", "resnet", "worker-1")
	if r.Err != nil || !strings.Contains(r.Stdout, replicaLogLine) {
		t.Errorf("logs of worker-1: %s", r)
	}
	r = f.KubectlTraining("logs", "pj/resnet", "--all-replicas")
	for _, pod := range []string{"resnet-master-0", "resnet-worker-0", "resnet-worker-1"} {
		if r.Err != nil || !strings.Contains(r.Stdout, "["+pod+"/pytorch] "+replicaLogLine) {
			t.Errorf("logs --all-replicas lacks %s's prefixed line: %s", pod, r)
		}
	}
	if r := f.KubectlTraining("logs", "resnet", "worker-7"); r.Err == nil || !strings.Contains(r.Stderr, "worker-1") {
		t.Errorf("logs of a replica the job does not have: %s; want an error listing the replicas", r)
	}

	r = f.KubectlTraining("status", "resnet")
	if r.Err != nil {
		t.Fatalf("status: %s", r)
	}
	for _, want := range []string{"Running", "resnet-master-0", "resnet-worker-1"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.Stdout)
		}
	}

	r = f.KubectlTraining("debug", "pj/resnet", "--replica", "worker", "--command", "sleep", "--command", "3600")
	if r.Err != nil || !strings.Contains(r.Stdout, "resnet") {
		t.Fatalf("debug: %s", r)
	}
	job := f.MustGetJob(ref)
	debug := job.CommonSpec().RunMode.Debug
	if !debugEnabled(job) || len(debug.ReplicaSpecs) != 1 || debug.ReplicaSpecs[0].Type != "worker" ||
		strings.Join(debug.ReplicaSpecs[0].Command, " ") != "sleep 3600" {
		t.Fatalf("after debug: runMode.debug = %+v, want worker with sleep 3600", debug)
	}
	f.WaitForPods(ref, "the workers running sleep 3600", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		n := 0
		for i := range pods {
			p := &pods[i]
			if p.Labels[v1beta1.LabelReplicaType] == "worker" && p.DeletionTimestamp == nil &&
				strings.Join(framework.TrainingContainer(framework.KindPyTorch, p).Command, " ") == "sleep 3600" {
				n++
			}
		}
		return n == 2, nil
	})
}

// TestPluginRespectsRBAC: a user bound to the cluster's view role (into
// which make run aggregates our user roles) reads jobs, with kubectl and
// the plugin, and is refused pause.
func TestPluginRespectsRBAC(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "plugin-rbac")
	ref := f.Create(framework.NewTFJob("guarded").WithReplicas("worker", 1))
	const viewer = "e2e-plugin-viewer"
	_, err := f.Kube.RbacV1().RoleBindings(f.Namespace).Create(f.Context(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "viewer"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: viewer}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	f.Eventually(framework.Timeout, "the viewer lists jobs", func(context.Context) (bool, error) {
		r := f.KubectlNS("--as", viewer, "get", "trainingjobs", "-o", "name")
		return r.Err == nil && strings.Contains(r.Stdout, "tensorflowtrainingjob.batch.tensorstack.dev/guarded"), nil
	})
	if r := f.KubectlTraining("--as", viewer, "status", "tj/guarded"); r.Err != nil || !strings.Contains(r.Stdout, "guarded") {
		t.Errorf("status as the viewer: %s", r)
	}
	r := f.KubectlTraining("--as", viewer, "pause", "tj/guarded")
	if r.Err == nil || !strings.Contains(r.Stderr, "forbidden") || !strings.Contains(r.Stderr, "tensorflowtrainingjobs/pause") {
		t.Errorf("pause as the viewer: %s; want forbidden on tensorflowtrainingjobs/pause", r)
	}
	if pauseEnabled(f.MustGetJob(ref)) {
		t.Errorf("the viewer's refused pause paused the job")
	}
}

// TestPluginConvertsKubeflowTFJob: a Kubeflow TFJob manifest, converted by
// the plugin and applied with kubectl, runs to Succeeded.
func TestPluginConvertsKubeflowTFJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "plugin-convert")
	template := func(replicas int) string {
		return fmt.Sprintf(`
      replicas: %d
      restartPolicy: OnFailure
      template:
        metadata:
          annotations:
            %s: "0"
            %s: "2s"
        spec:
          containers:
          - name: tensorflow
            image: %s
            command: ["python", "/opt/mnist.py"]`, replicas, framework.AnnotationExitCode, framework.AnnotationRunDuration, framework.Image)
	}
	manifest := `apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist-kubeflow
spec:
  runPolicy:
    cleanPodPolicy: None
    backoffLimit: 2
  tfReplicaSpecs:
    Worker:` + template(2) + `
    Chief:` + template(1) + "\n"
	file := f.WriteFile("tfjob.yaml", manifest)

	r := f.KubectlTraining("convert", "-f", file)
	if r.Err != nil || !strings.Contains(r.Stdout, "kind: TensorFlowTrainingJob") {
		t.Fatalf("convert: %s", r)
	}
	if applied := f.KubectlInput(r.Stdout, "apply", "-f", "-"); applied.Err != nil {
		t.Fatalf("applying the converted job: %s", applied)
	}
	ref := f.Ref(framework.KindTF, "mnist-kubeflow")
	job := f.WaitForJob(ref, "Succeeded", 3*time.Minute, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobSucceeded, nil
	})
	specs := job.CommonSpec().ReplicaSpecs
	if len(specs) != 2 || specs[0].Type != v1beta1.ReplicaTypeChief || specs[1].Type != v1beta1.ReplicaTypeWorker ||
		*specs[1].Replicas != 2 || specs[1].RestartPolicy != v1beta1.RestartPolicyOnFailure ||
		job.CommonSpec().RunPolicy.CleanUpPolicy != v1beta1.CleanUpPolicyNone {
		t.Errorf("converted job: %+v, runPolicy %+v", specs, job.CommonSpec().RunPolicy)
	}
}

// TestPluginCreatesKubeflowXGBoostJob: kubectl training create takes a
// Kubeflow XGBoostJob manifest as it is; the job runs to Succeeded with its
// master first, on the port the manifest names, which every replica is told.
func TestPluginCreatesKubeflowXGBoostJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "plugin-xgb")
	template := func(replicas int) string {
		return fmt.Sprintf(`
      replicas: %d
      template:
        metadata:
          annotations:
            %s: "0"
            %s: "2s"
        spec:
          containers:
          - name: xgboost
            image: %s
            ports: [{name: xgboostjob-port, containerPort: 9991}]`, replicas, framework.AnnotationExitCode, framework.AnnotationRunDuration, framework.Image)
	}
	manifest := `apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata:
  name: iris-kubeflow
spec:
  runPolicy:
    cleanPodPolicy: None
  xgbReplicaSpecs:
    Worker:` + template(2) + `
    Master:` + template(1) + "\n"
	file := f.WriteFile("xgboostjob.yaml", manifest)

	if r := f.KubectlTraining("create", "-f", file); r.Err != nil {
		t.Fatalf("create: %s", r)
	}
	ref := f.Ref(framework.KindXGBoost, "iris-kubeflow")
	job := f.WaitForJob(ref, "Succeeded", 3*time.Minute, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobSucceeded, nil
	})
	specs := job.CommonSpec().ReplicaSpecs
	if len(specs) != 2 || specs[0].Type != v1beta1.ReplicaTypeMaster || specs[1].Type != v1beta1.ReplicaTypeWorker ||
		specs[0].RestartPolicy != v1beta1.RestartPolicyNever {
		t.Errorf("created job: %+v", specs)
	}
	for _, p := range f.Pods(ref) {
		if port, _ := framework.EnvOf(&p.Spec.Containers[0], "DMLC_TRACKER_PORT"); port != "9991" {
			t.Errorf("pod %s: DMLC_TRACKER_PORT %q, want the manifest's 9991", p.Name, port)
		}
	}
}

// TestPluginCreatesKubeflowMPIJob: kubectl training create takes a
// Kubeflow MPIJob manifest as it is; the job gets its SSH key pair and runs
// to Succeeded with its launcher first, its slots per worker kept.
func TestPluginCreatesKubeflowMPIJob(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "plugin-mpi")
	template := func(replicas int) string {
		return fmt.Sprintf(`
      replicas: %d
      template:
        metadata:
          annotations:
            %s: "0"
            %s: "2s"
        spec:
          containers:
          - name: mpi
            image: %s`, replicas, framework.AnnotationExitCode, framework.AnnotationRunDuration, framework.Image)
	}
	// training-operator's kubeflow.org/v1 MPIJob, and mpi-operator's
	// kubeflow.org/v2beta1 one, whose Intel is our IntelMPI.
	for _, tc := range []struct {
		apiVersion, name, extra string
		implementation          v1beta1.MPIImplementation
	}{
		{"kubeflow.org/v1", "horovod-kubeflow", "", v1beta1.MPIImplementationOpenMPI},
		{"kubeflow.org/v2beta1", "pi-mpi-operator", "\n  mpiImplementation: Intel", v1beta1.MPIImplementationIntelMPI},
	} {
		manifest := `apiVersion: ` + tc.apiVersion + `
kind: MPIJob
metadata:
  name: ` + tc.name + `
spec:
  slotsPerWorker: 2` + tc.extra + `
  runPolicy:
    cleanPodPolicy: None
  mpiReplicaSpecs:
    Worker:` + template(2) + `
    Launcher:` + template(1) + "\n"
		file := f.WriteFile(tc.name+".yaml", manifest)

		if r := f.KubectlTraining("create", "-f", file); r.Err != nil {
			t.Fatalf("create %s: %s", tc.apiVersion, r)
		}
		ref := f.Ref(framework.KindMPI, tc.name)
		job := f.WaitForJob(ref, "Succeeded", 3*time.Minute, func(job v1beta1.TrainingJob) (bool, error) {
			return job.JobStatus().Phase == v1beta1.JobSucceeded, nil
		})
		specs := job.CommonSpec().ReplicaSpecs
		if len(specs) != 2 || specs[0].Type != v1beta1.ReplicaTypeLauncher || specs[1].Type != v1beta1.ReplicaTypeWorker {
			t.Errorf("%s: created job: %+v", tc.apiVersion, specs)
		}
		mpi, ok := job.(*v1beta1.MPIJob)
		if !ok || mpi.Spec.SlotsPerWorker == nil || *mpi.Spec.SlotsPerWorker != 2 {
			t.Errorf("%s: created job %T with slotsPerWorker other than the manifest's 2", tc.apiVersion, job)
		} else if mpi.Spec.MPIImplementation != tc.implementation {
			t.Errorf("%s: created job with mpiImplementation %q, want %q", tc.apiVersion, mpi.Spec.MPIImplementation, tc.implementation)
		}
		if _, err := f.Kube.CoreV1().Secrets(f.Namespace).Get(f.Context(), podbuilder.SSHSecretName(job), metav1.GetOptions{}); err != nil {
			t.Errorf("%s: the job's SSH key pair: %v", tc.apiVersion, err)
		}
	}
}
