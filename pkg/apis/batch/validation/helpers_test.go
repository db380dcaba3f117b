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

package validation

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// wantErr is an expected validation error: its type and its field path.
type wantErr struct {
	Type  field.ErrorType
	Field string
}

func (w wantErr) String() string { return fmt.Sprintf("%s %s", w.Type, w.Field) }

func required(f string) wantErr     { return wantErr{field.ErrorTypeRequired, f} }
func invalid(f string) wantErr      { return wantErr{field.ErrorTypeInvalid, f} }
func notSupported(f string) wantErr { return wantErr{field.ErrorTypeNotSupported, f} }
func duplicate(f string) wantErr    { return wantErr{field.ErrorTypeDuplicate, f} }
func forbidden(f string) wantErr    { return wantErr{field.ErrorTypeForbidden, f} }
func notFound(f string) wantErr     { return wantErr{field.ErrorTypeNotFound, f} }
func tooLong(f string) wantErr      { return wantErr{field.ErrorTypeTooLong, f} }
func tooMany(f string) wantErr      { return wantErr{field.ErrorTypeTooMany, f} }

// expectErrors fails the test unless got holds exactly the wanted errors, by
// type and field path, in any order.
func expectErrors(t *testing.T, got field.ErrorList, want ...wantErr) {
	t.Helper()
	gotKeys := make([]string, len(got))
	for i, e := range got {
		gotKeys[i] = wantErr{e.Type, e.Field}.String()
	}
	wantKeys := make([]string, len(want))
	for i, w := range want {
		wantKeys[i] = w.String()
	}
	slices.Sort(gotKeys)
	slices.Sort(wantKeys)
	if !slices.Equal(gotKeys, wantKeys) {
		t.Errorf("errors differ\n got:  %s\n want: %s\n full: %v", strings.Join(gotKeys, "; "), strings.Join(wantKeys, "; "), got.ToAggregate())
	}
}

// Builders of valid test objects, to be changed by each test case.

func container(name string) corev1.Container {
	return corev1.Container{
		Name:    name,
		Image:   "docker.io/library/train:1",
		Command: []string{"python", "train.py"},
	}
}

func replica(t batch.ReplicaType, n int32, containerName string) batch.ReplicaSpec {
	return batch.ReplicaSpec{
		Type:     t,
		Replicas: ptr.To(n),
		Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{container(containerName)}},
		},
		RestartPolicy: batch.RestartPolicyNever,
	}
}

func defaultedRunPolicy() batch.RunPolicy {
	return batch.RunPolicy{BackoffLimit: ptr.To[int32](3), CleanUpPolicy: batch.CleanUpPolicyUnfinished}
}

// tfJob is a valid TensorFlow job with a chief, a parameter server and two
// workers, changed by mods.
func tfJob(mods ...func(*batch.TensorFlowTrainingJob)) *batch.TensorFlowTrainingJob {
	job := &batch.TensorFlowTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "default", ResourceVersion: "1"},
		Spec: batch.TensorFlowTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{
			ReplicaSpecs: []batch.ReplicaSpec{
				replica(batch.ReplicaTypeChief, 1, "tensorflow"),
				replica(batch.ReplicaTypePS, 1, "tensorflow"),
				replica(batch.ReplicaTypeWorker, 2, "tensorflow"),
			},
			RunPolicy: defaultedRunPolicy(),
		}},
	}
	for _, mod := range mods {
		mod(job)
	}
	return job
}

// ptJob is a valid PyTorch job with a master and two workers, changed by mods.
func ptJob(mods ...func(*batch.PyTorchTrainingJob)) *batch.PyTorchTrainingJob {
	job := &batch.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "resnet", Namespace: "default", ResourceVersion: "1"},
		Spec: batch.PyTorchTrainingJobSpec{TrainingJobSpec: batch.TrainingJobSpec{
			ReplicaSpecs: []batch.ReplicaSpec{
				replica(batch.ReplicaTypeMaster, 1, "pytorch"),
				replica(batch.ReplicaTypeWorker, 2, "pytorch"),
			},
			RunPolicy: defaultedRunPolicy(),
		}},
	}
	for _, mod := range mods {
		mod(job)
	}
	return job
}

// specMod changes the shared spec; it applies to either kind.
type specMod func(*batch.TrainingJobSpec)

func onTF(mod specMod) func(*batch.TensorFlowTrainingJob) {
	return func(j *batch.TensorFlowTrainingJob) { mod(&j.Spec.TrainingJobSpec) }
}

func onPT(mod specMod) func(*batch.PyTorchTrainingJob) {
	return func(j *batch.PyTorchTrainingJob) { mod(&j.Spec.TrainingJobSpec) }
}

// worker returns the worker spec of a job built by tfJob or ptJob.
func worker(s *batch.TrainingJobSpec) *batch.ReplicaSpec {
	for i := range s.ReplicaSpecs {
		if s.ReplicaSpecs[i].Type == batch.ReplicaTypeWorker {
			return &s.ReplicaSpecs[i]
		}
	}
	panic("the test job has no worker")
}

// workerPod returns the pod spec of the worker template.
func workerPod(s *batch.TrainingJobSpec) *corev1.PodSpec { return &worker(s).Template.Spec }

func quantity(s string) resource.Quantity { return resource.MustParse(s) }
