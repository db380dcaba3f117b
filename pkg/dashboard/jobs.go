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
	"net/http"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// target is the job a request's path names, with the clients to reach it.
type target struct {
	clients   Clients
	kind      jobKind
	namespace string
	name      string
}

func (t target) client() jobClient { return t.kind.Client(t.clients.Training, t.namespace) }

// resolve reads the job a request's path names; it answers the request itself
// and returns false when it names none.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request) (target, bool) {
	kind, ok := kindByResource(r.PathValue("resource"))
	if !ok {
		writeError(w, http.StatusNotFound, "no training job resource "+strconv.Quote(r.PathValue("resource")))
		return target{}, false
	}
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return target{}, false
	}
	return target{clients: c, kind: kind, namespace: r.PathValue("namespace"), name: r.PathValue("name")}, true
}

// watchList streams the list's rows: every job of every kind in the
// namespace the query names, or in all of them. Where the user may not list
// jobs across namespaces, it follows the user's own namespace instead and
// says so with a "refused" event.
func (s *Server) watchList(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	namespace := r.URL.Query().Get("namespace")
	if namespace == "" && !s.mayListEverywhere(r, c) {
		namespace = c.Namespace
	}
	streamJobs(w, r, c, watchScope{namespace: namespace, keep: keepListed, lists: s.lists,
		feeds: s.feeds, identity: identityOf(r.Context())}, func(_ jobKind, kept any) any {
		return kept.(*listedJob).row
	})
}

// mayListEverywhere tells whether the user may list every kind in all
// namespaces. A user who may list jobs only in some namespaces is still
// shown the jobs of their own.
func (s *Server) mayListEverywhere(r *http.Request, c Clients) bool {
	for _, kind := range jobKinds {
		if _, err := kind.Client(c.Training, "").List(r.Context(), metav1.ListOptions{Limit: 1}); err != nil {
			return false
		}
	}
	return true
}

// watchJob streams one job, whole, for its page.
func (s *Server) watchJob(w http.ResponseWriter, r *http.Request) {
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	byName := fields.OneTermEqualSelector("metadata.name", t.name).String()
	scope := watchScope{
		namespace: t.namespace,
		kinds:     []jobKind{t.kind},
		tweak:     func(opts *metav1.ListOptions) { opts.FieldSelector = byName },
		lists:     s.lists,
		feeds:     s.feeds,
		identity:  identityOf(r.Context()),
	}
	streamJobs(w, r, t.clients, scope, func(kind jobKind, kept any) any {
		return kind.WithKind(kept.(v1beta1.TrainingJob))
	})
}

// jobDetail is what the job page shows besides the job it watches: the spec
// as YAML, the job's pods and its events. Pods and events the user may not
// list are left out, with the API's reason, rather than failing the page.
type jobDetail struct {
	Job           v1beta1.TrainingJob `json:"job"`
	YAML          string              `json:"yaml"`
	Pods          []podView           `json:"pods"`
	PodsRefused   *metav1.Status      `json:"podsRefused,omitempty"`
	Events        []eventView         `json:"events"`
	EventsRefused *metav1.Status      `json:"eventsRefused,omitempty"`
	// The job's progress history, when the request asks for it
	// (?history=true): the page asks once, then follows
	// status.progress.history.
	chartHistory
}

// chartHistory is every stored report's metrics, for the charts. Without it
// (refused, or an older server), they draw status.progress.history.
type chartHistory struct {
	History        *v1beta1.ProgressHistory `json:"history,omitempty"`
	HistoryRefused *metav1.Status           `json:"historyRefused,omitempty"`
}

// jobWithHistory is a job and its progress history, no more: what the
// comparison page reads of each job it compares, so that comparing ten
// jobs lists none of their pods and events.
type jobWithHistory struct {
	Job v1beta1.TrainingJob `json:"job"`
	chartHistory
}

func (s *Server) jobDetail(w http.ResponseWriter, r *http.Request) {
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	job, err := t.client().Get(r.Context(), t.name)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	detail := jobDetail{Job: t.kind.WithKind(job), Pods: []podView{}, Events: []eventView{}}
	if detail.YAML, err = manifestYAML(detail.Job); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	selector := labels.SelectorFromSet(labels.Set{v1beta1.LabelJobName: t.name, v1beta1.LabelJobKind: t.kind.Name})
	pods, err := t.clients.Kube.CoreV1().Pods(t.namespace).List(r.Context(), metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		status := statusOf(err)
		detail.PodsRefused = &status
	} else {
		for i := range pods.Items {
			detail.Pods = append(detail.Pods, viewPod(&pods.Items[i]))
		}
		slices.SortFunc(detail.Pods, func(a, b podView) int { return strings.Compare(a.Name, b.Name) })
	}
	involved := fields.Set{"involvedObject.name": t.name, "involvedObject.kind": t.kind.Name}.AsSelector().String()
	events, err := t.clients.Kube.CoreV1().Events(t.namespace).List(r.Context(), metav1.ListOptions{FieldSelector: involved})
	if err != nil {
		status := statusOf(err)
		detail.EventsRefused = &status
	} else {
		for i := range events.Items {
			detail.Events = append(detail.Events, viewEvent(&events.Items[i]))
		}
		slices.SortFunc(detail.Events, func(a, b eventView) int { return a.Last.Compare(b.Last.Time) })
	}
	if r.URL.Query().Get("history") == "true" {
		detail.chartHistory = t.readHistory(r.Context())
	}
	writeJSON(w, http.StatusOK, detail)
}

// progressHistory answers GET .../history: the job and its progress history.
func (s *Server) progressHistory(w http.ResponseWriter, r *http.Request) {
	t, ok := s.resolve(w, r)
	if !ok {
		return
	}
	job, err := t.client().Get(r.Context(), t.name)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, jobWithHistory{Job: t.kind.WithKind(job), chartHistory: t.readHistory(r.Context())})
}

// readHistory reads the job's progress history, or the API's refusal of it.
func (t target) readHistory(ctx context.Context) chartHistory {
	history, err := t.client().ProgressHistory(ctx, t.name)
	if err != nil {
		status := statusOf(err)
		return chartHistory{HistoryRefused: &status}
	}
	history.ManagedFields = nil
	return chartHistory{History: history}
}

// manifestYAML is the job as its author would write it: without status and
// the server's bookkeeping of field managers.
func manifestYAML(job v1beta1.TrainingJob) (string, error) {
	manifest := job.DeepCopyObject().(v1beta1.TrainingJob)
	manifest.SetManagedFields(nil)
	data, err := json.Marshal(manifest)
	if err != nil {
		return "", err
	}
	// Status leaves the object as a field of its own: an empty status
	// still has counters that are not omitted when zero.
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		return "", err
	}
	delete(fields, "status")
	out, err := yaml.Marshal(fields)
	return string(out), err
}

// podView is one pod of the job as the replicas table shows it.
type podView struct {
	Name         string          `json:"name"`
	ReplicaType  string          `json:"replicaType"`
	ReplicaIndex string          `json:"replicaIndex"`
	Node         string          `json:"node,omitempty"`
	Phase        corev1.PodPhase `json:"phase"`
	Containers   []containerView `json:"containers"`
}

type containerView struct {
	Name     string `json:"name"`
	State    string `json:"state"`
	Reason   string `json:"reason,omitempty"`
	ExitCode *int32 `json:"exitCode,omitempty"`
	Restarts int32  `json:"restarts"`
}

func viewPod(pod *corev1.Pod) podView {
	v := podView{
		Name:         pod.Name,
		ReplicaType:  pod.Labels[v1beta1.LabelReplicaType],
		ReplicaIndex: pod.Labels[v1beta1.LabelReplicaIndex],
		Node:         pod.Spec.NodeName,
		Phase:        pod.Status.Phase,
		Containers:   []containerView{},
	}
	for _, cs := range pod.Status.ContainerStatuses {
		c := containerView{Name: cs.Name, Restarts: cs.RestartCount}
		switch {
		case cs.State.Running != nil:
			c.State = "Running"
		case cs.State.Waiting != nil:
			c.State, c.Reason = "Waiting", cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			exit := cs.State.Terminated.ExitCode
			c.State, c.Reason, c.ExitCode = "Terminated", cs.State.Terminated.Reason, &exit
		}
		v.Containers = append(v.Containers, c)
	}
	return v
}

// eventView is one event of the job.
type eventView struct {
	Type    string      `json:"type"`
	Reason  string      `json:"reason"`
	Message string      `json:"message"`
	Count   int32       `json:"count"`
	Last    metav1.Time `json:"last"`
}

func viewEvent(e *corev1.Event) eventView {
	last := e.LastTimestamp
	if last.IsZero() {
		last = metav1.NewTime(e.EventTime.Time)
	}
	if last.IsZero() {
		last = e.CreationTimestamp
	}
	return eventView{Type: e.Type, Reason: e.Reason, Message: e.Message, Count: max(e.Count, 1), Last: last}
}
