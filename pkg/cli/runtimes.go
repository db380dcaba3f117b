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

package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// clusterScope is the SCOPE of a ClusterTrainingRuntime; a TrainingRuntime's
// is its namespace.
const clusterScope = "Cluster"

// trainingRuntime is a ClusterTrainingRuntime or a TrainingRuntime: what run
// and runtimes need of either.
type trainingRuntime struct {
	// kind is batch.ClusterTrainingRuntimeKind or batch.TrainingRuntimeKind,
	// as a job's spec.runtimeRef names it.
	kind     string
	meta     metav1.ObjectMeta
	template v1beta1.TrainingJobTemplate
}

func fromClusterRuntime(r *v1beta1.ClusterTrainingRuntime) trainingRuntime {
	return trainingRuntime{kind: batch.ClusterTrainingRuntimeKind, meta: r.ObjectMeta, template: r.Spec.Template}
}

func fromNamespacedRuntime(r *v1beta1.TrainingRuntime) trainingRuntime {
	return trainingRuntime{kind: batch.TrainingRuntimeKind, meta: r.ObjectMeta, template: r.Spec.Template}
}

// String names the runtime in messages: ClusterTrainingRuntime "torch".
func (r trainingRuntime) String() string { return fmt.Sprintf("%s %q", r.kind, r.meta.Name) }

// scope is where the runtime serves: Cluster, or its namespace.
func (r trainingRuntime) scope() string {
	if r.kind == batch.ClusterTrainingRuntimeKind {
		return clusterScope
	}
	return r.meta.Namespace
}

// jobTemplate is the kind of the jobs the runtime makes and the template
// they start from. The internal version holds the rule that picks the kind,
// the one the apiserver applies.
func (r trainingRuntime) jobTemplate() (*jobKind, *batch.TrainingJobTemplate, error) {
	var template batch.TrainingJobTemplate
	if err := internalScheme.Convert(&r.template, &template, nil); err != nil {
		return nil, nil, fmt.Errorf("reading the template of %s: %w", r, err)
	}
	kind, ok := kindCalled(template.Kind())
	if !ok {
		// The spec of a kind newer than the plugin is dropped when decoded.
		return nil, nil, fmt.Errorf("%s makes no job kind this kubectl-training knows; is the plugin older than the server?", r)
	}
	return kind, &template, nil
}

// findRuntime fetches the runtime a job in the namespace names. Without a
// kind it is the namespace's TrainingRuntime of that name, else the
// ClusterTrainingRuntime, so that a team's runtime can stand in for the
// cluster's.
func findRuntime(ctx context.Context, client versioned.Interface, namespace, name, kind string) (trainingRuntime, error) {
	getNamespaced := func() (trainingRuntime, error) {
		r, err := client.BatchV1beta1().TrainingRuntimes(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return trainingRuntime{}, fmt.Errorf("getting TrainingRuntime %q in namespace %q: %w", name, namespace, err)
		}
		return fromNamespacedRuntime(r), nil
	}
	getCluster := func() (trainingRuntime, error) {
		r, err := client.BatchV1beta1().ClusterTrainingRuntimes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return trainingRuntime{}, fmt.Errorf("getting ClusterTrainingRuntime %q: %w", name, err)
		}
		return fromClusterRuntime(r), nil
	}
	switch kind {
	case batch.TrainingRuntimeKind:
		return getNamespaced()
	case batch.ClusterTrainingRuntimeKind:
		return getCluster()
	}

	namespaced, namespacedErr := getNamespaced()
	switch {
	case namespacedErr == nil:
		return namespaced, nil
	case !apierrors.IsNotFound(namespacedErr) && !apierrors.IsForbidden(namespacedErr):
		return trainingRuntime{}, namespacedErr
	}
	// A TrainingRuntime the user may not get is one the apiserver does not
	// let them use either: the cluster's is the one to use.
	cluster, err := getCluster()
	switch {
	case err == nil:
		return cluster, nil
	case !apierrors.IsNotFound(err):
		return trainingRuntime{}, err
	case apierrors.IsForbidden(namespacedErr):
		// The namespace may have the runtime: say why it was not read.
		return trainingRuntime{}, namespacedErr
	default:
		return trainingRuntime{}, runtimeNotFound(name, namespace)
	}
}

// runtimeNotFound is the NotFound error for a runtime in neither place
// findRuntime looks.
func runtimeNotFound(name, namespace string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{Group: v1beta1.GroupName, Kind: batch.TrainingRuntimeKind, Name: name},
		Message: fmt.Sprintf("no TrainingRuntime %q in namespace %q and no ClusterTrainingRuntime %q; "+
			"kubectl training runtimes lists the runtimes there are", name, namespace, name),
	}}
}

// listRuntimes lists the runtimes a job in the namespace may name, in the
// order findRuntime looks them up: the namespace's TrainingRuntimes, then the
// ClusterTrainingRuntimes, each by name. A scope the user may not list is
// left out and its error returned in forbidden: the other may still help.
func listRuntimes(ctx context.Context, client versioned.Interface, namespace string) (runtimes []trainingRuntime, forbidden []error, err error) {
	scopes := []struct {
		what string
		list func() ([]trainingRuntime, error)
	}{
		{fmt.Sprintf("the TrainingRuntimes of namespace %q", namespace), func() ([]trainingRuntime, error) {
			list, err := client.BatchV1beta1().TrainingRuntimes(namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var runtimes []trainingRuntime
			for i := range list.Items {
				runtimes = append(runtimes, fromNamespacedRuntime(&list.Items[i]))
			}
			return runtimes, nil
		}},
		{"the ClusterTrainingRuntimes", func() ([]trainingRuntime, error) {
			list, err := client.BatchV1beta1().ClusterTrainingRuntimes().List(ctx, metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			var runtimes []trainingRuntime
			for i := range list.Items {
				runtimes = append(runtimes, fromClusterRuntime(&list.Items[i]))
			}
			return runtimes, nil
		}},
	}
	for _, scope := range scopes {
		found, err := scope.list()
		switch {
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, fmt.Errorf("%s are left out: %w", scope.what, err))
		case err != nil:
			return nil, nil, fmt.Errorf("listing %s: %w", scope.what, err)
		}
		slices.SortFunc(found, func(a, b trainingRuntime) int { return strings.Compare(a.meta.Name, b.meta.Name) })
		runtimes = append(runtimes, found...)
	}
	return runtimes, forbidden, nil
}

func newRuntimesCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "runtimes",
		Short: "List the runtimes jobs can be run from",
		Long: `List the runtimes that kubectl training run can make a job from: the
TrainingRuntimes of the namespace, then the ClusterTrainingRuntimes, the order
run looks a name up in. KIND is the kind of the jobs a runtime makes, IMAGE the
image of its first replica type's first container. Runtimes you may not list
are left out, with a warning.`,
		Example: `  kubectl training runtimes
  kubectl training runtimes -n team`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return showRuntimes(cmd.Context(), e)
		},
	}
}

func showRuntimes(ctx context.Context, e *env) error {
	c, err := e.clients()
	if err != nil {
		return err
	}
	runtimes, forbidden, err := listRuntimes(ctx, c.training, c.namespace)
	if err != nil {
		return err
	}
	for _, err := range forbidden {
		fmt.Fprintf(e.streams.ErrOut, "Warning: %v\n", err)
	}
	if len(runtimes) == 0 {
		fmt.Fprintf(e.streams.ErrOut, "No training runtimes found for %s namespace.\n", c.namespace)
		return nil
	}
	return writeRuntimeList(e.streams.Out, runtimes, e.now())
}

// writeRuntimeList prints one line per runtime: NAME, SCOPE, KIND, IMAGE and
// AGE.
func writeRuntimeList(out io.Writer, runtimes []trainingRuntime, now time.Time) error {
	w := newTabWriter(out)
	fmt.Fprintln(w, "NAME\tSCOPE\tKIND\tIMAGE\tAGE")
	for _, r := range runtimes {
		kind, image := "<unknown>", "-"
		if k, template, err := r.jobTemplate(); err == nil {
			kind, image = k.Name, orDash(template.Image())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.meta.Name, r.scope(), kind, image, age(r.meta.CreationTimestamp.Time, now))
	}
	return w.Flush()
}

// completeRuntimeName completes --runtime with the names of the runtimes a
// job in the namespace may name.
func completeRuntimeName(e *env) completionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := e.clients()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		runtimes, _, err := listRuntimes(cmd.Context(), c.training, c.namespace)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, r := range runtimes {
			if !slices.Contains(names, r.meta.Name) {
				names = append(names, r.meta.Name)
			}
		}
		return withPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}
