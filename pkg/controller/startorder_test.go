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

package controller

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// ready is a running pod that passes its readiness checks.
func ready(p *corev1.Pod) {
	running(p)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
}

// gate returns the startup gate annotation of a pod and whether it waits
// behind the gate's init container.
func gate(t *testing.T, p *corev1.Pod) (string, bool) {
	t.Helper()
	state, annotated := p.Annotations[podbuilder.AnnotationStartupGate]
	gated := len(p.Spec.InitContainers) > 0 && p.Spec.InitContainers[0].Name == podbuilder.StartupGateContainerName
	if annotated != gated {
		t.Errorf("pod %s: annotation %q and gate init container %v must come together", p.Name, state, gated)
	}
	return state, gated
}

// openedPods are the pods whose gate the controller opened since the last
// observe.
func (f *fixture) openedPods() []string {
	var names []string
	for _, a := range f.kubeClient.Actions() {
		if p, ok := a.(clienttesting.PatchAction); ok && a.GetResource() == (schema.GroupVersionResource{Version: "v1", Resource: "pods"}) &&
			string(p.GetPatch()) == `{"metadata":{"annotations":{"`+podbuilder.AnnotationStartupGate+`":"Open"}}}` {
			names = append(names, p.GetName())
		}
	}
	slices.Sort(names)
	return names
}

// Under InOrder, the workers wait behind a closed gate until the master is
// Ready; then every waiting worker is released at once, and a replacement
// created afterwards starts released.
func TestInOrderWorkersWaitForTheMaster(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).
		withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj()
	job.CommonSpec().RunPolicy.StartupPolicy = v1beta1.StartupPolicyInOrder
	cpu := resource.MustParse("2")
	for i := range job.CommonSpec().ReplicaSpecs {
		c := &job.CommonSpec().ReplicaSpecs[i].Template.Spec.Containers[0]
		c.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, "nvidia.com/gpu": resource.MustParse("1")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: cpu, "nvidia.com/gpu": resource.MustParse("1")},
		}
	}
	f := newFixture(t, job)
	f.step(job)
	if state, gated := gate(t, f.pod("j-master-0")); gated {
		t.Errorf("the master waits (%s); it is the one the others wait for", state)
	}
	for _, name := range []string{"j-worker-0", "j-worker-1"} {
		p := f.pod(name)
		if state, gated := gate(t, p); !gated || state != podbuilder.StartupGateClosed {
			t.Fatalf("%s: gate %q (init container %v), want a closed gate", name, state, gated)
		}
		g := p.Spec.InitContainers[0]
		if g.Image != "trainer:1" {
			t.Errorf("%s: the gate runs %q, want the training container's image", name, g.Image)
		}
		want := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: cpu}, Limits: corev1.ResourceList{corev1.ResourceCPU: cpu}}
		if diff := cmp.Diff(want, g.Resources); diff != "" {
			t.Errorf("%s: the gate's resources (-want +got): keep CPU and memory, leave GPUs to the training container\n%s", name, diff)
		}
		if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.DownwardAPI != nil && v.Name == podbuilder.StartupGateVolumeName }) {
			t.Errorf("%s: no downward API volume for the gate", name)
		}
	}

	// The master runs but is not Ready yet: nothing is released.
	f.setPod("j-master-0", running)
	f.mustSync(job)
	if opened := f.openedPods(); len(opened) > 0 {
		t.Errorf("opened %v before the master was Ready", opened)
	}
	f.observe()

	f.setPod("j-master-0", ready)
	f.mustSync(job)
	if diff := cmp.Diff([]string{"j-worker-0", "j-worker-1"}, f.openedPods()); diff != "" {
		t.Errorf("opened gates (-want +got):\n%s", diff)
	}
	f.observe()
	if !hasEvent(f.events(), corev1.EventTypeNormal, ReasonLeadersReady) {
		t.Errorf("no %s event", ReasonLeadersReady)
	}
	// The fake's patch keeps the resourceVersion; a no-op change brings the
	// patched pods into the cache, as their update events would.
	for _, name := range []string{"j-worker-0", "j-worker-1"} {
		f.setPod(name, func(*corev1.Pod) {})
	}
	// Opened once: the next reconcile patches nothing.
	f.mustSync(job)
	if opened := f.openedPods(); len(opened) > 0 {
		t.Errorf("opened %v again", opened)
	}
	f.observe()

	// A worker replaced after the master is Ready starts released.
	f.setPod("j-worker-1", exitAt(f, 1, f.clock.Now()))
	f.clock.Step(f.step(job))
	f.step(job)
	f.step(job)
	if p := f.pod("j-worker-1"); p == nil {
		t.Fatalf("worker-1 was not replaced")
	} else if state, _ := gate(t, p); state != podbuilder.StartupGateOpen {
		t.Errorf("the replacement's gate is %q, want %q", state, podbuilder.StartupGateOpen)
	}
}

// A TensorFlow job's workers wait for the chief and every parameter server.
func TestInOrderTensorFlowLeaders(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("ps", 2).withReplicas("worker", 1).withReplicas("evaluator", 1).obj()
	job.CommonSpec().RunPolicy.StartupPolicy = v1beta1.StartupPolicyInOrder
	f := newFixture(t, job)
	f.step(job)
	for name, wantGated := range map[string]bool{"j-chief-0": false, "j-ps-0": false, "j-ps-1": false, "j-worker-0": true, "j-evaluator-0": true} {
		if _, gated := gate(t, f.pod(name)); gated != wantGated {
			t.Errorf("%s waits: %v, want %v", name, gated, wantGated)
		}
	}
	f.setPod("j-chief-0", ready)
	f.setPod("j-ps-0", ready)
	f.mustSync(job)
	if opened := f.openedPods(); len(opened) > 0 {
		t.Errorf("opened %v while ps-1 was not Ready", opened)
	}
	f.observe()
	f.setPod("j-ps-1", ready)
	f.mustSync(job)
	if diff := cmp.Diff([]string{"j-evaluator-0", "j-worker-0"}, f.openedPods()); diff != "" {
		t.Errorf("opened gates (-want +got):\n%s", diff)
	}
}

// Without InOrder, and for debug pods, nothing waits.
func TestNothingWaitsByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		job  func() v1beta1.TrainingJob
	}{
		{"AnyOrder", func() v1beta1.TrainingJob {
			job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).obj()
			job.CommonSpec().RunPolicy.StartupPolicy = v1beta1.StartupPolicyAnyOrder
			return job
		}},
		{"unset", func() v1beta1.TrainingJob {
			return newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).obj()
		}},
		{"InOrder in debug mode", func() v1beta1.TrainingJob {
			job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).debug().obj()
			job.CommonSpec().RunPolicy.StartupPolicy = v1beta1.StartupPolicyInOrder
			return job
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := tc.job()
			f := newFixture(t, job)
			f.step(job)
			for _, name := range []string{"j-master-0", "j-worker-0", "j-worker-1"} {
				if state, gated := gate(t, f.pod(name)); gated {
					t.Errorf("%s waits behind a gate (%s)", name, state)
				}
			}
		})
	}
}
