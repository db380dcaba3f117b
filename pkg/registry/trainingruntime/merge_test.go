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

package trainingruntime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// torchRuntimeSpec is a platform team's PyTorch runtime: a master and two
// workers running a launcher, with an env var, a volume and its mount, a
// toleration and run policy defaults.
func torchRuntimeSpec() *batch.PyTorchTrainingJobSpec {
	pod := func() corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "pytorch", Image: "train:1",
				Command: []string{"launch"}, Args: []string{"python3", "-u", "$(TRAINING_SCRIPT)"},
				Env:          []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "WARN"}, {Name: "DATA", Value: "/data"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceMemory: resource.MustParse("4Gi"), "nvidia.com/gpu": resource.MustParse("1")}},
			}},
			Volumes:     []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
		}}
	}
	return &batch.PyTorchTrainingJobSpec{
		TrainingJobSpec: batch.TrainingJobSpec{
			ReplicaSpecs: []batch.ReplicaSpec{
				{Type: batch.ReplicaTypeMaster, Replicas: ptr.To[int32](1), Template: pod(), RestartPolicy: batch.RestartPolicyOnFailure},
				{Type: batch.ReplicaTypeWorker, Replicas: ptr.To[int32](2), Template: pod(), RestartPolicy: batch.RestartPolicyOnFailure},
			},
			RunPolicy: batch.RunPolicy{BackoffLimit: ptr.To[int32](5), CleanUpPolicy: batch.CleanUpPolicyAll},
		},
		TorchrunConfig: &batch.TorchrunConfig{Enabled: true, ProcPerNode: "1"},
	}
}

// TestMergeSpec: the job's own fields win, field by field and container by
// container; what it leaves out is the runtime's.
func TestMergeSpec(t *testing.T) {
	base := torchRuntimeSpec()
	job := &batch.PyTorchTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{
		ReplicaSpecs: []batch.ReplicaSpec{
			// The workers: one more env var, one replaced, a sidecar, new
			// tolerations, and a replica count.
			{Type: batch.ReplicaTypeWorker, Replicas: ptr.To[int32](4), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{
					{Name: "pytorch", Env: []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "SEED", Value: "1"}}},
					{Name: "sidecar", Image: "side:1"},
				},
				Tolerations: []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}},
			}}},
			// A type the runtime does not have.
			{Type: "evaluator", Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "pytorch", Image: "eval:1"}}}}},
		},
		RunPolicy: batch.RunPolicy{BackoffLimit: ptr.To[int32](0)},
	}}
	out := job
	if err := mergeSpec(base, job, out); err != nil {
		t.Fatal(err)
	}

	want := torchRuntimeSpec()
	worker := &want.ReplicaSpecs[1]
	worker.Replicas = ptr.To[int32](4)
	c := &worker.Template.Spec.Containers[0]
	// The runtime's variables keep their order, the new one follows.
	c.Env = []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "INFO"}, {Name: "DATA", Value: "/data"}, {Name: "SEED", Value: "1"}}
	worker.Template.Spec.Containers = append(worker.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "side:1"})
	worker.Template.Spec.Tolerations = []corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists}}
	want.ReplicaSpecs = append(want.ReplicaSpecs, batch.ReplicaSpec{Type: "evaluator", Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch", Image: "eval:1"}}}}})
	want.RunPolicy.BackoffLimit = ptr.To[int32](0) // the job's zero is a value, not an absence
	if diff := cmp.Diff(want, out, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("merged spec (-want +got):\n%s", diff)
	}
}

// TestMergeSpecEmptyJob: a job that gives nothing is the runtime's spec.
func TestMergeSpecEmptyJob(t *testing.T) {
	out := &batch.PyTorchTrainingJobSpec{}
	if err := mergeSpec(torchRuntimeSpec(), out, out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(torchRuntimeSpec(), out, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("merged spec (-want +got):\n%s", diff)
	}
}

// TestApplyTrainer: the trainer's image, command, env, node count and
// resources land in the training containers of the right replica types.
func TestApplyTrainer(t *testing.T) {
	spec := torchRuntimeSpec()
	trainer := &batch.Trainer{
		Image:            "mine:2",
		Command:          []string{"python3", "train.py"},
		Args:             []string{"--lr", "0.1"},
		Env:              []corev1.EnvVar{{Name: "DATA", Value: "/mine"}, {Name: "EPOCHS", Value: "3"}},
		NumNodes:         ptr.To[int32](5),
		ResourcesPerNode: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	}
	if errs := applyTrainer(&spec.TrainingJobSpec, trainer, batch.PyTorchKind); len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := []int32{*spec.ReplicaSpecs[0].Replicas, *spec.ReplicaSpecs[1].Replicas}; got[0] != 1 || got[1] != 4 {
		t.Errorf("replicas master %d worker %d, want 1 and 4: the master keeps its one, the workers take the rest", got[0], got[1])
	}
	for _, r := range spec.ReplicaSpecs {
		c := r.Template.Spec.Containers[0]
		if c.Image != "mine:2" || cmp.Diff([]string{"launch"}, c.Command) != "" ||
			cmp.Diff([]string{"python3", "train.py", "--lr", "0.1"}, c.Args) != "" {
			t.Errorf("%s: image %q command %q args %q", r.Type, c.Image, c.Command, c.Args)
		}
		wantEnv := []corev1.EnvVar{{Name: "NCCL_DEBUG", Value: "WARN"}, {Name: "DATA", Value: "/mine"}, {Name: "EPOCHS", Value: "3"}}
		if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
			t.Errorf("%s env (-want +got):\n%s", r.Type, diff)
		}
		if cpu, gpu := c.Resources.Limits[corev1.ResourceCPU], c.Resources.Limits["nvidia.com/gpu"]; cpu.String() != "2" || gpu.String() != "1" {
			t.Errorf("%s limits %v: the trainer's cpu over the runtime's, the runtime's gpu kept", r.Type, c.Resources.Limits)
		}
	}
}

// TestApplyTrainerArgsOnly: args without a command follow the runtime's.
func TestApplyTrainerArgsOnly(t *testing.T) {
	spec := torchRuntimeSpec()
	if errs := applyTrainer(&spec.TrainingJobSpec, &batch.Trainer{Args: []string{"--epochs", "2"}}, batch.PyTorchKind); len(errs) > 0 {
		t.Fatal(errs)
	}
	want := []string{"python3", "-u", "$(TRAINING_SCRIPT)", "--epochs", "2"}
	if got := spec.ReplicaSpecs[1].Template.Spec.Containers[0].Args; cmp.Diff(want, got) != "" {
		t.Errorf("args %q, want %q", got, want)
	}
}

// TestApplyTrainerMPI: in an MPI job the command runs on the launcher
// alone, and the nodes are the workers.
func TestApplyTrainerMPI(t *testing.T) {
	container := func(cmd ...string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "mpi", Image: "mpi:1", Args: cmd}}}}
	}
	spec := &batch.TrainingJobSpec{ReplicaSpecs: []batch.ReplicaSpec{
		{Type: batch.ReplicaTypeLauncher, Replicas: ptr.To[int32](1), Template: container("python3", "x.py")},
		{Type: batch.ReplicaTypeWorker, Replicas: ptr.To[int32](1), Template: container("sshd")},
	}}
	trainer := &batch.Trainer{Command: []string{"python3", "mine.py"}, NumNodes: ptr.To[int32](3),
		ResourcesPerNode: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}
	if errs := applyTrainer(spec, trainer, batch.MPIKind); len(errs) > 0 {
		t.Fatal(errs)
	}
	launcher, worker := spec.ReplicaSpecs[0], spec.ReplicaSpecs[1]
	if *launcher.Replicas != 1 || *worker.Replicas != 3 {
		t.Errorf("launcher %d workers %d, want 1 and 3", *launcher.Replicas, *worker.Replicas)
	}
	if got := launcher.Template.Spec.Containers[0].Args; cmp.Diff([]string{"python3", "mine.py"}, got) != "" {
		t.Errorf("launcher args %q", got)
	}
	if got := worker.Template.Spec.Containers[0].Args; cmp.Diff([]string{"sshd"}, got) != "" {
		t.Errorf("worker args %q: the workers keep theirs", got)
	}
	if launcher.Template.Spec.Containers[0].Resources.Requests != nil {
		t.Errorf("the launcher got the nodes' resources: %v", launcher.Template.Spec.Containers[0].Resources)
	}
}

// TestApplyTrainerTooFewNodes: numNodes that leaves the last node type no
// replica is refused, naming the field.
func TestApplyTrainerTooFewNodes(t *testing.T) {
	spec := &batch.TrainingJobSpec{ReplicaSpecs: []batch.ReplicaSpec{
		{Type: batch.ReplicaTypeChief, Replicas: ptr.To[int32](2)},
		{Type: batch.ReplicaTypePS, Replicas: ptr.To[int32](3)},
		{Type: batch.ReplicaTypeWorker, Replicas: ptr.To[int32](1)},
	}}
	errs := applyTrainer(spec, &batch.Trainer{NumNodes: ptr.To[int32](2)}, batch.TensorFlowKind)
	if len(errs) != 1 || errs[0].Field != "spec.trainer.numNodes" {
		t.Fatalf("errors %v, want one naming spec.trainer.numNodes", errs)
	}
	// The ps replicas are not nodes: 3 nodes are the chief's 2 and 1 worker.
	if errs := applyTrainer(spec, &batch.Trainer{NumNodes: ptr.To[int32](3)}, batch.TensorFlowKind); len(errs) > 0 ||
		*spec.ReplicaSpecs[1].Replicas != 3 || *spec.ReplicaSpecs[2].Replicas != 1 {
		t.Errorf("errors %v, ps %d workers %d", errs, *spec.ReplicaSpecs[1].Replicas, *spec.ReplicaSpecs[2].Replicas)
	}
}
