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
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

func TestStatusWrites(t *testing.T) {
	w := newStatusWrites()
	key := jobKey{Kind: podbuilder.TensorFlowKind, Namespace: "ns", Name: "j"}
	if w.behind(key, "3") {
		t.Errorf("behind without a write")
	}
	w.wrote(key, "7")
	w.wrote(key, "5") // an older answer arriving late changes nothing
	for _, tc := range []struct {
		cached string
		want   bool
	}{{"6", true}, {"5", true}, {"7", false}, {"6", false}} {
		// Once caught up (7), the write is forgotten: 6 is no longer behind.
		if got := w.behind(key, tc.cached); got != tc.want {
			t.Errorf("behind(%s) = %v, want %v", tc.cached, got, tc.want)
		}
	}
	w.wrote(key, "9")
	if w.behind(key, "not-a-number") {
		t.Errorf("a resourceVersion that is no number held the reconcile back")
	}
	w.wrote(key, "11")
	w.forget(key)
	if w.behind(key, "10") {
		t.Errorf("behind after forget")
	}
}

// TestStaleJobCacheAfterStatusWrite: right after the controller recorded a
// replacement and deleted the pod, a reconcile that reads the job from a
// cache still behind that status write must not take the pod it deleted
// for one deleted by someone else (which would fail a job under Never).
func TestStaleJobCacheAfterStatusWrite(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		name := "fenced"
		if !fenced {
			name = "without the fence the job fails"
		}
		t.Run(name, func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 1).obj()
			f := newFixture(t, job)
			f.gracefulDeletes()
			f.start(job)
			stale := f.job(job).DeepCopyObject().(v1beta1.TrainingJob)
			stale.SetResourceVersion("4")

			debug := f.job(job)
			debug.CommonSpec().RunMode = &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enabled: true}}
			f.updateJob(debug)
			f.mustSync(debug) // replaces the pod: recorded Deleted, then deleted
			if got := f.deletedPodNames(); len(got) != 1 {
				t.Fatalf("deleted %v, want the pod replaced for debug mode", got)
			}
			f.observe()
			if fenced {
				f.c.statusWrites.wrote(keyOf(job), "5")
			}
			// The job cache goes back to before the write; the pod cache
			// has the pod terminating.
			if err := f.indexer(stale).Update(stale); err != nil {
				t.Fatal(err)
			}
			if p := f.pod("j-worker-0"); p == nil || p.DeletionTimestamp == nil {
				t.Fatalf("the pod should be terminating: %+v", p)
			}
			requeue := f.mustSync(stale)
			phase := f.status(job).Phase
			if fenced {
				if requeue != statusWriteWait || phase.IsFinished() {
					t.Errorf("requeue %v phase %s; want to wait %v for the cache, the job untouched", requeue, phase, statusWriteWait)
				}
				return
			}
			if phase != v1beta1.JobFailed {
				t.Errorf("phase %s: the scenario no longer shows what the fence guards against", phase)
			}
		})
	}
}

// The patch holds what changed (a removed field as null), the UID, and no
// resourceVersion; applied to the old status it gives the new one.
func TestStatusPatch(t *testing.T) {
	start := metav1.NewTime(testStart)
	old := &v1beta1.TrainingJobStatus{
		Phase:        v1beta1.JobRunning,
		BackoffCount: 1,
		StartTime:    &start,
		Conditions:   []metav1.Condition{{Type: v1beta1.ConditionRunning, Status: metav1.ConditionTrue, Reason: "R"}},
	}
	cur := old.DeepCopy()
	cur.Phase = v1beta1.JobSucceeded
	cur.StartTime = nil
	patch, err := statusPatch("uid-1", old, cur)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(patch, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"metadata": map[string]any{"uid": "uid-1"},
		"status":   map[string]any{"phase": "Succeeded", "startTime": nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("patch (-want +got):\n%s", diff)
	}

	before, _ := json.Marshal(map[string]any{"metadata": map[string]any{"uid": "uid-1"}, "status": old})
	after, err := jsonpatch.MergePatch(before, patch)
	if err != nil {
		t.Fatal(err)
	}
	var applied struct {
		Status v1beta1.TrainingJobStatus `json:"status"`
	}
	if err := json.Unmarshal(after, &applied); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cur, &applied.Status); diff != "" {
		t.Errorf("old status patched (-want +got):\n%s", diff)
	}
}
