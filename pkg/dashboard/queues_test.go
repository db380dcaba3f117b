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

package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"tensorstack.dev/training/pkg/kueueview"
	"tensorstack.dev/training/pkg/kueueview/kueueviewtest"
)

// withKueue gives the fixture's server a fake Kueue holding objects.
func (f *fixture) withKueue(objects ...runtime.Object) *kueuefake.Clientset {
	kueue := kueuefake.NewSimpleClientset(objects...)
	f.server.source = StaticClients{Training: f.training, Kube: f.kube, Kueue: kueueviewtest.Clientset{Interface: kueue}, Namespace: "team"}
	return kueue
}

func oneGPUQueue() *kueuev1beta2.ClusterQueue {
	return &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec: kueuev1beta2.ClusterQueueSpec{ResourceGroups: []kueuev1beta2.ResourceGroup{{
			Flavors: []kueuev1beta2.FlavorQuotas{{Name: "default-flavor", Resources: []kueuev1beta2.ResourceQuota{{
				Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("1"),
			}}}},
		}}},
	}
}

func pendingWorkload(name string, minutes int) *kueuev1beta2.Workload {
	return &kueuev1beta2.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "pytorch-" + name,
			CreationTimestamp: metav1.NewTime(time.Date(2026, 5, 1, 12, minutes, 0, 0, time.UTC)),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.tensorstack.dev/v1beta1", Kind: "PyTorchTrainingJob",
				Name: name, Controller: ptr.To(true)}}},
		Spec: kueuev1beta2.WorkloadSpec{QueueName: "q"},
		Status: kueuev1beta2.WorkloadStatus{Conditions: []metav1.Condition{{
			Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending",
			Message: "couldn't assign flavors to pod set master: insufficient unused quota for nvidia.com/gpu",
		}}},
	}
}

func queuesOf(t *testing.T, e sseEvent) queuesEvent {
	t.Helper()
	var q queuesEvent
	if err := json.Unmarshal([]byte(e.data), &q); err != nil {
		t.Fatalf("decoding %s event %s: %v", e.name, e.data, err)
	}
	return q
}

func pendingNames(q queuesEvent) []string {
	var names []string
	for _, cq := range q.ClusterQueues {
		for _, w := range cq.PendingWorkloads {
			names = append(names, w.Name)
		}
	}
	return names
}

func TestQueuesStreamFollowsAdmissions(t *testing.T) {
	f := newFixture(t)
	localQueue := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "q"},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}}
	kueue := f.withKueue(oneGPUQueue(), localQueue, pendingWorkload("first", 0), pendingWorkload("second", 1))
	f.signIn()
	events := f.openStream("/api/queues/watch")

	q := queuesOf(t, next(t, events, "snapshot"))
	if got := pendingNames(q); len(got) != 2 || got[0] != "pytorch-first" {
		t.Fatalf("pending %v, want pytorch-first then pytorch-second", got)
	}
	cq := q.ClusterQueues[0]
	if cq.Ordering != kueueview.OrderedHere || cq.OrderingNote != kueueview.NotServed {
		t.Errorf("ordering %q (%q): the fake serves no visibility API, and the page must say so", cq.Ordering, cq.OrderingNote)
	}
	if len(cq.Quotas) != 1 || cq.Quotas[0].Nominal != "1" || len(q.LocalQueues) != 1 {
		t.Errorf("quotas %+v and LocalQueues %+v", cq.Quotas, q.LocalQueues)
	}
	next(t, events, "synced")

	// Kueue admits the first: the second is next, without a new request.
	admitted := pendingWorkload("first", 0)
	admitted.Status.Conditions = []metav1.Condition{
		{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"},
		{Type: kueuev1beta2.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"},
	}
	admitted.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "gpus"}
	if _, err := kueue.KueueV1beta2().Workloads("team").Update(t.Context(), admitted, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	q = queuesOf(t, next(t, events, "snapshot"))
	got := q.ClusterQueues[0].PendingWorkloads
	if len(got) != 1 || got[0].Name != "pytorch-second" || got[0].PositionInClusterQueue != 1 {
		t.Errorf("after the admission: %+v, want pytorch-second alone, at 1", got)
	}

	// The job list and a job's page get the Workloads, with the jobs they
	// are for.
	workloads := queuesOf(t, next(t, f.openStream("/api/queues/watch?view=workloads"), "snapshot"))
	if len(workloads.ClusterQueues) != 0 || len(workloads.Workloads) != 2 {
		t.Fatalf("view=workloads: %d ClusterQueues and %d Workloads, want none and 2", len(workloads.ClusterQueues), len(workloads.Workloads))
	}
	for _, w := range workloads.Workloads {
		if w.Name == "pytorch-second" && (w.OwnerName != "second" || w.PositionInClusterQueue != 1 || w.Reason != "Pending") {
			t.Errorf("view=workloads: %+v, want the job second at 1 with Kueue's reason", w)
		}
	}
}

func TestQueuesStreamPassesRefusalsThrough(t *testing.T) {
	f := newFixture(t)
	kueue := f.withKueue(&kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "q"},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}})
	forbid := func(resource string, namespaced bool) {
		kueue.PrependReactor("list", resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
			if namespaced && action.GetNamespace() != "" {
				return false, nil, nil
			}
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "kueue.x-k8s.io", Resource: resource}, "",
				errForbiddenForTest)
		})
	}
	forbid("clusterqueues", false)
	forbid("workloads", true) // across namespaces only
	f.signIn()
	events := f.openStream("/api/queues/watch")
	codes := map[int32]int{}
	var q queuesEvent
	for q.Namespace == "" {
		e := next(t, events, "refused", "snapshot")
		if e.name == "snapshot" {
			q = queuesOf(t, e)
			break
		}
		var body errorBody
		if err := json.Unmarshal([]byte(e.data), &body); err != nil {
			t.Fatal(err)
		}
		codes[body.Status.Code]++
	}
	if codes[http.StatusForbidden] != 2 {
		t.Errorf("refusals by code %v, want two 403s: Workloads across namespaces, ClusterQueues", codes)
	}
	if q.Namespace != "team" || len(q.LocalQueues) != 1 || len(q.ClusterQueues) != 0 {
		t.Errorf("snapshot %+v: want the user's namespace, its LocalQueue, no ClusterQueues", q)
	}
}

var errForbiddenForTest = errors.New(`user "viewer" cannot list this`)

func TestQueuesStreamWithoutKueuesAPISaysSo(t *testing.T) {
	f := newFixture(t)
	kueue := f.withKueue()
	kueue.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Group: "kueue.x-k8s.io", Resource: action.GetResource().Resource}, "")
	})
	f.signIn()
	e := next(t, f.openStream("/api/queues/watch"), "refused")
	var body errorBody
	if err := json.Unmarshal([]byte(e.data), &body); err != nil {
		t.Fatal(err)
	}
	if body.Status.Code != http.StatusNotFound || body.Status.Message != "ClusterQueues: Kueue's API (kueue.x-k8s.io/v1beta2) is not served in this cluster" {
		t.Errorf("refusal %+v", body.Status)
	}
}

func TestQueuesStreamEndsWhenThePageLeaves(t *testing.T) {
	f := newFixture(t)
	f.withKueue(oneGPUQueue(), pendingWorkload("first", 0))
	f.signIn()
	for _, path := range []string{"/api/queues/watch", "/api/queues/watch?view=workloads"} {
		ctx, leave := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url(path), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		// The first snapshot, then the page goes.
		buf := make([]byte, 1)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
		leave()
		resp.Body.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.server.sessions.mu.Lock()
		open := 0
		for _, s := range f.server.sessions.byID {
			open += s.streams
		}
		f.server.sessions.mu.Unlock()
		if open == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d streams still counted 10s after their pages left", open)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
