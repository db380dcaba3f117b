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
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The History page shows the records the API server keeps of deleted jobs
// (TrainingJobRecords): GET /api/records lists them as rows, GET
// /api/records/{namespace}/{name} gives one whole, DELETE removes one.
//
// The list asks the API for the records' Table (the columns of kubectl get
// trainingjobrecords) with each row's metadata, rather than the records: a
// record holds the whole job, up to 500 progress samples and 30 events, tens
// of KiB, while a row of the Table is a few hundred bytes. 10,000 records
// decoded whole would be hundreds of MiB; their Table, read recordsListPage
// rows at a time, is a few. The page reads the list again every 30 seconds
// (records only come and go, never change): a watch would have to keep
// every record's row in the server for every open page, and the informers
// that serve watches list whole objects.

// recordsResource is the records' resource.
const recordsResource = "trainingjobrecords"

// tableAccept asks the API server for the Table form of a list.
const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io"

// Bounds of GET /api/records: the server reads the Table recordsListPage
// rows at a time, holding one of its list slots (listSlots) for each page,
// and lists at most maxListedRecords rows. The API keeps 1,000 records a
// namespace by default (--job-records-per-namespace).
const (
	recordsListPage  = 1000
	maxListedRecords = 20000
)

// The columns of the records' Table that the rows read, by name
// (pkg/registry/trainingjobrecord/table.go). A column a server does not have
// leaves its field empty.
const (
	columnJob     = "Job"
	columnKind    = "Kind"
	columnPhase   = "Phase"
	columnRan     = "Ran"
	columnStep    = "Step"
	columnLeftOut = "Left-Out"
)

// recordSummary is a record as a row of the History list shows it, and no
// more: the list holds 10,000 of them and more.
type recordSummary struct {
	Namespace string `json:"namespace"`
	// Name is the record's: the job's name and the start of its UID.
	Name    string `json:"name"`
	JobName string `json:"jobName"`
	JobKind string `json:"jobKind"`
	Phase   string `json:"phase,omitempty"`
	// Ran is how long the job ran, as kubectl prints it: from its start to
	// its completion, else its deletion; empty for a job that never ran.
	Ran string `json:"ran,omitempty"`
	// Deleted is when the job was deleted: the record's creation, which the
	// server writes as it deletes the job.
	Deleted metav1.Time `json:"deleted"`
	Step    *int64      `json:"step,omitempty"`
	// LeftOut names what the record does not keep, to stay within its size.
	LeftOut []string `json:"leftOut,omitempty"`
}

// recordListView is the answer of GET /api/records.
type recordListView struct {
	// Namespace is the one listed; "" for every namespace.
	Namespace string          `json:"namespace"`
	Items     []recordSummary `json:"items"`
	// Truncated says that there are more records than maxListedRecords:
	// Items are the first the API gave (by namespace and name).
	Truncated bool `json:"truncated,omitempty"`
	// Refused is the API's refusal to list every namespace's records, when
	// the user's own namespace was listed instead.
	Refused *metav1.Status `json:"refused,omitempty"`
}

// records lists the records of the query's namespace, or of every
// namespace; where the user may not list them across namespaces, those of
// the user's own, with the API's refusal. The jobs deleted last come first.
func (s *Server) records(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	namespace := r.URL.Query().Get("namespace")
	view, err := s.listRecords(r.Context(), c, namespace)
	if namespace == "" && apierrors.IsForbidden(err) {
		refused := statusOf(err)
		view, err = s.listRecords(r.Context(), c, c.Namespace)
		view.Refused = &refused
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	slices.SortStableFunc(view.Items, func(a, b recordSummary) int {
		if c := b.Deleted.Compare(a.Deleted.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	writeJSON(w, http.StatusOK, view)
}

// listRecords reads the rows of a namespace's records ("" for every
// namespace), a page at a time, up to maxListedRecords.
func (s *Server) listRecords(ctx context.Context, c Clients, namespace string) (recordListView, error) {
	view := recordListView{Namespace: namespace, Items: []recordSummary{}}
	next := ""
	for {
		var err error
		next, err = s.listRecordPage(ctx, c, namespace, next, &view)
		if err != nil || next == "" {
			return view, err
		}
	}
}

// listRecordPage reads one page of the records' Table into view's rows,
// holding a list slot meanwhile, and returns the next page's token, or ""
// after the last page or once view has maxListedRecords rows.
func (s *Server) listRecordPage(ctx context.Context, c Clients, namespace, continueToken string, view *recordListView) (string, error) {
	release, err := s.lists.hold(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	request := c.Training.BatchV1beta1().RESTClient().Get().
		Namespace(namespace).
		Resource(recordsResource).
		SetHeader("Accept", tableAccept).
		Param("includeObject", string(metav1.IncludeMetadata)).
		Param("limit", strconv.Itoa(recordsListPage))
	if continueToken != "" {
		request = request.Param("continue", continueToken)
	}
	// Stream's error is the API's Status when the API refused; the page
	// is decoded as it arrives.
	body, err := request.Stream(ctx)
	if err != nil {
		return "", err
	}
	defer body.Close()
	var table recordTable
	if err := json.NewDecoder(body).Decode(&table); err != nil {
		return "", fmt.Errorf("reading the records' table: %w", err)
	}
	columns := map[string]int{}
	for i, column := range table.ColumnDefinitions {
		columns[column.Name] = i
	}
	for i := range table.Rows {
		if len(view.Items) == maxListedRecords {
			view.Truncated = true
			return "", nil
		}
		view.Items = append(view.Items, summarizeRecordRow(&table.Rows[i], columns))
	}
	if table.Metadata.Continue != "" && len(view.Items) == maxListedRecords {
		view.Truncated = true
		return "", nil
	}
	return table.Metadata.Continue, nil
}

// recordTable is what the rows read of a page of the records' Table
// (metav1.Table): the columns' names, each row's cells and the part of its
// metadata they show, and the next page's token. Decoded straight into
// it, a page keeps no copy of each row's object.
type recordTable struct {
	ColumnDefinitions []struct {
		Name string `json:"name"`
	} `json:"columnDefinitions"`
	Rows     []recordTableRow `json:"rows"`
	Metadata metav1.ListMeta  `json:"metadata"`
}

type recordTableRow struct {
	Cells  []any `json:"cells"`
	Object struct {
		Metadata struct {
			Namespace         string            `json:"namespace"`
			Name              string            `json:"name"`
			CreationTimestamp metav1.Time       `json:"creationTimestamp"`
			Labels            map[string]string `json:"labels"`
		} `json:"metadata"`
	} `json:"object"`
}

// summarizeRecordRow reads a row of the records' Table, whose object is
// the record's metadata.
func summarizeRecordRow(row *recordTableRow, columns map[string]int) recordSummary {
	meta := &row.Object.Metadata
	cell := func(name string) string {
		i, ok := columns[name]
		if !ok || i >= len(row.Cells) {
			return ""
		}
		text, _ := row.Cells[i].(string)
		if text == "<none>" {
			return ""
		}
		return text
	}
	summary := recordSummary{
		Namespace: meta.Namespace,
		Name:      meta.Name,
		JobName:   cell(columnJob),
		JobKind:   cell(columnKind),
		Phase:     cell(columnPhase),
		Ran:       cell(columnRan),
		Deleted:   meta.CreationTimestamp,
	}
	if summary.JobName == "" {
		summary.JobName = meta.Labels[v1beta1.LabelJobName]
	}
	if summary.JobKind == "" {
		summary.JobKind = meta.Labels[v1beta1.LabelJobKind]
	}
	if step, err := strconv.ParseInt(cell(columnStep), 10, 64); err == nil {
		summary.Step = &step
	}
	// The server prints the list as Go does: [progress events].
	if leftOut := strings.Trim(cell(columnLeftOut), "[]"); leftOut != "" {
		summary.LeftOut = strings.Fields(leftOut)
	}
	return summary
}

// recordDetail is what a record's page shows: the record whole, the kind's
// resource (empty for a kind this dashboard does not know) and the job's
// spec as YAML, as the job page shows it.
type recordDetail struct {
	Record   v1beta1.TrainingJobRecord `json:"record"`
	Resource string                    `json:"resource,omitempty"`
	YAML     string                    `json:"yaml"`
}

// record gives one record, as the user may get it. Its size is the API's to
// bound (batch.MaxTrainingJobRecordBytes).
func (s *Server) record(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	record, err := c.Training.BatchV1beta1().TrainingJobRecords(r.PathValue("namespace")).Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		writeAPIError(w, err)
		return
	}
	record.ManagedFields = nil
	record.APIVersion, record.Kind = v1beta1.SchemeGroupVersion.String(), "TrainingJobRecord"
	detail := recordDetail{Record: *record}
	if kind, ok := kindByKind(record.JobKind); ok {
		detail.Resource = kind.Resource
	}
	if detail.YAML, err = recordedManifestYAML(record.Job.Raw); err != nil {
		writeError(w, http.StatusInternalServerError, "reading the record's job: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, detail)
}

// recordedManifestYAML is the recorded job as its author would write it,
// as manifestYAML makes it of a job: without status and managed fields.
func recordedManifestYAML(raw []byte) (string, error) {
	if len(raw) == 0 {
		return "", nil
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return "", err
	}
	delete(fields, "status")
	if metadata, ok := fields["metadata"].(map[string]any); ok {
		delete(metadata, "managedFields")
	}
	out, err := yaml.Marshal(fields)
	return string(out), err
}

// deleteRecord removes a record; RBAC grants it to editors.
func (s *Server) deleteRecord(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	namespace, name := r.PathValue("namespace"), r.PathValue("name")
	if err := c.Training.BatchV1beta1().TrainingJobRecords(namespace).Delete(r.Context(), name, metav1.DeleteOptions{}); err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusOK,
		Message: fmt.Sprintf("TrainingJobRecord %s/%s deleted", namespace, name)})
}
