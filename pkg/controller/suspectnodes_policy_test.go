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
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// preflightFailed is a pod whose preflight check exited with code on node.
func preflightFailed(node string, code int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.NodeName = node
		p.Status.Phase = corev1.PodFailed
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{
			Name: batch.PreflightContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
		}}
		p.Status.ContainerStatuses = nil
	}
}

func onNode(node string, change func(*corev1.Pod)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		change(p)
		p.Spec.NodeName = node
	}
}

func withDisruption(reason string, change func(*corev1.Pod)) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		change(p)
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason})
	}
}

// TestNodeBlame: which failed pods blame their node, and which blame the
// program or a decision of the cluster.
func TestNodeBlame(t *testing.T) {
	spec := &v1beta1.TrainingJobSpec{RunPolicy: v1beta1.RunPolicy{NodeFailureExitCodes: []int32{79}}}
	admissionError := func(p *corev1.Pod) {
		p.Status.Phase, p.Status.Reason = corev1.PodFailed, podReasonUnexpectedAdmissionError
	}
	cases := map[string]struct {
		pod  func(*corev1.Pod)
		want string
	}{
		"a preflight check that failed":        {preflightFailed("n1", 1), v1beta1.SuspectNodePreflightFailed},
		"the kubelet's eviction":               {onNode("n1", evicted), v1beta1.SuspectNodeEvicted},
		"a device failed at admission":         {onNode("n1", admissionError), v1beta1.SuspectNodeDeviceFailure},
		"deleted with its node unreachable":    {onNode("n1", withDisruption(disruptionDeletionByTaintManager, failed(137))), v1beta1.SuspectNodeLost},
		"deleted by the pod GC, its node gone": {onNode("n1", withDisruption(disruptionDeletionByPodGC, failed(137))), v1beta1.SuspectNodeLost},
		"an exit code the job lists":           {onNode("n1", failed(79)), v1beta1.SuspectNodeFailureExitCode},
		"an exit code it does not list":        {onNode("n1", failed(1)), ""},
		"preempted by the scheduler":           {onNode("n1", disruptedByPreemption), ""},
		"a listed exit code, but no node":      {failed(79), ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "pytorch"}}}}
			p.Name = "j-worker-0"
			tc.pod(p)
			reason, message := nodeBlame(podbuilder.PyTorch, spec, p)
			if reason != tc.want || (reason != "" && message == "") {
				t.Errorf("nodeBlame = %q (%q), want %q with a message", reason, message, tc.want)
			}
		})
	}
}

// TestPreflightMovesTheReplica: a replica whose preflight check fails makes
// its node suspect and is created again with the node left out; a node
// costs a restart once; a finished job forgets its suspects.
func TestPreflightMovesTheReplica(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).withBackoffLimit(5).obj()
	job.CommonSpec().RunPolicy.Preflight = &v1beta1.Preflight{Command: []string{"check"}}
	f := newFixture(t, job)
	f.start(job)
	if init := f.pod("j-worker-0").Spec.InitContainers; len(init) == 0 || init[0].Name != batch.PreflightContainerName {
		t.Fatalf("init containers %+v, want the preflight check first", init)
	}
	fail := func(node string) {
		t.Helper()
		f.setPod("j-worker-0", preflightFailed(node, 1))
		f.step(job)
		f.clock.Step(time.Minute)
		f.step(job)
	}
	fail("node-a")
	st := f.status(job)
	if len(st.SuspectNodes) != 1 || st.SuspectNodes[0].Name != "node-a" || st.SuspectNodes[0].Reason != v1beta1.SuspectNodePreflightFailed {
		t.Fatalf("suspect nodes %+v, want node-a for its preflight check", st.SuspectNodes)
	}
	if st.BackoffCount != 1 {
		t.Errorf("backoffCount %d after node-a's first failure, want 1", st.BackoffCount)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonNodeSuspect) {
		t.Errorf("no NodeSuspect event")
	}
	if avoided := avoidedNodes(f.pod("j-worker-0")); !slices.Equal(avoided, []string{"node-a"}) {
		t.Errorf("the new pod avoids %v, want [node-a]", avoided)
	}
	// A node already suspect (say the list was written by hand meanwhile)
	// costs nothing more.
	fail("node-a")
	if st := f.status(job); st.BackoffCount != 1 || len(st.SuspectNodes) != 1 {
		t.Errorf("backoffCount %d, suspects %+v after node-a failed again, want 1 and node-a alone", st.BackoffCount, st.SuspectNodes)
	}
	fail("node-b")
	st = f.status(job)
	if st.BackoffCount != 2 || len(st.SuspectNodes) != 2 {
		t.Errorf("backoffCount %d, suspects %+v after node-b, want 2 and two nodes", st.BackoffCount, st.SuspectNodes)
	}
	if a := st.Attempts[len(st.Attempts)-1]; a.FailedReplicaCount != 3 || a.FailedReplicas[0].Reason != v1beta1.SuspectNodePreflightFailed {
		t.Errorf("attempt %+v, want three preflight failures within the one attempt", a)
	}
	f.setAll(running)
	f.step(job)
	f.setAll(succeeded)
	f.step(job)
	st = f.status(job)
	assertPhase(t, st, v1beta1.JobSucceeded)
	if len(st.SuspectNodes) != 0 {
		t.Errorf("a finished job keeps suspects %+v", st.SuspectNodes)
	}
}

// TestSuspectNodesAreBounded: the list keeps the newest MaxSuspectNodes.
func TestSuspectNodesAreBounded(t *testing.T) {
	r := &reconciler{
		status: &v1beta1.TrainingJobStatus{}, spec: &v1beta1.TrainingJobSpec{},
		kind: &kindHandler{Adapter: podbuilder.PyTorch}, now: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC),
	}
	for i := range batch.MaxSuspectNodes + 3 {
		p := &corev1.Pod{}
		p.Name = "j-worker-0"
		onNode(fmt.Sprintf("node-%02d", i), evicted)(p)
		s := &slot{exit: &replicaExit{pod: p}}
		if !r.noteSuspectNode(s) {
			t.Fatalf("node-%02d was not new to the list", i)
		}
	}
	got := r.status.SuspectNodeNames()
	if len(got) != batch.MaxSuspectNodes || got[0] != "node-03" || got[len(got)-1] != fmt.Sprintf("node-%02d", batch.MaxSuspectNodes+2) {
		t.Errorf("kept %v, want the newest %d", got, batch.MaxSuspectNodes)
	}
}

// avoidedNodes are the nodes a pod's required node affinity leaves out.
func avoidedNodes(p *corev1.Pod) []string {
	if p == nil || p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return nil
	}
	req := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		return nil
	}
	for _, m := range req.NodeSelectorTerms[0].MatchFields {
		if m.Key == "metadata.name" && m.Operator == corev1.NodeSelectorOpNotIn {
			return m.Values
		}
	}
	return nil
}

// TestAddSuspectNodePolicy: a node is listed once, and the list keeps the
// newest MaxSuspectNodes.
func TestAddSuspectNodePolicy(t *testing.T) {
	var nodes []v1beta1.SuspectNode
	var added bool
	for i := range batch.MaxSuspectNodes + 2 {
		if nodes, added = addSuspectNode(nodes, v1beta1.SuspectNode{Name: fmt.Sprintf("node-%02d", i)}); !added {
			t.Fatalf("node-%02d was not added", i)
		}
	}
	if len(nodes) != batch.MaxSuspectNodes || nodes[0].Name != "node-02" {
		t.Errorf("kept %d nodes from %s; want the newest %d, from node-02", len(nodes), nodes[0].Name, batch.MaxSuspectNodes)
	}
	last := nodes[len(nodes)-1].Name
	if again, added := addSuspectNode(nodes, v1beta1.SuspectNode{Name: last}); added || len(again) != len(nodes) {
		t.Errorf("%s added again: added %v, %d nodes", last, added, len(again))
	}
}
