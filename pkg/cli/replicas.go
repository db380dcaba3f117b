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

package cli

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// replicaRef names one replica of a job: TYPE-INDEX, as in worker-1.
type replicaRef struct {
	Type  v1beta1.ReplicaType
	Index int
}

func (r replicaRef) String() string { return fmt.Sprintf("%s-%d", r.Type, r.Index) }

// PodName is the replica's pod: <job>-<type>-<index>.
func (r replicaRef) PodName(job string) string { return v1beta1.PodName(job, r.Type, int32(r.Index)) }

// parseReplica reads TYPE-INDEX. The index follows the last dash because
// PyTorch replica types may contain dashes themselves.
func parseReplica(s string) (replicaRef, error) {
	cut := strings.LastIndexByte(s, '-')
	if cut <= 0 {
		return replicaRef{}, fmt.Errorf("replica %q is not TYPE-INDEX, e.g. worker-0", s)
	}
	index, err := strconv.Atoi(s[cut+1:])
	if err != nil || index < 0 || strconv.Itoa(index) != s[cut+1:] {
		return replicaRef{}, fmt.Errorf("replica %q is not TYPE-INDEX: %q is not an index (0, 1, ...)", s, s[cut+1:])
	}
	return replicaRef{Type: v1beta1.ReplicaType(s[:cut]), Index: index}, nil
}

// replicaSpec returns the spec of a replica type, or nil.
func replicaSpec(spec *v1beta1.TrainingJobSpec, t v1beta1.ReplicaType) *v1beta1.ReplicaSpec {
	for i := range spec.ReplicaSpecs {
		if spec.ReplicaSpecs[i].Type == t {
			return &spec.ReplicaSpecs[i]
		}
	}
	return nil
}

// replicaCount is how many replicas of a type the job runs; 0 when it has no
// such type.
func replicaCount(spec *v1beta1.TrainingJobSpec, t v1beta1.ReplicaType) int {
	if r := replicaSpec(spec, t); r != nil {
		return int(v1beta1.ReplicasOf(r))
	}
	return 0
}

// checkReplica says whether the job has the replica, and if not, which
// replicas it has.
func checkReplica(spec *v1beta1.TrainingJobSpec, r replicaRef) error {
	if r.Index < replicaCount(spec, r.Type) {
		return nil
	}
	return fmt.Errorf("the job has no replica %s; its replicas are %s", r, validReplicas(spec))
}

// validReplicas lists a job's replicas compactly: chief-0, worker-0..worker-3.
func validReplicas(spec *v1beta1.TrainingJobSpec) string {
	var ranges []string
	for _, r := range spec.ReplicaSpecs {
		switch n := replicaCount(spec, r.Type); n {
		case 0:
		case 1:
			ranges = append(ranges, replicaRef{Type: r.Type}.String())
		default:
			ranges = append(ranges, fmt.Sprintf("%s..%s", replicaRef{Type: r.Type}, replicaRef{Type: r.Type, Index: n - 1}))
		}
	}
	if len(ranges) == 0 {
		return "none"
	}
	return strings.Join(ranges, ", ")
}

// replicaTypes lists a job's replica types, in spec order.
func replicaTypes(spec *v1beta1.TrainingJobSpec) []string {
	types := make([]string, len(spec.ReplicaSpecs))
	for i, r := range spec.ReplicaSpecs {
		types[i] = string(r.Type)
	}
	return types
}

// trainingContainer picks the container whose logs matter: the one named
// after the kind's framework, else the first.
func trainingContainer(kind *jobKind, containers []corev1.Container) string {
	if i := v1beta1.TrainingContainer(containers, kind.TrainingContainer); i >= 0 {
		return containers[i].Name
	}
	return ""
}
