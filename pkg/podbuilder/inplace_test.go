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
	"k8s.io/apimachinery/pkg/api/resource"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestInPlacePod: a pod of a job that restarts in place waits at its
// barrier first, runs the agent beside the training container with the
// rule that restarts every container, tells the training container its
// attempt and resume point at each start, and keeps its QoS class.
func TestInPlacePod(t *testing.T) {
	job := ptJob(nil, nil)
	job.Spec.RunPolicy.RestartStrategy = v1beta1.RestartStrategyInPlace
	guaranteed := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	for i := range job.Spec.ReplicaSpecs {
		job.Spec.ReplicaSpecs[i].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: guaranteed, Limits: guaranteed}
	}
	b := &Builder{Adapter: PyTorch, Job: withCheckpoints(job), Topology: NewTopology(PyTorch, job, ""), Attempt: 3, AttemptReleased: 2}
	pod, err := b.Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker, Index: 0})
	if err != nil {
		t.Fatal(err)
	}
	if a, r := pod.Annotations[AnnotationAttempt], pod.Annotations[AnnotationAttemptReleased]; a != "3" || r != "2" {
		t.Errorf("attempt %q released %q, want 3 and 2", a, r)
	}
	if pod.Spec.InitContainers[0].Name != AttemptBarrierContainerName {
		t.Errorf("first init container %s, want the barrier", pod.Spec.InitContainers[0].Name)
	}
	if !CanRestartInPlace(pod) {
		t.Fatalf("no RestartAllContainers rule: %+v", pod.Spec.Containers)
	}
	agent := pod.Spec.Containers[len(pod.Spec.Containers)-1]
	if agent.Name != RestartAgentContainerName || agent.RestartPolicy == nil || *agent.RestartPolicy != corev1.ContainerRestartPolicyNever {
		t.Errorf("agent %s restartPolicy %v, want the agent with Never", agent.Name, agent.RestartPolicy)
	}
	if r := agent.RestartPolicyRules[0]; r.ExitCodes.Values[0] != ExitCodeRestartInPlace {
		t.Errorf("rule %+v, want the agent's exit code", r)
	}
	if !agent.Resources.Requests.Cpu().Equal(*agent.Resources.Limits.Cpu()) || !agent.Resources.Requests.Memory().Equal(*agent.Resources.Limits.Memory()) {
		t.Errorf("agent resources %+v: a Guaranteed pod would become Burstable", agent.Resources)
	}
	if pod.Annotations[defaultContainerAnnotation] != v1beta1.PyTorchContainerName {
		t.Errorf("kubectl's default container %q", pod.Annotations[defaultContainerAnnotation])
	}
	fromAnnotation := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fromAnnotation[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	for name, key := range map[string]string{v1beta1.EnvAttempt: AnnotationAttempt, v1beta1.EnvResumeFrom: v1beta1.AnnotationResumeFrom,
		v1beta1.EnvResumeStep: v1beta1.AnnotationResumeStep} {
		if want := "metadata.annotations['" + key + "']"; fromAnnotation[name] != want {
			t.Errorf("%s from %q, want %q", name, fromAnnotation[name], want)
		}
	}
	if pod.Annotations[v1beta1.AnnotationResumeFrom] != "/ckpt/step-10" {
		t.Errorf("resume annotation %q", pod.Annotations[v1beta1.AnnotationResumeFrom])
	}

	job.Spec.RunPolicy.RestartStrategy = v1beta1.RestartStrategyRecreate
	pod, err = (&Builder{Adapter: PyTorch, Job: job, Topology: NewTopology(PyTorch, job, "")}).Pod(ReplicaID{Type: v1beta1.ReplicaTypeWorker})
	if err != nil {
		t.Fatal(err)
	}
	if CanRestartInPlace(pod) || len(pod.Spec.Containers) != 1 || pod.Annotations[AnnotationAttempt] != "" {
		t.Errorf("a Recreate pod has in-place parts: %+v", pod.Spec)
	}
}
