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
	"slices"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/request"

	"tensorstack.dev/training/pkg/apis/batch"
)

// updatedObject is an UpdatedObjectInfo that returns obj and err.
type updatedObject struct {
	obj runtime.Object
	err error
}

func (u updatedObject) Preconditions() *metav1.Preconditions { return nil }

func (u updatedObject) UpdatedObject(context.Context, runtime.Object) (runtime.Object, error) {
	return u.obj, u.err
}

var testGroupKind = batch.Kind("PyTorchTrainingJob")

func TestAppliedConfigurationError(t *testing.T) {
	cases := map[string]struct {
		err         string
		wantMessage string
		wantFields  []string
	}{
		"one unknown field": {
			err:         "failed to create typed patch object (/train; batch.tensorstack.dev/v1beta1, Kind=PyTorchTrainingJob): .spec.bogus: field not declared in schema",
			wantMessage: `the applied configuration of PyTorchTrainingJob "train" does not fit its schema: unknown field "spec.bogus"`,
			wantFields:  []string{"spec.bogus"},
		},
		"several problems": {
			err: "failed to create typed patch object (/train; batch.tensorstack.dev/v1beta1, Kind=PyTorchTrainingJob): errors:\n" +
				"  .spec.bogus: field not declared in schema\n  .spec.replicaSpecs: expected list, got &{3}",
			wantMessage: `the applied configuration of PyTorchTrainingJob "train" does not fit its schema: unknown field "spec.bogus", spec.replicaSpecs: expected list, got &{3}`,
			wantFields:  []string{"spec.bogus"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := appliedConfigurationError(errors.New(tc.err), testGroupKind, "train")
			var status apierrors.APIStatus
			if !apierrors.IsBadRequest(err) || !errors.As(err, &status) {
				t.Fatalf("%v, want 400", err)
			}
			if got := status.Status().Message; got != tc.wantMessage {
				t.Errorf("message\n got: %s\nwant: %s", got, tc.wantMessage)
			}
			var fields []string
			for _, cause := range status.Status().Details.Causes {
				fields = append(fields, cause.Field)
			}
			if !slices.Equal(fields, tc.wantFields) {
				t.Errorf("cause fields %v, want %v", fields, tc.wantFields)
			}
		})
	}

	for _, err := range []error{
		errors.New("failed to create typed live object: broken schema"),
		apierrors.NewConflict(testKind.Resource(), "train", errors.New("failed to create typed patch object")),
	} {
		if got := appliedConfigurationError(err, testGroupKind, "train"); got != err {
			t.Errorf("%v became %v, want it unchanged", err, got)
		}
	}
}

func TestCheckedObjectInfo(t *testing.T) {
	ctx := context.Background()
	for _, version := range []string{"", "0", "18446744073709551615"} {
		job := newJob("train", 2)
		job.ResourceVersion = version
		info := checkedObjectInfo{UpdatedObjectInfo: updatedObject{obj: job}, kind: testGroupKind, name: "train"}
		if _, err := info.UpdatedObject(ctx, nil); err != nil {
			t.Errorf("resourceVersion %q: %v", version, err)
		}
	}
	for _, version := range []string{"abc", "-1", "1.5", "18446744073709551616"} {
		job := newJob("train", 2)
		job.ResourceVersion = version
		info := checkedObjectInfo{UpdatedObjectInfo: updatedObject{obj: job}, kind: testGroupKind, name: "train"}
		_, err := info.UpdatedObject(ctx, nil)
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details.Causes[0].Field != "metadata.resourceVersion" {
			t.Errorf("resourceVersion %q: %v, want 422 naming metadata.resourceVersion", version, err)
		}
	}

	schemaErr := errors.New("failed to create typed patch object (/new; x): .spec.bogus: field not declared in schema")
	info := checkedObjectInfo{UpdatedObjectInfo: updatedObject{err: schemaErr}, kind: testGroupKind, name: "new"}
	if _, err := info.UpdatedObject(ctx, nil); !apierrors.IsBadRequest(err) {
		t.Errorf("schema error: %v, want 400", err)
	}
}

func TestRequestError(t *testing.T) {
	patching := request.WithRequestInfo(context.Background(), &request.RequestInfo{Verb: "patch"})
	updating := request.WithRequestInfo(context.Background(), &request.RequestInfo{Verb: "update"})
	libraryError := errors.New("unknown patch type: bogus in map: map[$patch:bogus]")
	if err := requestError(patching, libraryError, testGroupKind, "train"); !apierrors.IsBadRequest(err) ||
		err.Error() != `the patch cannot be applied to PyTorchTrainingJob "train": unknown patch type: bogus in map: map[$patch:bogus]` {
		t.Errorf("a patch library's error: %v, want 400 naming the job", err)
	}
	for name, tc := range map[string]struct {
		ctx context.Context
		err error
	}{
		"an update's error":                 {updating, libraryError},
		"a request without its info":        {context.Background(), libraryError},
		"the stored job's error":            {patching, errors.New("failed to create typed live object (/train): broken")},
		"an API error":                      {patching, apierrors.NewConflict(testKind.Resource(), "train", libraryError)},
		"an API error wrapped by the store": {patching, fmt.Errorf("storing: %w", apierrors.NewConflict(testKind.Resource(), "train", libraryError))},
	} {
		if got := requestError(tc.ctx, tc.err, testGroupKind, "train"); got != tc.err {
			t.Errorf("%s: %v became %v, want it unchanged", name, tc.err, got)
		}
	}
}

// panickingObject is an UpdatedObjectInfo whose patch library panics.
type panickingObject struct{ updatedObject }

func (panickingObject) UpdatedObject(context.Context, runtime.Object) (runtime.Object, error) {
	var keys map[string]any
	//lint:ignore SA5000 the panic is what the test needs
	keys["type"] = map[string]any{} // panics: assignment to entry in nil map
	return nil, nil
}

func TestPatchPanicIs400(t *testing.T) {
	patching := request.WithRequestInfo(context.Background(), &request.RequestInfo{Verb: "patch"})
	info := checkedObjectInfo{UpdatedObjectInfo: panickingObject{}, kind: testGroupKind, name: "train"}
	_, err := info.UpdatedObject(patching, nil)
	if !apierrors.IsBadRequest(err) || err.Error() !=
		`the patch cannot be applied to PyTorchTrainingJob "train": the patch library failed on the patch: assignment to entry in nil map` {
		t.Errorf("a panicking patch: %v, want 400", err)
	}

	// Elsewhere a panic is the server's bug, for the server's recovery.
	updating := request.WithRequestInfo(context.Background(), &request.RequestInfo{Verb: "update"})
	defer func() {
		if recover() == nil {
			t.Errorf("a panic of an update was swallowed")
		}
	}()
	_, _ = info.UpdatedObject(updating, nil)
}
