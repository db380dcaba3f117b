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
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// DefaultEtcdRequestTimeout bounds each storage call of a request. A healthy
// etcd answers in milliseconds; one that is unreachable but whose
// connections stay open (frozen, partitioned) never does, and without the
// bound a write answered 504 only after the handlers' 34s, a get after the
// 60s request timeout, and a list not at all (the stream was reset).
const DefaultEtcdRequestTimeout = 15 * time.Second

// boundedRESTOptionsGetter gives every storage the server builds a deadline
// per call.
type boundedRESTOptionsGetter struct {
	generic.RESTOptionsGetter
	timeout time.Duration
}

func (g boundedRESTOptionsGetter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	options, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil || options.Decorator == nil {
		return options, err
	}
	decorator, timeout := options.Decorator, g.timeout
	options.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers,
	) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorator(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return s, destroy, err
		}
		return boundedStorage{Interface: s, timeout: timeout}, destroy, nil
	}
	return options, nil
}

// boundedStorage ends each call of a request that etcd does not answer
// within timeout: the request is answered 504 with Retry-After. It wraps the watch cache, so a
// read the cache can serve is answered from it as before. Watches are not
// bounded: they last as long as their client wants.
type boundedStorage struct {
	storage.Interface
	timeout time.Duration
}

// storageRetryAfterSeconds is what a request that etcd did not answer is
// told to wait before it tries again.
const storageRetryAfterSeconds = 2

// bound runs call with the deadline. A call that etcd did not answer in
// time is answered 504, and one that could not reach etcd 503, both with
// Retry-After; storage's own "unreachable" error would be a 500.
func (s boundedStorage) bound(ctx context.Context, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := call(ctx)
	if err == nil {
		return err
	}
	// An answer that came, a refusal of the update or a missing object, say,
	// stands.
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	var storageErr *storage.StorageError
	if errors.As(err, &storageErr) && storageErr.Code != storage.ErrCodeUnreachable && storageErr.Code != storage.ErrCodeTimeout {
		return err
	}
	switch {
	case ctx.Err() != nil:
		return apierrors.NewTimeoutError(fmt.Sprintf("etcd did not answer within %v", s.timeout), storageRetryAfterSeconds)
	case etcdUnavailable(err):
		unavailable := apierrors.NewServiceUnavailable(fmt.Sprintf("etcd is unreachable: %v", err))
		unavailable.ErrStatus.Details = &metav1.StatusDetails{RetryAfterSeconds: storageRetryAfterSeconds}
		return unavailable
	}
	return err
}

func (s boundedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	return s.bound(ctx, func(ctx context.Context) error { return s.Interface.Create(ctx, key, obj, out, ttl) })
}

func (s boundedStorage) Delete(ctx context.Context, key string, out runtime.Object, preconditions *storage.Preconditions,
	validateDeletion storage.ValidateObjectFunc, cachedExistingObject runtime.Object, opts storage.DeleteOptions) error {
	return s.bound(ctx, func(ctx context.Context) error {
		return s.Interface.Delete(ctx, key, out, preconditions, validateDeletion, cachedExistingObject, opts)
	})
}

func (s boundedStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	return s.bound(ctx, func(ctx context.Context) error { return s.Interface.Get(ctx, key, opts, objPtr) })
}

func (s boundedStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	return s.bound(ctx, func(ctx context.Context) error { return s.Interface.GetList(ctx, key, opts, listObj) })
}

func (s boundedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	return s.bound(ctx, func(ctx context.Context) error {
		return s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, tryUpdate, cachedExistingObject)
	})
}

func (s boundedStorage) Stats(ctx context.Context) (storage.Stats, error) {
	var stats storage.Stats
	err := s.bound(ctx, func(ctx context.Context) error {
		var err error
		stats, err = s.Interface.Stats(ctx)
		return err
	})
	return stats, err
}

func (s boundedStorage) GetCurrentResourceVersion(ctx context.Context) (uint64, error) {
	var rv uint64
	err := s.bound(ctx, func(ctx context.Context) error {
		var err error
		rv, err = s.Interface.GetCurrentResourceVersion(ctx)
		return err
	})
	return rv, err
}

// etcdUnavailable says whether err is the etcd client's word that etcd could
// not be reached: a connection that failed, or was given up on when etcd
// stopped answering its keepalives.
func etcdUnavailable(err error) bool {
	var grpcErr interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &grpcErr) {
		return false
	}
	switch grpcErr.GRPCStatus().Code() {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
