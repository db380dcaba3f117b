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
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// genericJob is a generic job of a coordinator on port 1234, listed
// second, and three workers without a port, listed first.
func genericJob(rules ...v1beta1.ReplicaRule) *v1beta1.GenericJob {
	job := &v1beta1.GenericJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
	for _, r := range []struct {
		typ      v1beta1.ReplicaType
		replicas int32
		ports    []corev1.ContainerPort
	}{{"worker", 3, nil}, {"coordinator", 1, []corev1.ContainerPort{{Name: "rpc", ContainerPort: 1234}}}} {
		job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type: r.typ, Replicas: ptr.To(r.replicas),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "main", Image: "trainer:1", Ports: r.ports},
				{Name: "sidecar", Image: "sidecar:1", Ports: []corev1.ContainerPort{{ContainerPort: 9}}},
			}}},
		})
	}
	job.Spec.SuccessRules = rules
	return job
}

func TestGenericEnv(t *testing.T) {
	job := genericJob()
	b := &Builder{Adapter: Generic, Job: job, Topology: NewTopology(Generic, job, "")}
	pod, err := b.Pod(ReplicaID{Type: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Spec.Containers {
		env := containerEnv(t, b, &c)
		want := map[string]string{
			"TENSORSTACK_WORKER_HOSTS":      "worker-0.j.ns.svc,worker-1.j.ns.svc,worker-2.j.ns.svc",
			"TENSORSTACK_COORDINATOR_HOSTS": "coordinator-0.j.ns.svc",
			"TENSORSTACK_COORDINATOR_PORT":  "1234",
			"TENSORSTACK_CLUSTER": `{"coordinator":["coordinator-0.j.ns.svc:1234"],` +
				`"worker":["worker-0.j.ns.svc","worker-1.j.ns.svc","worker-2.j.ns.svc"]}`,
			"TENSORSTACK_WORLD_SIZE":    "4",
			"TENSORSTACK_REPLICA_TYPE":  "coordinator",
			"TENSORSTACK_REPLICA_INDEX": "0",
			"TENSORSTACK_RANK":          "3",
		}
		for name, value := range want {
			if env[name] != value {
				t.Errorf("container %s: %s=%q, want %q", c.Name, name, env[name], value)
			}
		}
		if port, ok := env["TENSORSTACK_WORKER_PORT"]; ok {
			t.Errorf("container %s: TENSORSTACK_WORKER_PORT=%q, want none: the workers' training container declares no port", c.Name, port)
		}
	}
}

// replicaPhasesOf says every listed replica succeeded.
type replicaPhasesOf map[ReplicaID]bool

func (p replicaPhasesOf) Succeeded(r ReplicaID) bool { return p[r] }
func (p replicaPhasesOf) AllSucceeded() bool {
	return len(p) == 4
}

func TestGenericSuccessRules(t *testing.T) {
	w := func(i int32) ReplicaID { return ReplicaID{Type: "worker", Index: i} }
	coordinator := ReplicaID{Type: "coordinator"}
	allWorkers := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker"}}}
	worker1AndCoordinator := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{
		{Type: "worker", Indexes: []int32{1}}, {Type: "coordinator"}}}
	for _, tc := range []struct {
		name      string
		rules     []v1beta1.ReplicaRule
		succeeded replicaPhasesOf
		want      bool
		decider   ReplicaID
	}{
		{"no rules: not before every replica", nil, replicaPhasesOf{w(0): true, w(1): true, w(2): true}, false, w(0)},
		{"no rules: every replica", nil, replicaPhasesOf{w(0): true, w(1): true, w(2): true, coordinator: true}, true, w(0)},
		{"every worker", []v1beta1.ReplicaRule{allWorkers}, replicaPhasesOf{w(0): true, w(1): true, w(2): true}, true, w(0)},
		{"not every worker", []v1beta1.ReplicaRule{allWorkers}, replicaPhasesOf{w(0): true, w(2): true, coordinator: true}, false, w(0)},
		{"one rule of two", []v1beta1.ReplicaRule{allWorkers, worker1AndCoordinator},
			replicaPhasesOf{w(1): true, coordinator: true}, true, w(0)},
		{"indexes", []v1beta1.ReplicaRule{worker1AndCoordinator}, replicaPhasesOf{w(1): true}, false, w(1)},
	} {
		job := genericJob(tc.rules...)
		topology := NewTopology(Generic, job, "")
		if got := Generic.Succeeded(topology, tc.succeeded); got != tc.want {
			t.Errorf("%s: succeeded %v, want %v", tc.name, got, tc.want)
		}
		if got, ok := Generic.Decider(topology); !ok || got != tc.decider {
			t.Errorf("%s: decider %v, want %v", tc.name, got, tc.decider)
		}
	}
}

func TestGenericFailureRules(t *testing.T) {
	w := func(i int32) ReplicaID { return ReplicaID{Type: "worker", Index: i} }
	coordinator := ReplicaID{Type: "coordinator"}
	allWorkers := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker"}}}
	theCoordinator := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "coordinator"}}}
	worker2 := v1beta1.ReplicaRule{Replicas: []v1beta1.ReplicaSelector{{Type: "worker", Indexes: []int32{2}}}}
	for _, tc := range []struct {
		name   string
		rules  []v1beta1.ReplicaRule
		failed replicaPhasesOf
		want   bool
	}{
		{"no rules: nothing failed", nil, replicaPhasesOf{}, false},
		{"no rules: any replica", nil, replicaPhasesOf{w(1): true}, true},
		{"a replica no rule names", []v1beta1.ReplicaRule{theCoordinator}, replicaPhasesOf{w(0): true, w(1): true}, false},
		{"the coordinator", []v1beta1.ReplicaRule{theCoordinator}, replicaPhasesOf{coordinator: true}, true},
		{"not every worker", []v1beta1.ReplicaRule{allWorkers}, replicaPhasesOf{w(0): true, w(2): true}, false},
		{"every worker", []v1beta1.ReplicaRule{allWorkers}, replicaPhasesOf{w(0): true, w(1): true, w(2): true}, true},
		{"one rule of two", []v1beta1.ReplicaRule{allWorkers, worker2}, replicaPhasesOf{w(2): true}, true},
	} {
		job := genericJob()
		job.Spec.FailureRules = tc.rules
		failed := func(r ReplicaID) bool { return tc.failed[r] }
		if got := Generic.(FailureJudge).FailsJob(NewTopology(Generic, job, ""), failed); got != tc.want {
			t.Errorf("%s: fails the job %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestGenericServiceWithoutPorts: a generic job that declares no port gets
// a headless Service without ports; one that declares some gets them.
func TestGenericServiceWithoutPorts(t *testing.T) {
	job := genericJob()
	job.Spec.ReplicaSpecs[1].Template.Spec.Containers[0].Ports = nil
	b := &Builder{Adapter: Generic, Job: job, Topology: NewTopology(Generic, job, "")}
	if svc := b.Service(); len(svc.Spec.Ports) != 0 || svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("service %+v, want a headless one without ports", svc.Spec)
	}
	job = genericJob()
	b = &Builder{Adapter: Generic, Job: job, Topology: NewTopology(Generic, job, "")}
	if svc := b.Service(); len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 1234 {
		t.Errorf("service ports %+v, want the coordinator's 1234", svc.Spec.Ports)
	}
}
