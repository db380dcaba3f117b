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
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// sseEvent is one server-sent event as the browser's EventSource reads it.
type sseEvent struct {
	name string
	data string
}

// openStream starts a GET of an event stream and sends its events to the
// returned channel until the request ends with the test.
func (f *fixture) openStream(path string) <-chan sseEvent {
	f.t.Helper()
	resp := f.do(http.MethodGet, f.url(path), "", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		f.t.Fatalf("GET %s: %s %s, want 200 text/event-stream", path, resp.Status, resp.Header.Get("Content-Type"))
	}
	events := make(chan sseEvent, 16)
	go func() {
		defer close(events)
		var e sseEvent
		scanner := bufio.NewScanner(resp.Body)
		for scanner.Scan() {
			line := scanner.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				e.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				e.data = strings.TrimPrefix(line, "data: ")
			case line == "" && e.name != "":
				events <- e
				e = sseEvent{}
			}
		}
	}()
	return events
}

// next waits for the stream's next event of one of names, skipping others.
func next(t *testing.T, events <-chan sseEvent, names ...string) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended before an event of %v", names)
			}
			for _, name := range names {
				if e.name == name {
					return e
				}
			}
		case <-timeout:
			t.Fatalf("no event of %v within 10s", names)
		}
	}
}

func summaryOf(t *testing.T, e sseEvent) jobSummary {
	t.Helper()
	var s jobSummary
	if err := json.Unmarshal([]byte(e.data), &s); err != nil {
		t.Fatalf("decoding %s event %s: %v", e.name, e.data, err)
	}
	return s
}

// signalWatches makes the fake API tell when a watch of pytorchtrainingjobs
// starts: the fake drops changes made before it, which a real API server
// would send from the listed resourceVersion.
func signalWatches(f *fixture) <-chan string {
	started := make(chan string, 4)
	f.training.PrependWatchReactor(v1beta1.PyTorchTrainingJobResource, func(action clienttesting.Action) (bool, watch.Interface, error) {
		w, err := f.training.Tracker().Watch(pyTorchResource, action.GetNamespace())
		started <- action.GetNamespace()
		return true, w, err
	})
	return started
}

func TestListStreamSendsTheChangeOfAWatchedJob(t *testing.T) {
	job := newPyTorchJob("team", "mnist")
	job.Status.Phase = v1beta1.JobRunning
	f := newFixture(t, job.DeepCopy())
	watching := signalWatches(f)
	f.signIn()
	events := f.openStream("/api/jobs/watch")

	if s := summaryOf(t, next(t, events, "upsert")); s.Name != "mnist" || s.Phase != v1beta1.JobRunning {
		t.Fatalf("first upsert %+v, want mnist Running", s)
	}
	next(t, events, "synced")
	<-watching

	job.Status.Phase = v1beta1.JobSucceeded
	if err := f.training.Tracker().Update(pyTorchResource, job, "team"); err != nil {
		t.Fatal(err)
	}
	if s := summaryOf(t, next(t, events, "upsert")); s.Name != "mnist" || s.Phase != v1beta1.JobSucceeded {
		t.Errorf("upsert after the change %+v, want mnist Succeeded", s)
	}

	if err := f.training.Tracker().Delete(pyTorchResource, "team", "mnist"); err != nil {
		t.Fatal(err)
	}
	if s := summaryOf(t, next(t, events, "delete")); s.Name != "mnist" {
		t.Errorf("delete %+v, want mnist", s)
	}
}

func TestListStreamFallsBackToTheUsersNamespace(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mine"), newPyTorchJob("other", "theirs"))
	// As RBAC refuses a user whose Role grants list in their namespace only.
	f.training.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "" {
			return false, nil, nil
		}
		resource := action.GetResource()
		return true, nil, apierrors.NewForbidden(resource.GroupResource(), "", errFromString("cannot list at the cluster scope"))
	})
	f.signIn()
	events := f.openStream("/api/jobs/watch")

	if s := summaryOf(t, next(t, events, "upsert")); s.Namespace != "team" || s.Name != "mine" {
		t.Errorf("upsert %+v, want team/mine", s)
	}
	next(t, events, "synced")
}

func TestListStreamReportsAKindTheUserMayNotList(t *testing.T) {
	f := newFixture(t, newPyTorchJob("team", "mnist"))
	f.training.PrependReactor("list", v1beta1.TensorFlowTrainingJobResource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(action.GetResource().GroupResource(), "", errFromString("RBAC: no list"))
	})
	f.signIn()
	events := f.openStream("/api/jobs/watch?namespace=team")

	refused := next(t, events, "refused")
	var body errorBody
	if err := json.Unmarshal([]byte(refused.data), &body); err != nil {
		t.Fatal(err)
	}
	if body.Status.Code != http.StatusForbidden || !strings.Contains(body.Status.Message, "tensorflowtrainingjobs") {
		t.Errorf("refused %+v, want the API's 403 naming tensorflowtrainingjobs", body.Status)
	}
	if s := summaryOf(t, next(t, events, "upsert")); s.Name != "mnist" {
		t.Errorf("upsert %+v, want the PyTorch job still listed", s)
	}
}

func TestInformersKeepNoManagedFields(t *testing.T) {
	job := newPyTorchJob("team", "mnist")
	job.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	got, err := dropManagedFields(job)
	if err != nil || got.(*v1beta1.PyTorchTrainingJob).ManagedFields != nil || got.(*v1beta1.PyTorchTrainingJob).Name != "mnist" {
		t.Errorf("dropManagedFields: %+v, %v; want the job without its managed fields", got, err)
	}
	if got, err := dropManagedFields("not a job"); err != nil || got != "not a job" {
		t.Errorf("a non-job: %v, %v; want it as it was", got, err)
	}
}

// TestStreamsOfOneUserShareAFeed: three list streams of one user run one
// informer of each kind, not three; a stream that joins later is sent the
// jobs there are, and a change reaches every stream.
func TestStreamsOfOneUserShareAFeed(t *testing.T) {
	job := newPyTorchJob("team", "mnist")
	f := newFixture(t, job.DeepCopy())
	watching := signalWatches(f)
	f.signIn()
	var streams []<-chan sseEvent
	for range 3 {
		events := f.openStream("/api/jobs/watch?namespace=team")
		if s := summaryOf(t, next(t, events, "upsert")); s.Name != "mnist" {
			t.Fatalf("first upsert %+v, want mnist", s)
		}
		next(t, events, "synced")
		streams = append(streams, events)
	}
	<-watching
	if n := f.server.feeds.running(); n != len(jobKinds) {
		t.Errorf("%d informers for 3 streams of one user, want %d (one per kind)", n, len(jobKinds))
	}
	job.Status.Phase = v1beta1.JobSucceeded
	if err := f.training.Tracker().Update(pyTorchResource, job, "team"); err != nil {
		t.Fatal(err)
	}
	for i, events := range streams {
		if s := summaryOf(t, next(t, events, "upsert")); s.Phase != v1beta1.JobSucceeded {
			t.Errorf("stream %d: upsert %+v, want mnist Succeeded", i, s)
		}
	}
}

// TestFeedStopsWithItsLastStream: a feed's informer runs while a stream
// follows it, and stops with the last.
func TestFeedStopsWithItsLastStream(t *testing.T) {
	feeds := newJobFeeds()
	key := feedKey{resource: "pytorchtrainingjobs", namespace: "team"}
	started := 0
	newInformer := func() cache.SharedIndexInformer {
		started++
		return cache.NewSharedIndexInformer(&cache.ListWatch{}, &v1beta1.PyTorchTrainingJob{}, 0, cache.Indexers{})
	}
	_, first, err := feeds.subscribe(key, newInformer, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	_, second, err := feeds.subscribe(key, newInformer, cache.ResourceEventHandlerFuncs{})
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 || feeds.running() != 1 {
		t.Fatalf("%d informers started, %d running for two streams, want 1 and 1", started, feeds.running())
	}
	first()
	first() // twice: once counts
	if feeds.running() != 1 {
		t.Errorf("the feed stopped while a stream follows it")
	}
	second()
	if feeds.running() != 0 {
		t.Errorf("%d feeds run after their last stream ended, want none", feeds.running())
	}
}
