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
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
)

// kueueAPI serves what a Kueue API server would at the paths the client
// must ask, and records the requests.
func kueueAPI(t *testing.T) (Client, *[]string) {
	t.Helper()
	var asked []string
	write := func(w http.ResponseWriter, code int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		if err := json.NewEncoder(w).Encode(body); err != nil {
			t.Error(err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /apis/kueue.x-k8s.io/v1beta2/clusterqueues", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			event := metav1.WatchEvent{Type: string(watch.Added)}
			event.Object.Raw, _ = json.Marshal(kueuev1beta2.ClusterQueue{TypeMeta: metav1.TypeMeta{APIVersion: "kueue.x-k8s.io/v1beta2", Kind: "ClusterQueue"},
				ObjectMeta: metav1.ObjectMeta{Name: "gpus", ResourceVersion: "8"}})
			_ = json.NewEncoder(w).Encode(event)
			return
		}
		write(w, http.StatusOK, kueuev1beta2.ClusterQueueList{TypeMeta: metav1.TypeMeta{APIVersion: "kueue.x-k8s.io/v1beta2", Kind: "ClusterQueueList"},
			Items: []kueuev1beta2.ClusterQueue{{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}}}})
	})
	mux.HandleFunc("GET /apis/kueue.x-k8s.io/v1beta2/namespaces/team/localqueues", func(w http.ResponseWriter, _ *http.Request) {
		write(w, http.StatusOK, kueuev1beta2.LocalQueueList{TypeMeta: metav1.TypeMeta{APIVersion: "kueue.x-k8s.io/v1beta2", Kind: "LocalQueueList"},
			Items: []kueuev1beta2.LocalQueue{{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "main"}, Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}}}})
	})
	mux.HandleFunc("GET /apis/kueue.x-k8s.io/v1beta2/workloads", func(w http.ResponseWriter, _ *http.Request) {
		write(w, http.StatusForbidden, metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure,
			Reason: metav1.StatusReasonForbidden, Code: http.StatusForbidden, Message: `workloads.kueue.x-k8s.io is forbidden: User "u" cannot list`})
	})
	pending := func(position int32) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			write(w, http.StatusOK, visibilityv1beta2.PendingWorkloadsSummary{
				TypeMeta: metav1.TypeMeta{APIVersion: "visibility.kueue.x-k8s.io/v1beta2", Kind: "PendingWorkloadsSummary"},
				Items:    []visibilityv1beta2.PendingWorkload{{ObjectMeta: metav1.ObjectMeta{Name: "wl"}, PositionInClusterQueue: position}}})
		}
	}
	mux.HandleFunc("GET /apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/gpus/pendingworkloads", pending(3))
	mux.HandleFunc("GET /apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team/localqueues/main/pendingworkloads", pending(5))
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.RequestURI())
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	client, err := NewForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	return client, &asked
}

// TestClientReadsKueuesPaths: the client of its own asks the paths and
// decodes the answers the generated clientset would.
func TestClientReadsKueuesPaths(t *testing.T) {
	client, asked := kueueAPI(t)
	ctx := t.Context()

	cqs, err := client.ListClusterQueues(ctx, metav1.ListOptions{Limit: 1})
	if err != nil || len(cqs.Items) != 1 || cqs.Items[0].Name != "gpus" {
		t.Errorf("ClusterQueues %+v, %v: want gpus", cqs, err)
	}
	lqs, err := client.ListLocalQueues(ctx, "team", metav1.ListOptions{})
	if err != nil || len(lqs.Items) != 1 || lqs.Items[0].Spec.ClusterQueue != "gpus" {
		t.Errorf("LocalQueues %+v, %v: want team/main of gpus", lqs, err)
	}
	if _, err := client.ListWorkloads(ctx, "", metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("Workloads of every namespace: %v, want the API's 403", err)
	}
	summary, err := client.ClusterQueuePending(ctx, "gpus")
	if err != nil || len(summary.Items) != 1 || summary.Items[0].PositionInClusterQueue != 3 {
		t.Errorf("ClusterQueue's pending %+v, %v: want one at 3", summary, err)
	}
	summary, err = client.LocalQueuePending(ctx, "team", "main")
	if err != nil || len(summary.Items) != 1 || summary.Items[0].PositionInClusterQueue != 5 {
		t.Errorf("LocalQueue's pending %+v, %v: want one at 5", summary, err)
	}
	w, err := client.WatchClusterQueues(ctx, metav1.ListOptions{ResourceVersion: "7"})
	if err != nil {
		t.Fatal(err)
	}
	event := <-w.ResultChan()
	w.Stop()
	if cq, ok := event.Object.(*kueuev1beta2.ClusterQueue); event.Type != watch.Added || !ok || cq.Name != "gpus" {
		t.Errorf("watch event %s %T, want ClusterQueue gpus added", event.Type, event.Object)
	}

	want := []string{
		"/apis/kueue.x-k8s.io/v1beta2/clusterqueues?limit=1",
		"/apis/kueue.x-k8s.io/v1beta2/namespaces/team/localqueues",
		"/apis/kueue.x-k8s.io/v1beta2/workloads",
		"/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/gpus/pendingworkloads",
		"/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team/localqueues/main/pendingworkloads",
		"/apis/kueue.x-k8s.io/v1beta2/clusterqueues?resourceVersion=7&watch=true",
	}
	if fmt.Sprint(*asked) != fmt.Sprint(want) {
		t.Errorf("asked\n%q\nwant\n%q", *asked, want)
	}
}
