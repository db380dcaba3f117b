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
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/storage"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// fakeStorage stores one object in memory and fails every call with err
// once it is set, as etcd would.
type fakeStorage struct {
	storage.Interface
	stored runtime.Object
	err    error
}

func (f *fakeStorage) Create(_ context.Context, _ string, obj, _ runtime.Object, _ uint64) error {
	if f.err != nil {
		return f.err
	}
	f.stored = obj
	return nil
}

func (f *fakeStorage) GuaranteedUpdate(_ context.Context, _ string, _ runtime.Object, _ bool, _ *storage.Preconditions, tryUpdate storage.UpdateFunc, _ runtime.Object) error {
	obj, _, err := tryUpdate(f.stored, storage.ResponseMeta{})
	if err != nil {
		return err
	}
	if f.err != nil {
		return f.err
	}
	f.stored = obj
	return nil
}

func (f *fakeStorage) Get(context.Context, string, storage.GetOptions, runtime.Object) error {
	return f.err
}

func (f *fakeStorage) GetList(context.Context, string, storage.ListOptions, runtime.Object) error {
	return f.err
}

func (f *fakeStorage) Watch(context.Context, string, storage.ListOptions) (watch.Interface, error) {
	if f.err != nil {
		return nil, f.err
	}
	return watch.NewEmptyWatch(), nil
}

func storageCodec(t *testing.T) runtime.Codec {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return serializer.NewCodecFactory(scheme).LegacyCodec(v1beta1.SchemeGroupVersion)
}

// limitedStorage is a clientErrorStorage whose limit is the encoded size of
// newJob("train", 2) plus slack bytes.
func limitedStorage(t *testing.T, slack int) (clientErrorStorage, *fakeStorage) {
	t.Helper()
	codec := storageCodec(t)
	data, err := runtime.Encode(codec, newJob("train", 2))
	if err != nil {
		t.Fatal(err)
	}
	backend := &fakeStorage{}
	limit := objectSizeLimit{codec: codec, resource: testKind.Resource(), maxBytes: len(data) + slack}
	return clientErrorStorage{Interface: backend, limit: limit}, backend
}

func expectTooLarge(t *testing.T, what string, err error, wantInMessage ...string) {
	t.Helper()
	if !apierrors.IsRequestEntityTooLargeError(err) {
		t.Errorf("%s: %v, want 413", what, err)
		return
	}
	for _, want := range wantInMessage {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not say %q", what, err, want)
		}
	}
}

func TestStoredSizeLimit(t *testing.T) {
	ctx := context.Background()
	limited, backend := limitedStorage(t, 0)
	limitText := fmt.Sprintf("the limit of %d bytes per job", limited.limit.maxBytes)

	if err := limited.Create(ctx, "k", newJob("train", 2), nil, 0); err != nil {
		t.Fatalf("a job exactly at the limit: %v", err)
	}
	grown := newJob("train", 2)
	grown.Labels = map[string]string{"a": "b"}
	expectTooLarge(t, "create one byte over", limited.Create(ctx, "k", grown, nil, 0), `pytorchtrainingjobs.batch.tensorstack.dev "train"`, limitText)

	update := func(obj runtime.Object) storage.UpdateFunc {
		return func(runtime.Object, storage.ResponseMeta) (runtime.Object, *uint64, error) { return obj, nil, nil }
	}
	expectTooLarge(t, "update over", limited.GuaranteedUpdate(ctx, "k", nil, false, nil, update(grown), nil), limitText)
	if backend.stored.(*batch.PyTorchTrainingJob).Labels != nil {
		t.Errorf("the refused update was stored")
	}
	if err := limited.GuaranteedUpdate(ctx, "k", nil, false, nil, update(newJob("train", 3)), nil); err != nil {
		t.Errorf("update within the limit: %v", err)
	}
	failing := func(runtime.Object, storage.ResponseMeta) (runtime.Object, *uint64, error) {
		return nil, nil, errors.New("conflict of the update's own")
	}
	if err := limited.GuaranteedUpdate(ctx, "k", nil, false, nil, failing, nil); err == nil || err.Error() != "conflict of the update's own" {
		t.Errorf("the update's own error became %v", err)
	}
}

func TestEtcdTooLargeIs413(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		err     error
		want413 bool
	}{
		"etcd's request limit":         {errors.New("etcdserver: request is too large"), true},
		"the gRPC client's send limit": {errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2971789 vs. 2097152)"), true},
		"wrapped":                      {fmt.Errorf("txn: %w", errors.New("etcdserver: request is too large")), true},
		"another etcd error":           {errors.New("etcdserver: leader changed"), false},
		"an API error":                 {apierrors.NewConflict(testKind.Resource(), "train", errors.New("etcdserver: request is too large")), false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			limited, backend := limitedStorage(t, 1024)
			backend.stored = newJob("train", 2)
			backend.err = tc.err
			update := func(runtime.Object, storage.ResponseMeta) (runtime.Object, *uint64, error) {
				return newJob("train", 3), nil, nil
			}
			for verb, err := range map[string]error{
				"create": limited.Create(ctx, "k", newJob("train", 2), nil, 0),
				"update": limited.GuaranteedUpdate(ctx, "k", nil, false, nil, update, nil),
			} {
				if !tc.want413 {
					if err != tc.err {
						t.Errorf("%s: %v, want the error unchanged", verb, err)
					}
					continue
				}
				expectTooLarge(t, verb, err, tc.err.Error(), `"train"`, fmt.Sprintf("limited to %d bytes", limited.limit.maxBytes))
			}
		})
	}
}

func TestMalformedResourceVersionIs400(t *testing.T) {
	ctx := context.Background()
	invalid := storage.NewInvalidError(field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), "abc", "not a number")})
	limited, backend := limitedStorage(t, 0)
	backend.err = invalid
	_, watchErr := limited.Watch(ctx, "k", storage.ListOptions{})
	for verb, err := range map[string]error{
		"get":   limited.Get(ctx, "k", storage.GetOptions{}, nil),
		"list":  limited.GetList(ctx, "k", storage.ListOptions{}, nil),
		"watch": watchErr,
	} {
		if !apierrors.IsBadRequest(err) || !strings.HasPrefix(err.Error(), `invalid resource version: resourceVersion: Invalid value: "abc"`) {
			t.Errorf("%s: %v, want 400 invalid resource version", verb, err)
		}
	}

	other := errors.New("unreachable")
	backend.err = other
	if err := limited.Get(ctx, "k", storage.GetOptions{}, nil); err != other {
		t.Errorf("another error became %v", err)
	}
}

func TestDryRunCodecLimitsSize(t *testing.T) {
	limited, _ := limitedStorage(t, 0)
	codec := sizeLimitedCodec{Codec: limited.limit.codec, limit: limited.limit}
	var out bytes.Buffer
	if err := codec.Encode(newJob("train", 2), &out); err != nil || out.Len() != limited.limit.maxBytes {
		t.Errorf("a job at the limit: %v, %d bytes written, want %d", err, out.Len(), limited.limit.maxBytes)
	}
	out.Reset()
	grown := newJob("train", 2)
	grown.Labels = map[string]string{"a": "b"}
	expectTooLarge(t, "over the limit", codec.Encode(grown, &out))
	if out.Len() != 0 {
		t.Errorf("%d bytes written of a refused job", out.Len())
	}
	if codec.Identifier() == limited.limit.codec.Identifier() {
		t.Errorf("the limited codec claims its inner codec's identifier %q", codec.Identifier())
	}
}
