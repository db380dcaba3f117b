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
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// tfJob is a TensorFlowTrainingJob with the given replica types and counts,
// in that order, each with one training container.
func tfJob(name string, types ...any) *v1beta1.TensorFlowTrainingJob {
	job := &v1beta1.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "uid-" + "j"}}
	for i := 0; i+1 < len(types); i += 2 {
		job.Spec.ReplicaSpecs = append(job.Spec.ReplicaSpecs, v1beta1.ReplicaSpec{
			Type:     v1beta1.ReplicaType(types[i].(string)),
			Replicas: ptr.To(int32(types[i+1].(int))),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: v1beta1.TensorFlowContainerName, Image: "trainer:1", Command: []string{"python", "train.py"},
				}}},
			},
		})
	}
	return job
}

// TestTensorFlowEnvIsTheDocument checks that TF_CONFIG, as a container
// gets it (the cluster, published once, written into it by the kubelet),
// is byte for byte the encoding of tfConfig.
func TestTensorFlowEnvIsTheDocument(t *testing.T) {
	job := tfJob("j", "chief", 1, "worker", 3, "ps", 2, "evaluator", 1)
	ps := &job.Spec.ReplicaSpecs[2].Template.Spec.Containers[0]
	ps.Ports = []corev1.ContainerPort{{Name: "tfjob-port", ContainerPort: 3333}}
	topo := NewTopology(TensorFlow, job, "cluster.local")
	b := &Builder{Adapter: TensorFlow, Job: job, Topology: topo}
	cluster := map[string][]string{}
	for _, g := range topo.Groups {
		for i := range g.Replicas {
			if g.Type != v1beta1.ReplicaTypeEvaluator {
				cluster[string(g.Type)] = append(cluster[string(g.Type)], hostPort(topo.Address(ReplicaID{Type: g.Type, Index: i}), g.Port))
			}
		}
	}
	if got := cluster["ps"][1]; got != "ps-1.j.ns.svc.cluster.local:3333" {
		t.Fatalf("ps-1's address %q: the test's cluster is not what TensorFlow needs", got)
	}
	for _, g := range topo.Groups {
		for i := range g.Replicas {
			id := ReplicaID{Type: g.Type, Index: i}
			want, err := json.Marshal(tfConfig{Cluster: cluster, Task: tfTask{Type: string(g.Type), Index: i}, Environment: "cloud"})
			if err != nil {
				t.Fatal(err)
			}
			pod, err := b.Pod(id)
			if err != nil {
				t.Fatal(err)
			}
			if got := containerEnv(t, b, &pod.Spec.Containers[0])["TF_CONFIG"]; got != string(want) {
				t.Errorf("%s: TF_CONFIG\n got %s\nwant %s", id.Hostname(), got, want)
			}
		}
	}
}

// TestPreviewPodsCarryThePriorityClass: the pods the apiserver has the
// cluster judge carry the class the controller will set, so a job whose
// class is missing is refused when it is written; group membership depends
// on the controller's backend, which the apiserver does not know.
func TestPreviewPodsCarryThePriorityClass(t *testing.T) {
	job := tfJob("j", "chief", 1, "worker", 2)
	job.Spec.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: "gpus", Priority: 90}}
	job.Spec.ReplicaSpecs[1].Template.Spec.PriorityClassName = "from-template"
	previews, err := Preview(job)
	if err != nil {
		t.Fatal(err)
	}
	if len(previews) != 2 {
		t.Fatalf("%d previews, want 2", len(previews))
	}
	for i, p := range previews {
		if p.ReplicaSpec != i {
			t.Errorf("preview %d is of replica spec %d", i, p.ReplicaSpec)
		}
		if p.Pod.Spec.PriorityClassName != PriorityClassP100 {
			t.Errorf("preview of %s: priorityClassName %q, want %s", p.Pod.Name, p.Pod.Spec.PriorityClassName, PriorityClassP100)
		}
		if p.Pod.Spec.SchedulingGroup != nil || p.Pod.Spec.SchedulerName != "" || len(p.Pod.OwnerReferences) != 0 {
			t.Errorf("preview of %s joined a group or has an owner: %+v", p.Pod.Name, p.Pod)
		}
	}
}

// recordingGang notes which pods joined it, and as what.
type recordingGang struct{ joined map[string]bool }

func (g *recordingGang) Join(pod *corev1.Pod, member bool) {
	g.joined[pod.Name] = member
	pod.Spec.SchedulerName = "gang-scheduler"
}

// TestPodJoinsGangAndQueuePlacement: with a gang and a queue's placement,
// every pod joins the gang (a TensorFlow evaluator as a non-member) and
// carries its type's placement; the placement's labels never replace the
// job's own.
func TestPodJoinsGangAndQueuePlacement(t *testing.T) {
	job := tfJob("j", "worker", 2, "evaluator", 1)
	job.Spec.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: "gpus"}}
	gang := &recordingGang{joined: map[string]bool{}}
	b := &Builder{
		Adapter: TensorFlow, Job: job, Topology: NewTopology(TensorFlow, job, ""), Gang: gang,
		Placements: map[v1beta1.ReplicaType]*Placement{"worker": {
			NodeSelector: map[string]string{"flavor": "a100"},
			Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
			Labels:       map[string]string{"kueue": "yes", v1beta1.LabelJobName: "other"},
			Annotations:  map[string]string{"checked": "yes"},
		}},
	}
	for _, id := range []ReplicaID{{Type: "worker", Index: 1}, {Type: "evaluator"}} {
		pod, err := b.Pod(id)
		if err != nil {
			t.Fatal(err)
		}
		member, joined := gang.joined[pod.Name]
		if !joined || member != (id.Type == "worker") || pod.Spec.SchedulerName != "gang-scheduler" {
			t.Errorf("%s: joined %v as member %v, scheduler %q", pod.Name, joined, member, pod.Spec.SchedulerName)
		}
		placed := pod.Spec.NodeSelector["flavor"] == "a100" && len(pod.Spec.Tolerations) == 1 &&
			pod.Labels["kueue"] == "yes" && pod.Annotations["checked"] == "yes"
		if placed != (id.Type == "worker") {
			t.Errorf("%s: placed %v: %+v", pod.Name, placed, pod)
		}
		if pod.Labels[v1beta1.LabelJobName] != "j" {
			t.Errorf("%s: the placement replaced the job-name label: %q", pod.Name, pod.Labels[v1beta1.LabelJobName])
		}
	}
}

// TestPodWithoutGangRequestJoinsNoGang: a gang given for a job that asks
// for none is not joined.
func TestPodWithoutGangRequestJoinsNoGang(t *testing.T) {
	job := tfJob("j", "worker", 1)
	gang := &recordingGang{joined: map[string]bool{}}
	b := &Builder{Adapter: TensorFlow, Job: job, Topology: NewTopology(TensorFlow, job, ""), Gang: gang}
	if _, err := b.Pod(ReplicaID{Type: "worker"}); err != nil {
		t.Fatal(err)
	}
	if len(gang.joined) != 0 {
		t.Errorf("joined %v", gang.joined)
	}
}

// TestStartupGate: under InOrder, only the non-leaders wait, behind a gate
// that is closed until the builder is told the leaders are ready.
func TestStartupGate(t *testing.T) {
	job := tfJob("j", "chief", 1, "worker", 1)
	job.Spec.RunPolicy.StartupPolicy = v1beta1.StartupPolicyInOrder
	for _, open := range []bool{false, true} {
		b := &Builder{Adapter: TensorFlow, Job: job, Topology: NewTopology(TensorFlow, job, ""), GatesOpen: open}
		chief, err := b.Pod(ReplicaID{Type: "chief"})
		if err != nil {
			t.Fatal(err)
		}
		worker, err := b.Pod(ReplicaID{Type: "worker"})
		if err != nil {
			t.Fatal(err)
		}
		if _, gated := chief.Annotations[AnnotationStartupGate]; gated || len(chief.Spec.InitContainers) != 0 {
			t.Errorf("the chief waits: %+v", chief)
		}
		want := StartupGateClosed
		if open {
			want = StartupGateOpen
		}
		names := []string{}
		for _, c := range worker.Spec.InitContainers {
			names = append(names, c.Name)
		}
		if worker.Annotations[AnnotationStartupGate] != want || !slices.Equal(names, []string{StartupGateContainerName}) {
			t.Errorf("gates open %v: worker gate %q, init containers %v", open, worker.Annotations[AnnotationStartupGate], names)
		}
	}
}

func TestPriorityClassName(t *testing.T) {
	for priority, want := range map[int32]string{
		0: "", 1: PriorityClassP25, 25: PriorityClassP25, 26: PriorityClassP50, 50: PriorityClassP50,
		51: PriorityClassP75, 75: PriorityClassP75, 76: PriorityClassP100, 100: PriorityClassP100,
	} {
		if got := PriorityClassName(priority); got != want {
			t.Errorf("PriorityClassName(%d) = %q, want %q", priority, got, want)
		}
	}
}

// TestJobEnv: every container, the training one and a sidecar, can name
// its job, and a template's own value of those names is overwritten.
func TestJobEnv(t *testing.T) {
	job := tfJob("resnet", "worker", 1)
	spec := &job.Spec.ReplicaSpecs[0].Template.Spec
	spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1",
		Env: []corev1.EnvVar{{Name: v1beta1.EnvJobName, Value: "spoofed"}}})
	b := &Builder{Adapter: TensorFlow, Job: job, Topology: NewTopology(TensorFlow, job, "")}
	pod, err := b.Pod(ReplicaID{Type: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		v1beta1.EnvJobName: "resnet", v1beta1.EnvJobNamespace: "ns", v1beta1.EnvJobResource: "tensorflowtrainingjobs",
	}
	for _, c := range pod.Spec.Containers {
		got := map[string]string{}
		for _, e := range c.Env {
			if _, ok := want[e.Name]; ok {
				if _, dup := got[e.Name]; dup {
					t.Errorf("container %s: %s twice", c.Name, e.Name)
				}
				got[e.Name] = e.Value
			}
		}
		for name, value := range want {
			if got[name] != value {
				t.Errorf("container %s: %s=%q, want %q", c.Name, name, got[name], value)
			}
		}
	}
	if PyTorch.Resource() != v1beta1.PyTorchTrainingJobResource {
		t.Errorf("PyTorch.Resource() = %s", PyTorch.Resource())
	}
}
