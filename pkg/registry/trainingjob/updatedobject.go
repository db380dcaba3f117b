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

package trainingjob

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"tensorstack.dev/training/pkg/patchcheck"
)

// typedPatchErrorPrefix starts the field manager's error for an applied
// configuration that does not fit the kind's schema: an unknown field, a
// value of the wrong type, a duplicate list key. It is a plain error, which
// the server would answer with 500 (kubernetes/kubernetes#122480).
const typedPatchErrorPrefix = "failed to create typed patch object"

// notInSchemaSuffix ends each unknown field's line in that error.
const notInSchemaSuffix = ": field not declared in schema"

// checkedObjectInfo computes the updated job as the request asks, and turns
// the mistakes of a request that show only there into 4xx: a patch that the
// patch libraries fail or panic on, an applied configuration that does not
// fit the schema, and a resourceVersion that is not a number, which the
// store would otherwise fail to parse with a 500.
type checkedObjectInfo struct {
	rest.UpdatedObjectInfo
	kind schema.GroupKind
	// name is the job's name in the URL; an apply that creates the job has
	// no old job to take it from.
	name string
}

func (i checkedObjectInfo) UpdatedObject(ctx context.Context, old runtime.Object) (runtime.Object, error) {
	var obj runtime.Object
	update := func() (err error) {
		obj, err = i.UpdatedObjectInfo.UpdatedObject(ctx, old)
		return err
	}
	var err error
	if isPatch(ctx) {
		// A patch that makes a patch library panic is refused with 400
		// rather than aborting the request without an answer.
		err = patchcheck.Guard(update)
		var panicked *patchcheck.PanicError
		if errors.As(err, &panicked) {
			utilruntime.HandleErrorWithContext(ctx, err, "Applying a patch panicked", "job", i.name, "stack", string(panicked.Stack))
		}
	} else {
		err = update()
	}
	if err != nil {
		return nil, requestError(ctx, err, i.kind, i.name)
	}
	if err := checkResourceVersion(obj, i.kind); err != nil {
		return nil, err
	}
	return obj, nil
}

// requestError makes the errors of applying a request's patch that are
// not yet API errors 4xx: the field manager's schema error, and the patch
// libraries' plain errors (a strategic merge patch with an unknown
// directive, a list item without its merge key), which the server would
// answer with 500. What fails on the stored job is the server's own error.
func requestError(ctx context.Context, err error, kind schema.GroupKind, name string) error {
	var apiError apierrors.APIStatus
	if errors.As(err, &apiError) {
		return err
	}
	if applied := appliedConfigurationError(err, kind, name); applied != err {
		return applied
	}
	if !isPatch(ctx) || strings.Contains(err.Error(), liveObjectErrorText) {
		return err
	}
	return apierrors.NewBadRequest(fmt.Sprintf("the patch cannot be applied to %s %q: %v", kind.Kind, name, err))
}

func isPatch(ctx context.Context) bool {
	info, ok := request.RequestInfoFrom(ctx)
	return ok && info.Verb == "patch"
}

// liveObjectErrorText marks the field manager's errors about the stored
// job, rather than the request.
const liveObjectErrorText = "live object"

// checkResourceVersion refuses a resourceVersion that no write could have
// returned. An empty one means an unconditional update.
func checkResourceVersion(obj runtime.Object, kind schema.GroupKind) error {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return nil // not an object with metadata: nothing to check
	}
	version := accessor.GetResourceVersion()
	if version == "" {
		return nil
	}
	if _, err := strconv.ParseUint(version, 10, 64); err != nil {
		return apierrors.NewInvalid(kind, accessor.GetName(), field.ErrorList{field.Invalid(
			field.NewPath("metadata", "resourceVersion"), version,
			"must be a resourceVersion the server returned, a non-negative integer, or empty")})
	}
	return nil
}

// appliedConfigurationError makes the field manager's schema error a 400
// that names each offending field; any other error is returned as it is.
func appliedConfigurationError(err error, kind schema.GroupKind, name string) error {
	if _, isAPIError := err.(apierrors.APIStatus); isAPIError {
		return err
	}
	message := err.Error()
	start := strings.Index(message, typedPatchErrorPrefix)
	if start < 0 {
		return err
	}
	// What follows "(name; group/version, Kind=kind): " lists the problems,
	// one a line under "errors:" when there are several.
	details := message[start+len(typedPatchErrorPrefix):]
	if end := strings.Index(details, "): "); end >= 0 {
		details = details[end+len("): "):]
	}
	var problems []string
	var causes []metav1.StatusCause
	for _, line := range strings.Split(details, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line == "errors:" {
			continue
		}
		if path, unknown := strings.CutSuffix(line, notInSchemaSuffix); unknown {
			path = strings.TrimPrefix(path, ".")
			problems = append(problems, fmt.Sprintf("unknown field %q", path))
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "unknown field", Field: path})
			continue
		}
		problems = append(problems, strings.TrimPrefix(line, "."))
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusBadRequest,
		Reason: metav1.StatusReasonBadRequest,
		Message: fmt.Sprintf("the applied configuration of %s %q does not fit its schema: %s",
			kind.Kind, name, strings.Join(problems, ", ")),
		Details: &metav1.StatusDetails{Name: name, Group: kind.Group, Kind: kind.Kind, Causes: causes},
	}}
}

// Update changes the job as the request asks.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	info := creatingObjectInfo{
		UpdatedObjectInfo: checkedObjectInfo{UpdatedObjectInfo: objInfo, kind: r.kind, name: name},
		applyRuntime:      r.applyRuntime,
	}
	return r.Store.Update(ctx, name, info, createValidation, updateValidation, forceAllowCreate, options)
}
