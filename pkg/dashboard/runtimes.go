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
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The scopes of a runtime as the page shows them.
const (
	scopeCluster   = "Cluster"
	scopeNamespace = "Namespace"
)

// runtimeView is one runtime as the form that makes a job from it offers
// it: what spec.runtimeRef names, and what the runtime makes.
type runtimeView struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	// Namespace is a TrainingRuntime's.
	Namespace string `json:"namespace,omitempty"`
	// RuntimeKind is what spec.runtimeRef.kind names: ClusterTrainingRuntime
	// or TrainingRuntime.
	RuntimeKind string `json:"runtimeKind"`
	// Kind and Resource are the job kind the runtime makes; both are empty
	// for a kind this dashboard does not know (a server newer than it), whose
	// spec the client dropped when it decoded the runtime.
	Kind     string `json:"kind"`
	Resource string `json:"resource"`
	// Image is the first replica type's first container's, as the server's
	// table of runtimes shows it.
	Image        string   `json:"image,omitempty"`
	ReplicaTypes []string `json:"replicaTypes"`
}

// runtimesView is the answer of GET /api/runtimes. A scope the user may not
// list is left out rather than failing the form: its resource is in
// Forbidden, and the API's refusal, in the same order, in Refused.
type runtimesView struct {
	// Namespace is the one whose TrainingRuntimes are listed.
	Namespace string          `json:"namespace"`
	Items     []runtimeView   `json:"items"`
	Forbidden []string        `json:"forbidden,omitempty"`
	Refused   []metav1.Status `json:"refused,omitempty"`
}

// runtimes lists the runtimes a job in the query's namespace (else the
// user's) may name, in the order kubectl training runtimes prints them and
// a runtimeRef without a kind would find them: the namespace's
// TrainingRuntimes, then the ClusterTrainingRuntimes, each by name.
func (s *Server) runtimes(w http.ResponseWriter, r *http.Request) {
	c, err := s.source.ClientsFor(r)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	namespace := r.URL.Query().Get("namespace")
	if namespace == "" {
		namespace = c.Namespace
	}
	scopes := []struct {
		resource string
		list     func(context.Context) ([]runtimeView, error)
	}{
		{"trainingruntimes", func(ctx context.Context) ([]runtimeView, error) {
			list, err := c.Training.BatchV1beta1().TrainingRuntimes(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			views := make([]runtimeView, 0, len(list.Items))
			for i := range list.Items {
				rt := &list.Items[i]
				views = append(views, viewRuntime(rt.Name, scopeNamespace, rt.Namespace, batch.TrainingRuntimeKind, &rt.Spec.Template))
			}
			return views, nil
		}},
		{"clustertrainingruntimes", func(ctx context.Context) ([]runtimeView, error) {
			list, err := c.Training.BatchV1beta1().ClusterTrainingRuntimes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			views := make([]runtimeView, 0, len(list.Items))
			for i := range list.Items {
				rt := &list.Items[i]
				views = append(views, viewRuntime(rt.Name, scopeCluster, "", batch.ClusterTrainingRuntimeKind, &rt.Spec.Template))
			}
			return views, nil
		}},
	}
	view := runtimesView{Namespace: namespace, Items: []runtimeView{}}
	for _, scope := range scopes {
		found, err := scope.list(r.Context())
		if apierrors.IsForbidden(err) {
			// The other scope may still have a runtime the user can use.
			view.Forbidden = append(view.Forbidden, scope.resource)
			view.Refused = append(view.Refused, statusOf(err))
			continue
		}
		if err != nil {
			writeAPIError(w, err)
			return
		}
		slices.SortFunc(found, func(a, b runtimeView) int { return strings.Compare(a.Name, b.Name) })
		view.Items = append(view.Items, found...)
	}
	writeJSON(w, http.StatusOK, view)
}

// viewRuntime reads what a runtime's template makes.
func viewRuntime(name, scope, namespace, runtimeKind string, template *v1beta1.TrainingJobTemplate) runtimeView {
	view := runtimeView{Name: name, Scope: scope, Namespace: namespace, RuntimeKind: runtimeKind, ReplicaTypes: []string{}}
	internal, kind, ok := internalTemplate(template)
	if !ok {
		return view
	}
	view.Kind, view.Resource = kind.Name, kind.Resource
	spec := internal.CommonSpec()
	for _, replicas := range spec.ReplicaSpecs {
		view.ReplicaTypes = append(view.ReplicaTypes, string(replicas.Type))
	}
	view.Image = internal.Image()
	return view
}

// internalTemplate is a job template (a runtime's, a search's trials') in
// the internal version, and the kind of job it makes. The internal version
// holds the rule that picks the template's kind, the one the apiserver
// applies, so that no kind is named here. ok is false for a template of no
// kind this dashboard knows.
func internalTemplate(template *v1beta1.TrainingJobTemplate) (*batch.TrainingJobTemplate, jobKind, bool) {
	var internal batch.TrainingJobTemplate
	if err := internalScheme.Convert(template, &internal, nil); err != nil {
		return nil, nil, false
	}
	kind, ok := kindByKind(internal.Kind())
	if !ok {
		return nil, nil, false
	}
	return &internal, kind, true
}

// internalScheme converts job templates to the internal version.
var internalScheme = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}()
