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

package trainingruntime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apis/batch/validation"
)

var runtimeRefPath = field.NewPath("spec", "runtimeRef")

// Resolver applies the runtime a new job names in spec.runtimeRef, and the
// job's spec.trainer, before the job is validated and stored: the stored
// job is complete, and nothing that reads it needs the runtime again.
type Resolver struct {
	// cluster and namespaced read the ClusterTrainingRuntimes and the
	// TrainingRuntimes from storage.
	cluster, namespaced rest.Getter
	// authorizer decides whether the job's creator may get the runtime;
	// nil lets everyone.
	authorizer authorizer.Authorizer
	// scheme converts a job to its versioned form, to default it once the
	// runtime is applied.
	scheme *runtime.Scheme
}

// NewResolver returns a Resolver reading runtimes from the given stores.
func NewResolver(cluster, namespaced rest.Getter, authz authorizer.Authorizer, scheme *runtime.Scheme) *Resolver {
	return &Resolver{cluster: cluster, namespaced: namespaced, authorizer: authz, scheme: scheme}
}

// Resolve applies the runtime and the trainer to job, whose whole spec
// (a pointer to the kind's spec type) is spec, and records the runtime in
// status.runtime. The errors are the API's: 422 for a runtimeRef or
// trainer that cannot be applied, 403 for a runtime the user may not get.
func (r *Resolver) Resolve(ctx context.Context, kind batch.KindInfo, job batch.TrainingJob, spec any) error {
	common := job.CommonSpec()
	if common.RuntimeRef == nil && common.Trainer == nil {
		return nil
	}
	invalid := func(errs field.ErrorList) error {
		return apierrors.NewInvalid(schema.GroupKind{Group: batch.GroupName, Kind: kind.Kind}, job.GetName(), errs)
	}
	if errs := validation.ValidateRuntimeRequest(kind.Kind, common); len(errs) > 0 {
		return invalid(errs)
	}
	if ref := common.RuntimeRef; ref != nil {
		if ref.Kind == "" {
			ref.Kind = batch.ClusterTrainingRuntimeKind
		}
		meta, template, errs, err := r.get(ctx, ref, job.GetNamespace())
		if err != nil {
			return err
		}
		if len(errs) > 0 {
			return invalid(errs)
		}
		if made := template.Kind(); made != kind.Kind {
			return invalid(field.ErrorList{field.Invalid(runtimeRefPath, ref.Name, fmt.Sprintf(
				"%s %q makes %ss, not %ss: name a runtime of this kind", ref.Kind, ref.Name, made, kind.Kind))})
		}
		if err := mergeSpec(template.KindSpec(), spec, spec); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("applying %s %q: %w", ref.Kind, ref.Name, err))
		}
		job.SetLabels(mergeStrings(template.Labels, job.GetLabels()))
		job.SetAnnotations(mergeStrings(template.Annotations, job.GetAnnotations()))
		hash, err := templateHash(template)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		job.JobStatus().Runtime = &batch.AppliedRuntime{Kind: ref.Kind, Name: ref.Name, UID: string(meta.UID),
			ResourceVersion: meta.ResourceVersion, Hash: hash}
	}
	common = job.CommonSpec()
	if errs := applyTrainer(common, common.Trainer, kind); len(errs) > 0 {
		return invalid(errs)
	}
	return r.setDefaults(job)
}

// Authorize says whether the user of ctx may get the runtime ref names:
// nil, or the 403 a job naming it would get. A search checks its creator
// with it, for the trials its controller will make from the runtime.
func (r *Resolver) Authorize(ctx context.Context, ref *batch.RuntimeRef, namespace string) error {
	resource, where := "clustertrainingruntimes", ""
	if ref.Kind == batch.TrainingRuntimeKind {
		resource, where = "trainingruntimes", namespace
	}
	return r.authorize(ctx, resource, where, ref.Name)
}

// get reads the runtime the reference names, once the user may get it. A
// runtime that does not exist is an error naming spec.runtimeRef.
func (r *Resolver) get(ctx context.Context, ref *batch.RuntimeRef, namespace string) (*metav1.ObjectMeta, *batch.TrainingJobTemplate, field.ErrorList, error) {
	getter, resource, where := r.cluster, "clustertrainingruntimes", ""
	if ref.Kind == batch.TrainingRuntimeKind {
		getter, resource, where = r.namespaced, "trainingruntimes", namespace
	}
	if err := r.authorize(ctx, resource, where, ref.Name); err != nil {
		return nil, nil, nil, err
	}
	obj, err := getter.Get(request.WithNamespace(ctx, where), ref.Name, &metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		detail := fmt.Sprintf("no %s of that name exists", ref.Kind)
		if where != "" {
			detail = fmt.Sprintf("no %s of that name exists in namespace %q, the job's: a TrainingRuntime serves "+
				"the jobs of its own namespace only", ref.Kind, where)
		}
		return nil, nil, field.ErrorList{field.Invalid(runtimeRefPath.Child("name"), ref.Name, detail)}, nil
	case err != nil:
		return nil, nil, nil, err
	}
	switch rt := obj.(type) {
	case *batch.ClusterTrainingRuntime:
		return &rt.ObjectMeta, &rt.Spec.Template, nil, nil
	case *batch.TrainingRuntime:
		return &rt.ObjectMeta, &rt.Spec.Template, nil, nil
	}
	return nil, nil, nil, apierrors.NewInternalError(fmt.Errorf("%s %q read back as %T", ref.Kind, ref.Name, obj))
}

// authorize lets the job's creator use a runtime only if they may get it,
// so that a job cannot read what its creator may not. The authorizer is
// the server's (delegated to the kube-apiserver, as for every request).
func (r *Resolver) authorize(ctx context.Context, resource, namespace, name string) error {
	if r.authorizer == nil {
		return nil
	}
	gr := batch.Resource(resource)
	user, ok := request.UserFrom(ctx)
	if !ok {
		// Only a server that authenticates no one (an in-process test
		// server) has requests without a user; it authorized none either.
		return nil
	}
	decision, reason, err := r.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: user, Verb: "get", APIGroup: batch.GroupName, APIVersion: v1beta1.SchemeGroupVersion.Version,
		Resource: resource, Namespace: namespace, Name: name, ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	why := fmt.Sprintf("spec.runtimeRef names it, and user %q cannot get it", user.GetName())
	if reason != "" {
		why += ": " + reason
	}
	if err != nil {
		why += ": " + err.Error()
	}
	return apierrors.NewForbidden(gr, name, fmt.Errorf("%s", why))
}

// setDefaults defaults the job now that it is complete. The scheme left a
// job waiting for its runtime undefaulted (v1beta1's defaults), so that
// defaults would not take the place of the runtime's values.
func (r *Resolver) setDefaults(job batch.TrainingJob) error {
	versioned, err := r.scheme.ConvertToVersion(job, v1beta1.SchemeGroupVersion)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	r.scheme.Default(versioned)
	if err := r.scheme.Convert(versioned, job, nil); err != nil {
		return apierrors.NewInternalError(err)
	}
	return nil
}

// templateHash names the template's content: the SHA-256 of its JSON.
func templateHash(t *batch.TrainingJobTemplate) (string, error) {
	raw, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

// mergeStrings is base with overlay's entries over it; nil when both are
// empty.
func mergeStrings(base, overlay map[string]string) map[string]string {
	if len(base) == 0 {
		return overlay
	}
	out := make(map[string]string, len(base)+len(overlay))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range overlay {
		out[k] = v
	}
	return out
}
