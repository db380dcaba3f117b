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

package owner

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func newJob(recorder record.EventRecorder) *Job {
	job := &v1beta1.TensorFlowTrainingJob{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "uid-j"}}
	return &Job{Object: job, Kind: "TensorFlowTrainingJob", Recorder: recorder, Logger: klog.Background()}
}

func service(name string, labels map[string]string, owners ...metav1.OwnerReference) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "svc",
		Labels: labels, OwnerReferences: owners}}
}

// TestEnsure: missing is created, the job's own is kept, a labelled orphan
// is adopted, someone else's is reported and left alone, whether the cache
// shows it or only the apiserver does.
func TestEnsure(t *testing.T) {
	jobLabels := v1beta1.JobLabels("TensorFlowTrainingJob", "j")
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "Other", Name: "o", UID: "o", Controller: ptr.To(true)}
	mine := metav1.OwnerReference{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "TensorFlowTrainingJob",
		Name: "j", UID: "uid-j", Controller: ptr.To(true)}
	cases := []struct {
		name        string
		existing    *corev1.Service
		cached      bool
		wantCreated bool
		wantTaken   bool
		wantOwner   types.UID
		wantEvent   string
	}{
		{name: "missing", wantCreated: true, wantOwner: "uid-j", wantEvent: ReasonSuccessfulCreate},
		{name: "the job's", existing: service("j", jobLabels, mine), cached: true, wantOwner: "uid-j"},
		{name: "orphan in the cache", existing: service("j", jobLabels), cached: true, wantOwner: "uid-j", wantEvent: ReasonAdopted},
		{name: "orphan not yet cached", existing: service("j", jobLabels), wantOwner: "uid-j", wantEvent: ReasonAdopted},
		{name: "unlabelled orphan", existing: service("j", nil), cached: true, wantTaken: true, wantOwner: "", wantEvent: ReasonNameConflict},
		{name: "someone else's", existing: service("j", jobLabels, other), cached: true, wantTaken: true, wantOwner: "o", wantEvent: ReasonNameConflict},
		{name: "someone else's, not yet cached", existing: service("j", jobLabels, other), wantTaken: true, wantOwner: "o", wantEvent: ReasonNameConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var objects []runtime.Object
			indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
			if tc.existing != nil {
				objects = append(objects, tc.existing)
				if tc.cached {
					if err := indexer.Add(tc.existing); err != nil {
						t.Fatal(err)
					}
				}
			}
			client := fake.NewClientset(objects...)
			recorder := record.NewFakeRecorder(10)
			job := newJob(recorder)
			desired := service("j", job.Labels(), job.ControllerRef())
			got, err := Ensure(context.Background(), job, Services(client, indexer, "ns", "replicas may not find each other"), desired)
			if err != nil {
				t.Fatal(err)
			}
			if got.Created != tc.wantCreated || got.Taken != tc.wantTaken || (got.Obj == nil) != tc.wantTaken {
				t.Errorf("result %+v, want created %v taken %v", got, tc.wantCreated, tc.wantTaken)
			}
			if tc.cached {
				for _, a := range client.Actions() {
					if a.GetVerb() == "create" {
						t.Errorf("created %s although the cache has one", a.GetResource().Resource)
					}
				}
			}
			stored, err := client.CoreV1().Services("ns").Get(context.Background(), "j", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var owner types.UID
			if ref := metav1.GetControllerOf(stored); ref != nil {
				owner = ref.UID
			}
			if owner != tc.wantOwner {
				t.Errorf("stored service controlled by %q, want %q", owner, tc.wantOwner)
			}
			var event string
			select {
			case event = <-recorder.Events:
			default:
			}
			if want := tc.wantEvent; (want == "") != (event == "") || (want != "" && !strings.Contains(event, want)) {
				t.Errorf("event %q, want reason %q", event, want)
			}
			// The words people and tools read: the conflict names the kind
			// as a sentence starts it, and what it costs the job.
			if tc.wantTaken && !strings.Contains(event, "Service j exists and is not controlled by the job; replicas may not find each other") {
				t.Errorf("event %q does not say which Service is taken and what it costs", event)
			}
		})
	}
}

// TestEnsureWithoutGetOrPatch: a kind the controller may only create is
// never read or patched: an orphan is reported as taken, and a name held by
// an object the cache does not show yet waits for the cache.
func TestEnsureWithoutGetOrPatch(t *testing.T) {
	job := newJob(record.NewFakeRecorder(10))
	for _, cached := range []bool{true, false} {
		orphan := service("j", job.Labels())
		indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
		if cached {
			if err := indexer.Add(orphan); err != nil {
				t.Fatal(err)
			}
		}
		client := fake.NewClientset(orphan)
		kind := Services(client, indexer, "ns", "replicas may not find each other")
		kind.Get, kind.Patch = nil, nil
		got, err := Ensure(context.Background(), job, kind, service("j", job.Labels(), job.ControllerRef()))
		if err != nil || got.Obj != nil || got.Created || got.Taken != cached {
			t.Errorf("cached %v: %+v, %v; want taken only when cached, no error", cached, got, err)
		}
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" || a.GetVerb() == "patch" {
				t.Errorf("cached %v: %s %s", cached, a.GetVerb(), a.GetResource().Resource)
			}
		}
	}
}
