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
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// recordsDeleted is when the test's first job was deleted.
var recordsDeleted = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// tableRecord is a record as a row of the API's Table: its cells, in the
// columns of pkg/registry/trainingjobrecord/table.go, and its metadata.
type tableRecord struct {
	namespace, name, job, kind, phase, ran, step, leftOut string
	// deletedMinutes is when its job was deleted, after recordsDeleted.
	deletedMinutes int
}

// recordsAPI stands for the API server's trainingjobrecords: it answers
// lists in the Table form only, a page of at most limit rows at a time, the
// next from the continue token; forbidden namespaces ("" for every
// namespace) are its 403. It records each list's query and Accept header.
type recordsAPI struct {
	records   []tableRecord
	forbidden map[string]bool

	mu      sync.Mutex
	queries []string
	accepts []string
}

func (a *recordsAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.queries = append(a.queries, r.URL.RawQuery)
	a.accepts = append(a.accepts, r.Header.Get("Accept"))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	const prefix = "/apis/batch.tensorstack.dev/v1beta1/"
	namespace := ""
	switch path := strings.TrimPrefix(r.URL.Path, prefix); {
	case path == recordsResource:
	case strings.HasPrefix(path, "namespaces/") && strings.HasSuffix(path, "/"+recordsResource):
		namespace = strings.TrimSuffix(strings.TrimPrefix(path, "namespaces/"), "/"+recordsResource)
	default:
		http.NotFound(w, r)
		return
	}
	if a.forbidden[namespace] {
		scope := "at the cluster scope"
		if namespace != "" {
			scope = fmt.Sprintf("in the namespace %q", namespace)
		}
		status := apierrors.NewForbidden(schema.GroupResource{Group: v1beta1.GroupName, Resource: recordsResource}, "",
			errFromString(`User "viewer" cannot list resource "trainingjobrecords" in API group "batch.tensorstack.dev" `+scope)).Status()
		status.Kind, status.APIVersion = "Status", "v1"
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(status)
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "as=Table") {
		w.WriteHeader(http.StatusNotAcceptable)
		return
	}
	var matching []tableRecord
	for _, rec := range a.records {
		if namespace == "" || rec.namespace == namespace {
			matching = append(matching, rec)
		}
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("continue"))
	end := len(matching)
	if limit, _ := strconv.Atoi(r.URL.Query().Get("limit")); limit > 0 {
		end = min(end, start+limit)
	}
	table := metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"},
		ColumnDefinitions: []metav1.TableColumnDefinition{
			{Name: "Name"}, {Name: "Job"}, {Name: "Kind"}, {Name: "Phase"}, {Name: "Ran"}, {Name: "Deleted"},
			{Name: "Created", Priority: 1}, {Name: "Step", Priority: 1}, {Name: "Left-Out", Priority: 1},
		},
		Rows: []metav1.TableRow{},
	}
	if end < len(matching) {
		table.Continue = strconv.Itoa(end)
	}
	for _, rec := range matching[start:end] {
		deleted := recordsDeleted.Add(time.Duration(rec.deletedMinutes) * time.Minute)
		meta := metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Namespace: rec.namespace, Name: rec.name, UID: types.UID("uid-" + rec.name),
				CreationTimestamp: metav1.NewTime(deleted),
				Labels:            map[string]string{v1beta1.LabelJobName: rec.job, v1beta1.LabelJobKind: rec.kind}},
		}
		raw, err := json.Marshal(meta)
		if err != nil {
			panic(err)
		}
		table.Rows = append(table.Rows, metav1.TableRow{
			Cells: []any{rec.name, rec.job, rec.kind, rec.phase, rec.ran, "5m",
				deleted.Add(-time.Hour).Format(time.RFC3339), rec.step, rec.leftOut},
			Object: runtime.RawExtension{Raw: raw},
		})
	}
	_ = json.NewEncoder(w).Encode(table)
}

// newRecordsFixture is a dashboard whose training client reaches api over
// HTTP, as the real one reaches the API server: the fake clientset has no
// REST client for the Table form.
func newRecordsFixture(t *testing.T, api *recordsAPI) *fixture {
	t.Helper()
	apiServer := httptest.NewServer(api)
	t.Cleanup(apiServer.Close)
	training, err := versioned.NewForConfig(&rest.Config{Host: apiServer.URL})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	f.server.source = StaticClients{Training: training, Kube: f.kube, Namespace: "team"}
	f.signIn()
	return f
}

func TestRecordsListsTheTableRows(t *testing.T) {
	api := &recordsAPI{records: []tableRecord{
		{namespace: "team", name: "mnist-0a1b2c3d", job: "mnist", kind: "PyTorchTrainingJob", phase: "Failed", ran: "12m",
			step: "300", leftOut: "[progress events]", deletedMinutes: 1},
		{namespace: "other", name: "bert-4e5f6a7b", job: "bert", kind: "PyTorchTrainingJob", phase: "Succeeded", ran: "2h",
			step: "<none>", leftOut: "<none>", deletedMinutes: 3},
		{namespace: "team", name: "old-8c9d0e1f", job: "old", kind: "NoSuchTrainingJob", phase: "<none>", ran: "<none>",
			step: "<none>", leftOut: "<none>", deletedMinutes: 2},
	}}
	f := newRecordsFixture(t, api)

	var got recordListView
	f.decode(f.do(http.MethodGet, f.url("/api/records"), "", nil), http.StatusOK, &got)
	names := []string{}
	for _, item := range got.Items {
		names = append(names, item.Namespace+"/"+item.Name)
	}
	if want := []string{"other/bert-4e5f6a7b", "team/old-8c9d0e1f", "team/mnist-0a1b2c3d"}; !reflect.DeepEqual(names, want) ||
		got.Namespace != "" || got.Truncated || got.Refused != nil {
		t.Errorf("GET /api/records: %v in %q (truncated %v, refused %v), want every namespace's %v, deleted last first",
			names, got.Namespace, got.Truncated, got.Refused, want)
	}
	want := recordSummary{Namespace: "team", Name: "mnist-0a1b2c3d", JobName: "mnist", JobKind: "PyTorchTrainingJob",
		Phase: "Failed", Ran: "12m", Deleted: metav1.NewTime(recordsDeleted.Add(time.Minute)), Step: ptr.To[int64](300),
		LeftOut: []string{"progress", "events"}}
	last := got.Items[len(got.Items)-1]
	if !last.Deleted.Equal(&want.Deleted) {
		t.Errorf("deleted %v, want %v", last.Deleted, want.Deleted)
	}
	last.Deleted = want.Deleted // the same time, read back in the local zone
	if !reflect.DeepEqual(last, want) {
		t.Errorf("row:\n got %+v\nwant %+v", last, want)
	}
	// "<none>" cells are empty fields.
	if old := got.Items[1]; old.Phase != "" || old.Ran != "" || old.Step != nil || old.LeftOut != nil || old.JobKind != "NoSuchTrainingJob" {
		t.Errorf("a record of a job that never ran, of an unknown kind: %+v", old)
	}
	// The API was asked for the Table with each row's metadata, a page at
	// a time: never for the records themselves.
	for i, accept := range api.accepts {
		query := api.queries[i]
		if accept != tableAccept || !strings.Contains(query, "includeObject=Metadata") || !strings.Contains(query, "limit="+strconv.Itoa(recordsListPage)) {
			t.Errorf("list %d: Accept %q, query %q; want the Table with metadata, %d rows a page", i, accept, query, recordsListPage)
		}
	}

	// The query's namespace alone.
	f.decode(f.do(http.MethodGet, f.url("/api/records?namespace=other"), "", nil), http.StatusOK, &got)
	if got.Namespace != "other" || len(got.Items) != 1 || got.Items[0].JobName != "bert" {
		t.Errorf("GET /api/records?namespace=other: %+v, want bert alone", got)
	}
}

// A user who may not list records across namespaces is shown those of
// their own, with the API's refusal; a namespace the query names is not
// fallen back from.
func TestRecordsFallBackToTheUsersNamespace(t *testing.T) {
	api := &recordsAPI{
		records: []tableRecord{
			{namespace: "team", name: "mnist-0a1b2c3d", job: "mnist", kind: "PyTorchTrainingJob", phase: "Failed"},
			{namespace: "other", name: "bert-4e5f6a7b", job: "bert", kind: "PyTorchTrainingJob", phase: "Succeeded"},
		},
		forbidden: map[string]bool{"": true, "secret": true},
	}
	f := newRecordsFixture(t, api)

	var got recordListView
	f.decode(f.do(http.MethodGet, f.url("/api/records"), "", nil), http.StatusOK, &got)
	if got.Namespace != "team" || len(got.Items) != 1 || got.Items[0].JobName != "mnist" {
		t.Errorf("GET /api/records: %+v, want team's mnist alone", got)
	}
	if got.Refused == nil || got.Refused.Code != http.StatusForbidden || !strings.Contains(got.Refused.Message, "at the cluster scope") {
		t.Errorf("refused %+v, want the API's 403", got.Refused)
	}

	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/records?namespace=secret"), "", nil), http.StatusForbidden, &body)
	if !strings.Contains(body.Status.Message, `namespace "secret"`) {
		t.Errorf("status %+v, want the API's 403 for secret", body.Status)
	}
}

// The list reads the Table a page at a time and stops at maxListedRecords,
// saying so.
func TestRecordsAreBounded(t *testing.T) {
	tests := map[string]struct {
		records       int
		wantTruncated bool
		wantLists     int
	}{
		"a few pages":        {records: 2*recordsListPage + 1, wantLists: 3},
		"more than the most": {records: maxListedRecords + 5, wantTruncated: true, wantLists: maxListedRecords / recordsListPage},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			api := &recordsAPI{}
			for i := range tc.records {
				api.records = append(api.records, tableRecord{namespace: "team", name: fmt.Sprintf("job-%05d-0a1b2c3d", i),
					job: fmt.Sprintf("job-%05d", i), kind: "PyTorchTrainingJob", phase: "Succeeded", deletedMinutes: i})
			}
			f := newRecordsFixture(t, api)
			var got recordListView
			f.decode(f.do(http.MethodGet, f.url("/api/records"), "", nil), http.StatusOK, &got)
			if want := min(tc.records, maxListedRecords); len(got.Items) != want || got.Truncated != tc.wantTruncated {
				t.Errorf("%d rows (truncated %v), want %d (truncated %v)", len(got.Items), got.Truncated, want, tc.wantTruncated)
			}
			if len(api.queries) != tc.wantLists {
				t.Errorf("%d lists, want %d: %v", len(api.queries), tc.wantLists, api.queries)
			}
		})
	}
}

func newRecord(namespace, name string) *v1beta1.TrainingJobRecord {
	job := map[string]any{
		"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "PyTorchTrainingJob",
		"metadata": map[string]any{"name": "mnist", "namespace": namespace, "managedFields": []any{map[string]any{"manager": "kubectl"}}},
		"spec":     map[string]any{"replicaSpecs": []any{map[string]any{"type": "master", "replicas": 1}}},
		"status":   map[string]any{"phase": "Failed", "attempts": []any{map[string]any{"number": 1}}},
	}
	raw, err := json.Marshal(job)
	if err != nil {
		panic(err)
	}
	return &v1beta1.TrainingJobRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "apiserver"}}},
		JobKind:    "PyTorchTrainingJob", JobName: "mnist", Phase: v1beta1.JobFailed,
		DeletionTime: metav1.NewTime(recordsDeleted),
		Job:          runtime.RawExtension{Raw: raw},
		Progress:     []v1beta1.ProgressSample{{Step: ptr.To[int64](1), Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "2.5"}}}},
		Events:       []v1beta1.RecordedEvent{{Type: "Warning", Reason: "BackOff", Message: "restarting", Count: 2}},
		LeftOut:      []string{"events"},
	}
}

func TestRecordGivesTheWholeRecordAndTheSpec(t *testing.T) {
	f := newFixture(t, newRecord("team", "mnist-0a1b2c3d"))
	f.signIn()

	var got struct {
		Record   map[string]any `json:"record"`
		Resource string         `json:"resource"`
		YAML     string         `json:"yaml"`
	}
	f.decode(f.do(http.MethodGet, f.url("/api/records/team/mnist-0a1b2c3d"), "", nil), http.StatusOK, &got)
	record, _ := json.Marshal(got.Record)
	for _, want := range []string{`"kind":"TrainingJobRecord"`, `"jobName":"mnist"`, `"progress":[`, `"events":[`,
		`"leftOut":["events"]`, `"job":{`, `"attempts":[`} {
		if !strings.Contains(string(record), want) {
			t.Errorf("record %s: no %s", record, want)
		}
	}
	if strings.Contains(string(record), "apiserver") {
		t.Errorf("record %s: the record's managed fields are kept", record)
	}
	if got.Resource != "pytorchtrainingjobs" {
		t.Errorf("resource %q, want pytorchtrainingjobs", got.Resource)
	}
	if !strings.Contains(got.YAML, "kind: PyTorchTrainingJob") || !strings.Contains(got.YAML, "replicaSpecs:") ||
		strings.Contains(got.YAML, "status:") || strings.Contains(got.YAML, "managedFields") {
		t.Errorf("YAML:\n%s\nwant the job's manifest without status or managed fields", got.YAML)
	}

	var body errorBody
	f.decode(f.do(http.MethodGet, f.url("/api/records/team/gone-0a1b2c3d"), "", nil), http.StatusNotFound, &body)
	if body.Status.Reason != metav1.StatusReasonNotFound {
		t.Errorf("status %+v, want the API's 404", body.Status)
	}
}

func TestDeleteRecordNeedsTheCSRFTokenAndPassesTheAPIsRefusal(t *testing.T) {
	f := newFixture(t, newRecord("team", "mnist-0a1b2c3d"), newRecord("locked", "bert-4e5f6a7b"))
	f.training.PrependReactor("delete", recordsResource, func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetNamespace() != "locked" {
			return false, nil, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: v1beta1.GroupName, Resource: recordsResource}, "bert-4e5f6a7b",
			errFromString(`User "viewer" cannot delete resource "trainingjobrecords" in the namespace "locked"`))
	})
	f.signIn()

	// Without the session's token: refused before the API is asked.
	resp := f.do(http.MethodDelete, f.url("/api/records/team/mnist-0a1b2c3d"), "", http.Header{"Origin": {f.http.URL}})
	f.decode(resp, http.StatusForbidden, nil)
	f.decode(f.act(http.MethodDelete, "/api/records/team/mnist-0a1b2c3d", ""), http.StatusOK, nil)
	f.decode(f.do(http.MethodGet, f.url("/api/records/team/mnist-0a1b2c3d"), "", nil), http.StatusNotFound, nil)

	var body errorBody
	f.decode(f.act(http.MethodDelete, "/api/records/locked/bert-4e5f6a7b", ""), http.StatusForbidden, &body)
	if !strings.Contains(body.Status.Message, `cannot delete resource "trainingjobrecords"`) {
		t.Errorf("status %+v, want the API's 403", body.Status)
	}
}
