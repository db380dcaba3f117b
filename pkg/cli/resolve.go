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
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/pkg/jobclient"
)

// foundJob is a job a command argument named, with its kind.
type foundJob struct {
	kind *jobKind
	job  v1beta1.TrainingJob
}

// Ref names the job as the commands do: tj/NAME.
func (f foundJob) Ref() string { return f.kind.Ref(f.job.GetName()) }

// parseJobArg splits a job argument into its kind and name. The kind is nil
// for a plain NAME, which may be a job of any kind.
func parseJobArg(arg string) (*jobKind, string, error) {
	word, name, qualified := strings.Cut(arg, "/")
	if !qualified {
		word, name = "", arg
	}
	if name == "" || strings.Contains(name, "/") {
		var forms []string
		for _, k := range jobclient.Kinds {
			forms = append(forms, k.ShortName+"/NAME")
		}
		return nil, "", fmt.Errorf("%q is not a job: name one as %s or NAME", arg, strings.Join(forms, ", "))
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return nil, "", fmt.Errorf("%q is not a job name: %s", name, strings.Join(errs, "; "))
	}
	if !qualified {
		return nil, name, nil
	}
	kind, ok := kindNamed(word)
	if !ok {
		return nil, "", fmt.Errorf("%q is not a training job kind in %q: use %s", word, arg,
			kindForms(func(k *jobclient.Kind) string { return k.ShortName + "/NAME (" + k.Resource + ")" }))
	}
	return kind, name, nil
}

// findJob fetches the job an argument names. A plain NAME is looked up in
// every kind and must exist in exactly one of them.
func findJob(ctx context.Context, client versioned.Interface, namespace, arg string) (foundJob, error) {
	kind, name, err := parseJobArg(arg)
	if err != nil {
		return foundJob{}, err
	}
	if kind != nil {
		job, err := kind.Client(client, namespace).Get(ctx, name)
		if err != nil {
			return foundJob{}, fmt.Errorf("getting %s in namespace %q: %w", kind.Ref(name), namespace, err)
		}
		return foundJob{kind: kind, job: job}, nil
	}

	var found []foundJob
	for _, k := range jobKinds {
		job, err := k.Client(client, namespace).Get(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			// Without knowing every kind, the name cannot be said to be unambiguous.
			return foundJob{}, fmt.Errorf("looking for %s in namespace %q (name the kind, e.g. %s, to look in one kind only): %w",
				k.Ref(name), namespace, otherKind(k).Ref(name), err)
		default:
			found = append(found, foundJob{kind: k, job: job})
		}
	}
	switch len(found) {
	case 0:
		return foundJob{}, jobNotFound(name, namespace)
	case 1:
		return found[0], nil
	default:
		refs := make([]string, len(found))
		for i, f := range found {
			refs[i] = f.Ref()
		}
		return foundJob{}, fmt.Errorf("%q is ambiguous in namespace %q: %s exist; name one of them",
			name, namespace, strings.Join(refs, " and "))
	}
}

// otherKind is a kind other than k, for an example in a message.
func otherKind(k *jobKind) *jobKind {
	for _, other := range jobKinds {
		if other != k {
			return other
		}
	}
	return k
}

// jobNotFound is the NotFound error for a plain name that no kind has;
// callers can test it with apierrors.IsNotFound.
func jobNotFound(name, namespace string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound,
		Details: &metav1.StatusDetails{
			Group: v1beta1.GroupName,
			Kind:  v1beta1.CategoryTrainingJobs,
			Name:  name,
		},
		Message: fmt.Sprintf("no %s named %q in namespace %q", kindForms(func(k *jobclient.Kind) string { return k.Name }), name, namespace),
	}}
}

// kindForms lists every kind in the given form: "a, b or c".
func kindForms(form func(*jobclient.Kind) string) string {
	forms := make([]string, len(jobclient.Kinds))
	for i, k := range jobclient.Kinds {
		forms[i] = form(k)
	}
	if len(forms) == 1 {
		return forms[0]
	}
	return strings.Join(forms[:len(forms)-1], ", ") + " or " + forms[len(forms)-1]
}
