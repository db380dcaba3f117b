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
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// searchesCreated is when the test's searches were made: the list shows
// the newest first.
var searchesCreated = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// newSearch is a search of a learning rate and a batch size under asha,
// minimizing loss, made minutes after created, with two trials: one
// promoted and succeeded, the best; one paused at a rung.
func newSearch(namespace, name string, minutes int) *v1beta1.TuningJob {
	trial := func(index int32, lr, loss string, state v1beta1.TrialState, promotions int32) v1beta1.TrialStatus {
		return v1beta1.TrialStatus{
			Name: fmt.Sprintf("%s-%d", name, index), Index: index, State: state, Value: loss, Progress: ptr.To[int64](90),
			Rung: 1, RungValues: []string{loss}, Promotions: promotions,
			Parameters: []v1beta1.ParameterValue{{Name: "lr", Value: lr}, {Name: "batch", Value: "64"}},
			Curve:      []v1beta1.CurvePoint{{Progress: 10, Value: "2.5"}, {Progress: 90, Value: loss}},
		}
	}
	return &v1beta1.TuningJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name),
			CreationTimestamp: metav1.NewTime(searchesCreated.Add(time.Duration(minutes) * time.Minute)),
			ManagedFields:     []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1beta1.TuningJobSpec{
			TrialTemplate: pyTorchTemplate("registry.example/torch:2"),
			Parameters: []v1beta1.TuningParameter{
				{Name: "lr", Type: v1beta1.ParameterDouble, Min: "1e-4", Max: "1e-1", LogScale: true},
				{Name: "batch", Type: v1beta1.ParameterCategorical, Values: []string{"32", "64"}},
			},
			Objective:      v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize},
			Algorithm:      v1beta1.TuningAlgorithm{Name: v1beta1.AlgorithmTPE},
			EarlyStopping:  &v1beta1.EarlyStopping{ASHA: &v1beta1.ASHA{MinResource: 10}},
			ParallelTrials: 2,
			MaxTrials:      20,
		},
		Status: v1beta1.TuningJobStatus{
			Conditions: []metav1.Condition{{Type: "Running", Status: metav1.ConditionTrue}},
			Trials: []v1beta1.TrialStatus{
				trial(0, "0.01", "0.25", v1beta1.TrialSucceeded, 1),
				trial(1, "0.0003", "0.75", v1beta1.TrialPaused, 0),
			},
			Counts:    v1beta1.TrialCounts{Succeeded: 1, Paused: 1},
			BestTrial: name + "-0",
			BestValue: "0.25",
		},
	}
}

func TestTuningJobsListsTheSearchesAsRows(t *testing.T) {
	f := newFixture(t, newSearch("team", "lr", 1), newSearch("team", "wd", 3), newSearch("other", "momentum", 2))
	f.signIn()

	var got tuningListView
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs"), "", nil), http.StatusOK, &got)
	names := []string{}
	for _, item := range got.Items {
		names = append(names, item.Namespace+"/"+item.Name)
	}
	if want := []string{"team/wd", "other/momentum", "team/lr"}; !reflect.DeepEqual(names, want) || got.Namespace != "" || got.Truncated || got.Refused != nil {
		t.Errorf("GET /api/tuningjobs: %v in %q (truncated %v, refused %v), want every namespace's %v, newest first", names, got.Namespace, got.Truncated, got.Refused, want)
	}
	want := tuningSummary{
		Namespace: "team", Name: "lr", UID: "uid-lr", Created: metav1.NewTime(searchesCreated.Add(time.Minute)), State: "Running",
		Objective: v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize}, Algorithm: v1beta1.AlgorithmTPE,
		EarlyStopping: "asha", Counts: v1beta1.TrialCounts{Succeeded: 1, Paused: 1}, BestTrial: "lr-0", BestValue: "0.25",
		Trials: 2, MaxTrials: 20, ParallelTrials: 2,
	}
	last := got.Items[len(got.Items)-1]
	if !last.Created.Equal(&want.Created) {
		t.Errorf("created %v, want %v", last.Created, want.Created)
	}
	last.Created = want.Created // the same time, read back in the local zone
	if !reflect.DeepEqual(last, want) {
		t.Errorf("row:\n got %+v\nwant %+v", last, want)
	}

	// The query's namespace alone.
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs?namespace=other"), "", nil), http.StatusOK, &got)
	if got.Namespace != "other" || len(got.Items) != 1 || got.Items[0].Name != "momentum" {
		t.Errorf("GET /api/tuningjobs?namespace=other: %+v, want momentum alone", got)
	}
}

func TestTuningJobsRowsNameTheRules(t *testing.T) {
	median := newSearch("team", "median", 0)
	median.Spec.EarlyStopping = &v1beta1.EarlyStopping{MedianStop: &v1beta1.MedianStop{}}
	median.Spec.Algorithm = v1beta1.TuningAlgorithm{}
	median.Status.Conditions = []metav1.Condition{
		{Type: "Running", Status: metav1.ConditionFalse}, {Type: "Succeeded", Status: metav1.ConditionTrue},
	}
	plain := newSearch("team", "plain", 1)
	plain.Spec.EarlyStopping = nil
	plain.Status = v1beta1.TuningJobStatus{}
	f := newFixture(t, median, plain)
	f.signIn()

	var got tuningListView
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs?namespace=team"), "", nil), http.StatusOK, &got)
	if len(got.Items) != 2 {
		t.Fatalf("rows %+v, want two", got.Items)
	}
	p, m := got.Items[0], got.Items[1]
	if p.State != "Pending" || p.EarlyStopping != "" || p.Trials != 0 || p.BestTrial != "" {
		t.Errorf("a search without status or early stopping: %+v, want Pending, no rule, no trials", p)
	}
	if m.State != "Succeeded" || m.EarlyStopping != "medianStop" || m.Algorithm != v1beta1.AlgorithmRandom {
		t.Errorf("a finished median-stop search of the default algorithm: %+v, want Succeeded, medianStop, random", m)
	}
}

// A user who may not list searches across namespaces is shown those of
// their own, with the API's refusal.
func TestTuningJobsFallBackToTheUsersNamespace(t *testing.T) {
	f := newFixture(t, newSearch("team", "lr", 1), newSearch("other", "momentum", 2))
	f.training.PrependReactor("list", "tuningjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: v1beta1.GroupName, Resource: "tuningjobs"}, "",
			errFromString(`User "viewer" cannot list resource "tuningjobs" in API group "batch.tensorstack.dev" at the cluster scope`))
	})
	f.signIn()

	var got tuningListView
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs"), "", nil), http.StatusOK, &got)
	if got.Namespace != "team" || len(got.Items) != 1 || got.Items[0].Name != "lr" {
		t.Errorf("GET /api/tuningjobs: %+v, want team's lr alone", got)
	}
	if got.Refused == nil || got.Refused.Code != http.StatusForbidden || !strings.Contains(got.Refused.Message, "at the cluster scope") {
		t.Errorf("refused %+v, want the API's 403", got.Refused)
	}

	// A namespace the query names is not fallen back from: its refusal is
	// the answer.
	f.training.PrependReactor("list", "tuningjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "secret" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: v1beta1.GroupName, Resource: "tuningjobs"}, "",
			errFromString(`User "viewer" cannot list resource "tuningjobs" in the namespace "secret"`))
	})
	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs?namespace=secret"), "", nil), http.StatusForbidden, &body)
	if !strings.Contains(body.Status.Message, `namespace "secret"`) {
		t.Errorf("status %+v, want the API's 403 for secret", body.Status)
	}
}

// pagedSearches answers lists of tuningjobs from n searches as the API
// does: at most Limit a page, the next from the Continue token; or, with
// ignoreLimit, all at once. It records the Limit of every list.
func pagedSearches(n int, ignoreLimit bool, limits *[]int64) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		opts := action.(clienttesting.ListActionImpl).ListOptions
		*limits = append(*limits, opts.Limit)
		start := 0
		if opts.Continue != "" {
			start, _ = strconv.Atoi(opts.Continue)
		}
		end := n
		if !ignoreLimit && opts.Limit > 0 {
			end = min(n, start+int(opts.Limit))
		}
		list := &v1beta1.TuningJobList{}
		for i := start; i < end; i++ {
			list.Items = append(list.Items, *newSearch("team", fmt.Sprintf("s%04d", i), i))
		}
		if end < n {
			list.Continue = strconv.Itoa(end)
		}
		return true, list, nil
	}
}

// The list reads the searches a page at a time and stops at
// maxListedSearches, saying so.
func TestTuningJobsAreBounded(t *testing.T) {
	tests := map[string]struct {
		searches      int
		ignoreLimit   bool
		wantItems     int
		wantTruncated bool
		wantLists     int
	}{
		"a few":                       {searches: 45, wantItems: 45, wantLists: 3},
		"the most, exactly":           {searches: maxListedSearches, wantItems: maxListedSearches, wantLists: maxListedSearches / tuningListPage},
		"more than the most":          {searches: 1234, wantItems: maxListedSearches, wantTruncated: true, wantLists: maxListedSearches / tuningListPage},
		"a server that ignores Limit": {searches: 600, ignoreLimit: true, wantItems: maxListedSearches, wantTruncated: true, wantLists: 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			var limits []int64
			f.training.PrependReactor("list", "tuningjobs", pagedSearches(tc.searches, tc.ignoreLimit, &limits))
			f.signIn()

			var got tuningListView
			f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs?namespace=team"), "", nil), http.StatusOK, &got)
			if len(got.Items) != tc.wantItems || got.Truncated != tc.wantTruncated {
				t.Errorf("%d rows, truncated %v; want %d, %v", len(got.Items), got.Truncated, tc.wantItems, tc.wantTruncated)
			}
			if len(limits) != tc.wantLists {
				t.Errorf("%d lists, want %d", len(limits), tc.wantLists)
			}
			for i, limit := range limits {
				if limit != tuningListPage {
					t.Errorf("list %d asked for %d searches, want a page of %d", i, limit, tuningListPage)
				}
			}
		})
	}
}

func TestTuningJobDetail(t *testing.T) {
	f := newFixture(t, newSearch("team", "lr", 1))
	f.signIn()

	resp := f.do(http.MethodGet, f.url("/api/tuningjobs/team/lr"), "", nil)
	var raw map[string]json.RawMessage
	f.decode(resp, http.StatusOK, &raw)
	var detail tuningDetail
	for field, v := range map[string]any{"search": &detail.Search, "state": &detail.State, "trialKind": &detail.TrialKind, "trialResource": &detail.TrialResource} {
		if err := json.Unmarshal(raw[field], v); err != nil {
			t.Fatalf("%s: %v in %s", field, err, raw[field])
		}
	}
	search := detail.Search
	if search.Kind != "TuningJob" || search.APIVersion != "batch.tensorstack.dev/v1beta1" {
		t.Errorf("search of kind %q %q, want the full kind the typed client leaves out", search.APIVersion, search.Kind)
	}
	if search.ManagedFields != nil {
		t.Errorf("managed fields %+v, want none", search.ManagedFields)
	}
	if detail.State != "Running" || detail.TrialKind != "PyTorchTrainingJob" || detail.TrialResource != v1beta1.PyTorchTrainingJobResource {
		t.Errorf("state %q, trials of %q %q; want Running, PyTorchTrainingJob pytorchtrainingjobs", detail.State, detail.TrialKind, detail.TrialResource)
	}
	want := newSearch("team", "lr", 1).Status.Trials
	if !reflect.DeepEqual(search.Status.Trials, want) {
		t.Errorf("trials:\n got %+v\nwant %+v", search.Status.Trials, want)
	}
	if len(search.Spec.Parameters) != 2 || !search.Spec.Parameters[0].LogScale {
		t.Errorf("parameters %+v, want the spec's two, lr on a log scale", search.Spec.Parameters)
	}

	// Trials of a kind this dashboard does not know: no link to make.
	unknown := newSearch("team", "newer", 2)
	unknown.Spec.TrialTemplate = v1beta1.TrainingJobTemplate{}
	if err := f.training.Tracker().Add(unknown); err != nil {
		t.Fatal(err)
	}
	var other tuningDetail
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs/team/newer"), "", nil), http.StatusOK, &other)
	if other.TrialKind != "" || other.TrialResource != "" || other.Search.Name != "newer" {
		t.Errorf("a template of no known kind: %q %q, want none", other.TrialKind, other.TrialResource)
	}
}

func TestTuningJobDetailPassesTheRefusalThrough(t *testing.T) {
	f := newFixture(t, newSearch("team", "lr", 1))
	f.training.PrependReactor("get", "tuningjobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "secret" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: v1beta1.GroupName, Resource: "tuningjobs"}, "lr",
			errFromString(`User "viewer" cannot get resource "tuningjobs" in the namespace "secret"`))
	})
	f.signIn()

	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs/team/missing"), "", nil), http.StatusNotFound, &body)
	if body.Status.Reason != metav1.StatusReasonNotFound || !strings.Contains(body.Status.Message, `"missing"`) {
		t.Errorf("status %+v, want the API's 404 naming the search", body.Status)
	}
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs/secret/lr"), "", nil), http.StatusForbidden, &body)
	if !strings.Contains(body.Status.Message, `cannot get resource "tuningjobs"`) {
		t.Errorf("status %+v, want the API's 403", body.Status)
	}
	// Not a route: a search is named by its namespace and name.
	f.decode(f.do(http.MethodGet, f.url("/api/tuningjobs/team"), "", nil), http.StatusNotFound, &body)
	if !strings.Contains(body.Status.Message, "no such API") {
		t.Errorf("status %+v, want the dashboard's 404", body.Status)
	}
}

// In the cluster, the searches are read with the signed-in user's token,
// never the dashboard's own credentials.
func TestInClusterSearchesAreReadAsTheUser(t *testing.T) {
	dashboard, client, api, _ := inClusterFixture(t)
	if resp, body := send(t, client, http.MethodPost, dashboard.URL+"/api/signin", `{"token":"alice-token"}`, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	before := len(api.seen())
	resp, body := send(t, client, http.MethodGet, dashboard.URL+"/api/tuningjobs?namespace=team", "", nil)
	var list tuningListView
	if err := json.Unmarshal([]byte(body), &list); resp.StatusCode != http.StatusOK || err != nil || len(list.Items) != 1 || list.Items[0].Name != "lr" {
		t.Fatalf("GET /api/tuningjobs: %d %s, want team's lr", resp.StatusCode, body)
	}
	resp, body = send(t, client, http.MethodGet, dashboard.URL+"/api/tuningjobs/team/lr", "", nil)
	var detail tuningDetail
	if err := json.Unmarshal([]byte(body), &detail); resp.StatusCode != http.StatusOK || err != nil || len(detail.Search.Status.Trials) != 2 {
		t.Fatalf("GET /api/tuningjobs/team/lr: %d %s, want lr with its two trials", resp.StatusCode, body)
	}
	seen := api.seen()[before:]
	if len(seen) != 2 {
		t.Fatalf("%d requests reached the API, want the list and the get", len(seen))
	}
	for _, authorization := range seen {
		if authorization != "Bearer alice-token" {
			t.Errorf("a request reached the API with %q, want alice's token", authorization)
		}
	}
}
