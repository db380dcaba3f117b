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

package kueueview

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
)

var start = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func clusterQueue() kueuev1beta2.ClusterQueue {
	borrowing := resource.MustParse("2")
	return kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec: kueuev1beta2.ClusterQueueSpec{
			CohortName:       "lab",
			QueueingStrategy: kueuev1beta2.BestEffortFIFO,
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"},
				Flavors: []kueuev1beta2.FlavorQuotas{{
					Name: "a100",
					Resources: []kueuev1beta2.ResourceQuota{{
						Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("1"), BorrowingLimit: &borrowing,
					}},
				}},
			}},
		},
		Status: kueuev1beta2.ClusterQueueStatus{
			Conditions:        []metav1.Condition{{Type: kueuev1beta2.ClusterQueueActive, Status: metav1.ConditionTrue, Reason: "Ready"}},
			AdmittedWorkloads: 1, ReservingWorkloads: 1, PendingWorkloads: 2,
			FlavorsUsage: []kueuev1beta2.FlavorUsage{{Name: "a100", Resources: []kueuev1beta2.ResourceUsage{{
				Name: "nvidia.com/gpu", Total: resource.MustParse("1"),
			}}}},
		},
	}
}

func localQueue(namespace, name string) kueuev1beta2.LocalQueue {
	return kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}}
}

// workload is a Workload of queue, created the given minutes after start.
func workload(namespace, name, queue string, minutes int, priority int32, conditions ...metav1.Condition) kueuev1beta2.Workload {
	return kueuev1beta2.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name,
			CreationTimestamp: metav1.NewTime(start.Add(time.Duration(minutes) * time.Minute)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.tensorstack.dev/v1beta1", Kind: "PyTorchTrainingJob",
				Name: strings.TrimPrefix(name, "pytorch-"), Controller: ptr.To(true)}}},
		Spec:   kueuev1beta2.WorkloadSpec{QueueName: kueuev1beta2.LocalQueueName(queue), Priority: ptr.To(priority)},
		Status: kueuev1beta2.WorkloadStatus{Conditions: conditions},
	}
}

func condition(kind string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: kind, Status: status, Reason: reason, Message: message}
}

func TestBuildOrdersPendingWorkloadsByPriorityThenCreation(t *testing.T) {
	waiting := condition(kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", "insufficient quota for nvidia.com/gpu")
	admitted := workload("team", "pytorch-running", "q", 0, 0,
		condition(kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""),
		condition(kueuev1beta2.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "admitted by ClusterQueue gpus"))
	admitted.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "gpus"}
	s := Build([]kueuev1beta2.ClusterQueue{clusterQueue()},
		[]kueuev1beta2.LocalQueue{localQueue("team", "q"), localQueue("other", "q")},
		[]kueuev1beta2.Workload{
			admitted,
			workload("team", "pytorch-late", "q", 3, 0, waiting),
			workload("other", "pytorch-early", "q", 1, 0, waiting),
			workload("team", "pytorch-urgent", "q", 5, 100, waiting),
			workload("team", "pytorch-done", "q", 0, 0, condition(kueuev1beta2.WorkloadFinished, metav1.ConditionTrue, "Succeeded", "")),
		}, nil, NotServed)

	if len(s.ClusterQueues) != 1 {
		t.Fatalf("%d ClusterQueues, want 1", len(s.ClusterQueues))
	}
	cq := s.ClusterQueues[0]
	if cq.Ordering != OrderedHere || cq.OrderingNote != NotServed {
		t.Errorf("ordering %q (%q), want %q with the note that the visibility API is not served", cq.Ordering, cq.OrderingNote, OrderedHere)
	}
	var got []string
	for _, w := range cq.PendingWorkloads {
		got = append(got, w.Name)
	}
	if want := "pytorch-urgent pytorch-early pytorch-late"; strings.Join(got, " ") != want {
		t.Errorf("pending order %v, want %s", got, want)
	}
	first, last := cq.PendingWorkloads[0], cq.PendingWorkloads[2]
	if first.PositionInClusterQueue != 1 || last.PositionInClusterQueue != 3 || last.PositionInLocalQueue != 2 {
		t.Errorf("positions: first %d, last %d (%d in its LocalQueue), want 1, 3 (2)",
			first.PositionInClusterQueue, last.PositionInClusterQueue, last.PositionInLocalQueue)
	}
	if last.Reason != "Pending" || !strings.Contains(last.Message, "insufficient quota") || last.OwnerName != "late" {
		t.Errorf("the last pending Workload: %+v, want Kueue's reason and its job", last)
	}
	if cq.Admitted != 1 || cq.Pending != 2 || !cq.Active || cq.Cohort != "lab" {
		t.Errorf("counts and facts: %+v", cq)
	}
	want := Quota{Flavor: "a100", Resource: "nvidia.com/gpu", Nominal: "1", BorrowingLimit: "2", Usage: "1", Borrowed: "0", Reserved: "0"}
	if len(cq.Quotas) != 1 || cq.Quotas[0] != want {
		t.Errorf("quotas %+v, want [%+v]", cq.Quotas, want)
	}
	states := map[string]string{}
	for _, w := range s.Workloads {
		states[w.Name] = w.State
	}
	if states["pytorch-running"] != StateAdmitted || states["pytorch-done"] != StateFinished || states["pytorch-late"] != StatePending {
		t.Errorf("states %v", states)
	}
	if len(s.LocalQueues) != 2 || s.LocalQueues[0].Namespace != "other" {
		t.Errorf("LocalQueues %+v, want both, sorted by namespace", s.LocalQueues)
	}
}

func TestBuildTakesKueuesOrderAndFallsBackWhenRefused(t *testing.T) {
	waiting := condition(kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", "")
	workloads := []kueuev1beta2.Workload{
		workload("team", "pytorch-a", "q", 0, 0, waiting),
		workload("team", "pytorch-b", "q", 1, 0, waiting),
	}
	lqs := []kueuev1beta2.LocalQueue{localQueue("team", "q")}
	// Kueue puts b first (a was requeued after an eviction, say); a third
	// Workload is one the user may not read.
	kueue := func(string, []LocalQueue) ([]visibilityv1beta2.PendingWorkload, string, error) {
		return []visibilityv1beta2.PendingWorkload{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pytorch-b"}, LocalQueueName: "q", PositionInClusterQueue: 0, PositionInLocalQueue: 0},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "secret", Name: "hidden"}, LocalQueueName: "x", PositionInClusterQueue: 1, PositionInLocalQueue: 0},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pytorch-a"}, LocalQueueName: "q", PositionInClusterQueue: 2, PositionInLocalQueue: 1},
		}, "", nil
	}
	s := Build([]kueuev1beta2.ClusterQueue{clusterQueue()}, lqs, workloads, kueue, "")
	cq := s.ClusterQueues[0]
	if cq.Ordering != OrderedByKueue || len(cq.PendingWorkloads) != 3 {
		t.Fatalf("ordering %q with %d pending, want Kueue's three", cq.Ordering, len(cq.PendingWorkloads))
	}
	if a := cq.PendingWorkloads[2]; a.Name != "pytorch-a" || a.PositionInClusterQueue != 3 || a.PositionInLocalQueue != 2 || a.OwnerName != "a" {
		t.Errorf("the third: %+v, want pytorch-a at 3 (2 in its LocalQueue), its job known", a)
	}
	for _, w := range s.Workloads {
		if w.Name == "pytorch-a" && w.PositionInClusterQueue != 3 {
			t.Errorf("the Workloads list has pytorch-a at %d, want Kueue's 3", w.PositionInClusterQueue)
		}
	}

	refused := func(string, []LocalQueue) ([]visibilityv1beta2.PendingWorkload, string, error) {
		return nil, "", errors.New(`clusterqueues.visibility.kueue.x-k8s.io "gpus" is forbidden`)
	}
	cq = Build([]kueuev1beta2.ClusterQueue{clusterQueue()}, lqs, workloads, refused, "").ClusterQueues[0]
	if cq.Ordering != OrderedHere || !strings.Contains(cq.OrderingNote, "forbidden") {
		t.Errorf("refused: ordering %q (%q), want the view's own, saying why", cq.Ordering, cq.OrderingNote)
	}
	if cq.PendingWorkloads[0].Name != "pytorch-a" || cq.PendingWorkloads[0].PositionInClusterQueue != 1 {
		t.Errorf("refused: first %+v, want pytorch-a at 1", cq.PendingWorkloads[0])
	}
}

func TestWorkloadWithoutAKnownLocalQueueHasNoPosition(t *testing.T) {
	s := Build(nil, nil, []kueuev1beta2.Workload{workload("team", "pytorch-x", "missing", 0, 0)}, nil, NotServed)
	w := s.Workloads[0]
	if w.State != StatePending || w.PositionInClusterQueue != 0 || w.Reason != "NoClusterQueue" {
		t.Errorf("%+v, want pending with no position and the reason NoClusterQueue", w)
	}
}
