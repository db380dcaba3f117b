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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// TestValidateText: a string that is not UTF-8 anywhere in a spec, a map
// key among them, is reported under its JSON path; text, including U+FFFD
// and other characters beyond ASCII, is not.
func TestValidateText(t *testing.T) {
	const bad = "ok\xff\xfe"
	spec := func() *batch.MPIJobSpec {
		s := &batch.MPIJobSpec{TrainingJobSpec: batch.TrainingJobSpec{ReplicaSpecs: []batch.ReplicaSpec{{
			Type: "worker", Replicas: ptr.To[int32](1),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "main", Image: "registry.example/train:1", Command: []string{"python", "trainé.py", "\uFFFD"},
				Env:   []corev1.EnvVar{{Name: "DATA", Value: "/données"}},
				Ports: []corev1.ContainerPort{{Name: "p", ContainerPort: 80}},
				LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("p")}}},
			}}}},
		}}}, SSHAuthMountPath: "/root/.ssh"}
		s.ReplicaSpecs[0].Template.Labels = map[string]string{"app": "train"}
		return s
	}
	if errs := ValidateText(spec(), field.NewPath("spec")); len(errs) != 0 {
		t.Fatalf("text refused: %v", errs)
	}
	cases := map[string]struct {
		spoil func(s *batch.MPIJobSpec)
		field string
	}{
		"a command's argument": {func(s *batch.MPIJobSpec) { s.ReplicaSpecs[0].Template.Spec.Containers[0].Command[1] = bad },
			"spec.replicaSpecs[0].template.spec.containers[0].command[1]"},
		"an env value": {func(s *batch.MPIJobSpec) { s.ReplicaSpecs[0].Template.Spec.Containers[0].Env[0].Value = bad },
			"spec.replicaSpecs[0].template.spec.containers[0].env[0].value"},
		"a kind's own field": {func(s *batch.MPIJobSpec) { s.SSHAuthMountPath = bad }, "spec.sshAuthMountPath"},
		"a label's value": {func(s *batch.MPIJobSpec) { s.ReplicaSpecs[0].Template.Labels["app"] = bad },
			"spec.replicaSpecs[0].template.metadata.labels[app]"},
		"a label's key": {func(s *batch.MPIJobSpec) { s.ReplicaSpecs[0].Template.Labels[bad] = "x" },
			"spec.replicaSpecs[0].template.metadata.labels"},
		"a probe's named port": {func(s *batch.MPIJobSpec) {
			s.ReplicaSpecs[0].Template.Spec.Containers[0].LivenessProbe.HTTPGet.Port = intstr.FromString(bad)
		}, "spec.replicaSpecs[0].template.spec.containers[0].livenessProbe.httpGet.port"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := spec()
			tc.spoil(s)
			errs := ValidateText(s, field.NewPath("spec"))
			if len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Error(), `\xff\xfe`) {
				t.Errorf("errors %v, want one at %s quoting the bytes", errs, tc.field)
			}
		})
	}
}
