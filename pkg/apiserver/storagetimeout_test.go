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

package apiserver

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"
)

func TestBoundedStorageErrors(t *testing.T) {
	s := boundedStorage{timeout: 20 * time.Millisecond}
	cases := []struct {
		name      string
		call      func(context.Context) error
		wantCode  int32
		wantRetry bool
		wantErr   error
	}{
		{"etcd does not answer", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, http.StatusGatewayTimeout, true, nil},
		{"etcd unreachable", func(context.Context) error { return status.Error(codes.Unavailable, "connection refused") }, http.StatusServiceUnavailable, true, nil},
		{"an answer stands", func(context.Context) error { return storage.NewKeyNotFoundError("k", 0) }, 0, false, storage.NewKeyNotFoundError("k", 0)},
		{"a refusal stands", func(context.Context) error {
			return apierrors.NewConflict(schema.GroupResource{Group: "batch.tensorstack.dev", Resource: "tensorflowtrainingjobs"}, "j", errors.New("x"))
		}, http.StatusConflict, false, nil},
		{"success", func(context.Context) error { return nil }, 0, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := s.bound(context.Background(), tc.call)
			if tc.wantCode == 0 {
				if (err == nil) != (tc.wantErr == nil) || (err != nil && err.Error() != tc.wantErr.Error()) {
					t.Errorf("bound = %v, want %v", err, tc.wantErr)
				}
				return
			}
			var apiStatus apierrors.APIStatus
			if !errors.As(err, &apiStatus) || apiStatus.Status().Code != tc.wantCode {
				t.Fatalf("bound = %v, want status %d", err, tc.wantCode)
			}
			if _, retry := apierrors.SuggestsClientDelay(err); retry != tc.wantRetry {
				t.Errorf("bound = %v, Retry-After %v, want %v", err, retry, tc.wantRetry)
			}
		})
	}
}
