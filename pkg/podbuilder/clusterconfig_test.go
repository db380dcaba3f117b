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

package podbuilder

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// containerEnv is a container's environment as the kubelet gives it: each
// variable from a ConfigMap read from the job's cluster ConfigMap, and
// $(NAME) references to variables defined before expanded.
func containerEnv(t *testing.T, b *Builder, c *corev1.Container) map[string]string {
	t.Helper()
	cm, err := b.ClusterConfigMap()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, v := range c.Env {
		switch {
		case v.ValueFrom != nil && v.ValueFrom.ConfigMapKeyRef != nil:
			ref := v.ValueFrom.ConfigMapKeyRef
			if cm == nil || ref.Name != cm.Name {
				t.Fatalf("container %s: %s refers to config map %q, which the job does not publish", c.Name, v.Name, ref.Name)
			}
			value, ok := cm.Data[ref.Key]
			if !ok {
				t.Fatalf("container %s: %s refers to key %q, which config map %s lacks", c.Name, v.Name, ref.Key, cm.Name)
			}
			env[v.Name] = value
		case v.ValueFrom != nil:
			// Downward API fields: the kubelet's, not the job's.
		default:
			env[v.Name] = expand(v.Value, env)
		}
	}
	return env
}

// reference is $(NAME) in a variable's value.
var reference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand replaces the references to variables defined before, as the
// kubelet does, and leaves the others as they are. ($$, the kubelet's
// escape, appears in no value the builder writes.)
func expand(value string, defined map[string]string) string {
	return reference.ReplaceAllStringFunc(value, func(ref string) string {
		if v, ok := defined[ref[2:len(ref)-1]]; ok {
			return v
		}
		return ref
	})
}

// TestExpansionLeavesOtherTextAlone checks the test's own stand-in for the
// kubelet: only a variable defined earlier is replaced.
func TestExpansionLeavesOtherTextAlone(t *testing.T) {
	if got := expand(`{"a":$(A),"b":$(B)}`, map[string]string{"A": "1"}); got != `{"a":1,"b":$(B)}` {
		t.Fatalf("expanded %q", got)
	}
	if !strings.Contains(ClusterConfigMapName(tfJob("j", "worker", 1)), "uid-j") {
		t.Fatal("the config map's name does not hold the job's UID")
	}
}

// sized is a job of every kind with the given name and namespace, whose
// worker type has the replicas a job of total replicas leaves it, the
// other types one each.
func sized(t *testing.T, name, namespace string, total int32) []*Builder {
	t.Helper()
	var builders []*Builder
	for _, job := range []v1beta1.TrainingJob{
		withCheckpoints(tfJob("j", "chief", 1, "worker", 1, "ps", 1)),
		withCheckpoints(ptJob(&v1beta1.TorchrunConfig{Enabled: true}, nil)),
		withCheckpoints(xgbJob()),
		withCheckpoints(genericJob()),
		withCheckpoints(mpiJob(v1beta1.MPIImplementationOpenMPI)),
	} {
		job.SetName(name)
		job.SetNamespace(namespace)
		specs := job.CommonSpec().ReplicaSpecs
		others := int32(0)
		for i := range specs {
			if specs[i].Type != v1beta1.ReplicaTypeWorker {
				specs[i].Replicas = ptr.To(int32(1))
				others++
			}
		}
		for i := range specs {
			if specs[i].Type == v1beta1.ReplicaTypeWorker {
				specs[i].Replicas = ptr.To(total - others)
			}
		}
		a, err := AdapterFor(job)
		if err != nil {
			t.Fatal(err)
		}
		b := &Builder{Adapter: a, Job: job, Topology: NewTopology(a, job, "cluster.local")}
		if b.Topology.Total != total {
			t.Fatalf("%s: %d replicas, want %d", a.Kind(), b.Topology.Total, total)
		}
		builders = append(builders, b)
	}
	return builders
}

// TestPodsDoNotGrowWithTheJob: a job of every kind at the replica cap, with
// a 40-character name in a 50-character namespace, makes pods of at most
// 32 KiB, no value or argument in them over 16 KiB, the size of a
// 3-replica job's pods but for the digits of the counts; each container's
// variables, as the kubelet fills them in, stay within what Linux starts a
// program with.
func TestPodsDoNotGrowWithTheJob(t *testing.T) {
	const maxPodBytes, maxValueBytes = 32 * 1024, 16 * 1024
	name, namespace := strings.Repeat("j", 40), strings.Repeat("n", 50)
	small := sized(t, name, namespace, 3)
	for k, b := range sized(t, name, namespace, batch.MaxTotalReplicas) {
		kind := b.Adapter.Kind()
		largest := 0
		for _, g := range b.Topology.Groups {
			for i := range g.Replicas {
				id := ReplicaID{Type: g.Type, Index: i}
				pod, err := b.Pod(id)
				if err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				raw, err := json.Marshal(pod)
				if err != nil {
					t.Fatal(err)
				}
				largest = max(largest, len(raw))
				if len(raw) > maxPodBytes {
					t.Fatalf("%s: pod of %s is %d bytes, over %d", kind, id.Hostname(), len(raw), maxPodBytes)
				}
				for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
					for _, s := range slices.Concat(c.Command, c.Args) {
						if len(s) > maxValueBytes {
							t.Fatalf("%s: %s's container %s has an argument of %d bytes", kind, id.Hostname(), c.Name, len(s))
						}
					}
					for _, v := range c.Env {
						if len(v.Value) > maxValueBytes {
							t.Fatalf("%s: %s's container %s has %s of %d bytes", kind, id.Hostname(), c.Name, v.Name, len(v.Value))
						}
					}
					if i > 0 {
						// Replicas of a type differ only in their index.
						continue
					}
					for n, v := range containerEnv(t, b, &c) {
						if len(n)+len(v)+2 > MaxEnvStringBytes {
							t.Fatalf("%s: %s's container %s starts with %s of %d bytes", kind, id.Hostname(), c.Name, n, len(v))
						}
					}
				}
			}
		}
		largestSmall := 0
		for _, g := range small[k].Topology.Groups {
			for i := range g.Replicas {
				pod, err := small[k].Pod(ReplicaID{Type: g.Type, Index: i})
				if err != nil {
					t.Fatal(err)
				}
				raw, err := json.Marshal(pod)
				if err != nil {
					t.Fatal(err)
				}
				largestSmall = max(largestSmall, len(raw))
			}
		}
		// The counts, ranks and index are written in a dozen places
		// (name, hostname, labels, variables): a few digits more each.
		if largest > largestSmall+64 {
			t.Errorf("%s: the largest pod of %d replicas is %d bytes, of 3 replicas %d: pods grow with the job",
				kind, batch.MaxTotalReplicas, largest, largestSmall)
		}
		cm, err := b.ClusterConfigMap()
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		published := 0
		if cm != nil {
			for _, v := range cm.Data {
				published += len(v)
			}
		}
		t.Logf("%s: largest pod %d bytes, of 3 replicas %d; %d bytes published", kind, largest, largestSmall, published)
	}
}

// TestAddressesTooLongForAVariable: at 1,000 replicas with 63-character
// names, a GenericJob's address list would pass what Linux starts a program
// with; the job is beyond the limits, and says which variable and how
// large, rather than making pods whose containers cannot start.
func TestAddressesTooLongForAVariable(t *testing.T) {
	long := strings.Repeat("x", 63)
	for _, b := range sized(t, long, long, batch.MaxTotalReplicas) {
		err := b.Topology.LimitError()
		var size *ClusterSizeError
		switch b.Adapter.Kind() {
		case PyTorchKind, MPIKind:
			// Nothing that grows is a variable: a PyTorch replica knows
			// the master; an MPI hostfile is a file.
			if err != nil {
				t.Errorf("%s: %v, want within the limits", b.Adapter.Kind(), err)
			}
		default:
			if !errors.As(err, &size) || size.Bytes <= size.Limit {
				t.Errorf("%s: %v, want a variable too large", b.Adapter.Kind(), err)
				continue
			}
			if _, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker}); !errors.As(err, &size) {
				t.Errorf("%s: a pod built anyway (%v)", b.Adapter.Kind(), err)
			}
		}
	}
}
