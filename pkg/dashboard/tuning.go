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
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The searches (TuningJobs) have pages of their own: GET /api/tuningjobs
// lists them as rows, GET /api/tuningjobs/{namespace}/{name} gives one
// whole, with its trials. A search is not a training job kind (jobKinds): it
// makes training jobs, its trials, which the jobs list and the job pages
// show as any other.

// tuningJobKind is the kind of a search, which the typed client leaves out
// of the objects it returns.
const tuningJobKind = "TuningJob"

// Bounds of GET /api/tuningjobs. A search keeps up to batch.MaxTrials
// trials, each with its parameters and curve, and is decoded whole: up to
// about a MiB. The server reads the searches tuningListPage at a time,
// holding one of its list slots (listSlots) for each page and keeping only
// the rows, and lists at most maxListedSearches of them.
const (
	maxListedSearches = 500
	tuningListPage    = 20
)

// tuningSummary is a search as a row of the searches list shows it: the
// list gets these rather than whole searches, whose trials are most of
// their size.
type tuningSummary struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	UID       string      `json:"uid"`
	Created   metav1.Time `json:"created"`
	// State is the search's one-word state, the one kubectl get shows:
	// Pending, Running, Suspended, Succeeded or Failed.
	State     string                  `json:"state"`
	Objective v1beta1.TuningObjective `json:"objective"`
	// Algorithm chooses the values: random, grid or tpe.
	Algorithm v1beta1.TuningAlgorithmName `json:"algorithm"`
	// EarlyStopping is the rule that stops trials: asha, medianStop, or
	// empty for none.
	EarlyStopping string              `json:"earlyStopping,omitempty"`
	Counts        v1beta1.TrialCounts `json:"counts"`
	BestTrial     string              `json:"bestTrial,omitempty"`
	BestValue     string              `json:"bestValue,omitempty"`
	// Trials counts the trials made so far, of MaxTrials.
	Trials         int   `json:"trials"`
	MaxTrials      int32 `json:"maxTrials"`
	ParallelTrials int32 `json:"parallelTrials"`
}

// tuningListView is the answer of GET /api/tuningjobs.
type tuningListView struct {
	// Namespace is the one listed; "" for every namespace.
	Namespace string          `json:"namespace"`
	Items     []tuningSummary `json:"items"`
	// Truncated says that there are more searches than maxListedSearches:
	// Items are the first the API gave (by namespace and name).
	Truncated bool `json:"truncated,omitempty"`
	// Refused is the API's refusal to list every namespace's searches, when
	// the user's own namespace was listed instead.
	Refused *metav1.Status `json:"refused,omitempty"`
}

// tuningJobs lists the searches of the query's namespace, or of every
// namespace; where the user may not list them across namespaces, those of
// the user's own, with the API's refusal. Newest first, as the jobs list.
func (s *Server) tuningJobs(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	namespace := r.URL.Query().Get("namespace")
	view, err := s.listSearches(r.Context(), c, namespace)
	if namespace == "" && apierrors.IsForbidden(err) {
		refused := statusOf(err)
		view, err = s.listSearches(r.Context(), c, c.Namespace)
		view.Refused = &refused
	}
	if err != nil {
		writeAPIError(w, err)
		return
	}
	slices.SortStableFunc(view.Items, func(a, b tuningSummary) int {
		if c := b.Created.Compare(a.Created.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	writeJSON(w, http.StatusOK, view)
}

// listSearches reads the rows of a namespace's searches ("" for every
// namespace), a page at a time, up to maxListedSearches.
func (s *Server) listSearches(ctx context.Context, c Clients, namespace string) (tuningListView, error) {
	view := tuningListView{Namespace: namespace, Items: []tuningSummary{}}
	opts := metav1.ListOptions{Limit: tuningListPage}
	for {
		next, err := s.listSearchPage(ctx, c, namespace, opts, &view)
		if err != nil || next == "" {
			return view, err
		}
		opts.Continue = next
	}
}

// listSearchPage reads one page of searches into view's rows, holding a list
// slot while the page is decoded, and returns the next page's token, or ""
// after the last page or once view has maxListedSearches rows.
func (s *Server) listSearchPage(ctx context.Context, c Clients, namespace string, opts metav1.ListOptions, view *tuningListView) (string, error) {
	release, err := s.lists.hold(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	list, err := c.Training.BatchV1beta1().TuningJobs(namespace).List(ctx, opts)
	if err != nil {
		return "", err
	}
	for i := range list.Items {
		if len(view.Items) == maxListedSearches {
			view.Truncated = true
			return "", nil
		}
		view.Items = append(view.Items, summarizeSearch(&list.Items[i]))
	}
	if list.Continue != "" && len(view.Items) == maxListedSearches {
		view.Truncated = true
		return "", nil
	}
	return list.Continue, nil
}

func summarizeSearch(search *v1beta1.TuningJob) tuningSummary {
	spec, status := &search.Spec, &search.Status
	row := tuningSummary{
		Namespace:      search.Namespace,
		Name:           search.Name,
		UID:            string(search.UID),
		Created:        search.CreationTimestamp,
		State:          tuningState(status),
		Objective:      spec.Objective,
		Algorithm:      spec.Algorithm.Name,
		Counts:         status.Counts,
		BestTrial:      status.BestTrial,
		BestValue:      status.BestValue,
		Trials:         len(status.Trials),
		MaxTrials:      spec.MaxTrials,
		ParallelTrials: spec.ParallelTrials,
	}
	if row.Algorithm == "" {
		row.Algorithm = v1beta1.AlgorithmRandom
	}
	if es := spec.EarlyStopping; es != nil && es.ASHA != nil {
		row.EarlyStopping = "asha"
	} else if es != nil && es.MedianStop != nil {
		row.EarlyStopping = "medianStop"
	}
	return row
}

// tuningState is the search's one-word state by the API's rule
// (batch.TuningState), which reads the conditions alone.
func tuningState(status *v1beta1.TuningJobStatus) string {
	return batch.TuningState(&batch.TuningJobStatus{Conditions: status.Conditions})
}

// tuningDetail is what a search's page shows: the search whole, its spec
// and every trial, with its one-word state and the kind of job its trials
// are, for links to their pages.
type tuningDetail struct {
	Search v1beta1.TuningJob `json:"search"`
	State  string            `json:"state"`
	// TrialKind and TrialResource are the kind of the trials' jobs; both
	// are empty for a kind this dashboard does not know.
	TrialKind     string `json:"trialKind,omitempty"`
	TrialResource string `json:"trialResource,omitempty"`
}

// tuningJob gives one search, as the user may get it. Its size is the API's
// to bound: at most batch.MaxTrials trials of batch.MaxTrialCurvePoints
// points each.
func (s *Server) tuningJob(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	search, err := c.Training.BatchV1beta1().TuningJobs(r.PathValue("namespace")).Get(r.Context(), r.PathValue("name"), metav1.GetOptions{})
	if err != nil {
		writeAPIError(w, err)
		return
	}
	search.ManagedFields = nil
	search.APIVersion, search.Kind = v1beta1.SchemeGroupVersion.String(), tuningJobKind
	detail := tuningDetail{Search: *search, State: tuningState(&search.Status)}
	if _, kind, ok := internalTemplate(&search.Spec.TrialTemplate); ok {
		detail.TrialKind, detail.TrialResource = kind.Name, kind.Resource
	}
	writeJSON(w, http.StatusOK, detail)
}
