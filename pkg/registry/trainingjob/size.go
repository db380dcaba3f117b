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
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
)

const (
	// EtcdMaxRequestBytes is the largest write etcd accepts: its default
	// --max-request-bytes (1.5 MiB), which the embedded etcd is started with.
	EtcdMaxRequestBytes = 3 * 512 * 1024
	// etcdTxnOverheadBytes is left below EtcdMaxRequestBytes for what etcd's
	// transaction adds to the object: the key (up to ~400 bytes) in both the
	// compare and the put, and the request's framing. 64 KiB is far more
	// than that, so a job under the limit never meets etcd's.
	etcdTxnOverheadBytes = 64 * 1024
	// MaxStoredObjectBytes is the largest job, encoded as it is stored
	// (in the storage media type, managedFields included), that a create or
	// update may leave behind: 1,507,328 bytes. A larger one is refused with
	// 413.
	MaxStoredObjectBytes = EtcdMaxRequestBytes - etcdTxnOverheadBytes
)

// etcdTooLargeMessages are how etcd says a write was over its
// --max-request-bytes, and how its gRPC client says a message was over the
// client's send limit. k8s.io/apiserver recognizes the same texts.
var etcdTooLargeMessages = []string{"etcdserver: request is too large", "trying to send message larger than max"}

// limitStoredSize makes the store refuse, with 413, a write that would store
// a job larger than MaxStoredObjectBytes, in a dry run as well, and answer
// 4xx for the other storage errors a request causes. Without it etcd's
// refusal of a large write, and a malformed resourceVersion, were 500s.
// It is called on a completed store, before its subresources copy it.
func limitStoredSize(store *registry.Store) {
	limit := objectSizeLimit{codec: store.Storage.Codec, resource: store.DefaultQualifiedResource, maxBytes: MaxStoredObjectBytes}
	store.Storage.Storage = clientErrorStorage{Interface: store.Storage.Storage, limit: limit}
	// A dry run never reaches the storage: the store encodes the object with
	// this codec instead, which is where a dry run learns of the limit.
	store.Storage.Codec = sizeLimitedCodec{Codec: store.Storage.Codec, limit: limit}
}

// objectSizeLimit measures an object as the storage encodes it.
type objectSizeLimit struct {
	codec    runtime.Codec
	resource schema.GroupResource
	maxBytes int
}

// check refuses obj if its encoding is over the limit.
func (l objectSizeLimit) check(obj runtime.Object) error {
	data, err := runtime.Encode(l.codec, obj)
	if err != nil {
		return fmt.Errorf("encoding %s to measure its size: %w", l.resource, err)
	}
	return l.checkSize(obj, len(data))
}

func (l objectSizeLimit) checkSize(obj runtime.Object, size int) error {
	if size <= l.maxBytes {
		return nil
	}
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"%s %q would take %d bytes in storage, more than the limit of %d bytes per job",
		l.resource, nameOf(obj), size, l.maxBytes))
}

// fromEtcd turns etcd's refusal of a large write into a 413 naming the
// limit: it happens when an external etcd's --max-request-bytes is smaller
// than the default the limit leaves room under.
func (l objectSizeLimit) fromEtcd(err error, obj runtime.Object) error {
	if err == nil || !isEtcdTooLarge(err) {
		return err
	}
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"etcd refused to store %s %q as too large (%v); jobs are limited to %d bytes, and to less where etcd's --max-request-bytes is below %d",
		l.resource, nameOf(obj), err, l.maxBytes, EtcdMaxRequestBytes))
}

func isEtcdTooLarge(err error) bool {
	if _, isAPIError := err.(apierrors.APIStatus); isAPIError {
		return false
	}
	for _, message := range etcdTooLargeMessages {
		if strings.Contains(err.Error(), message) {
			return true
		}
	}
	return false
}

func nameOf(obj runtime.Object) string {
	if accessor, err := meta.Accessor(obj); err == nil {
		return accessor.GetName()
	}
	return ""
}

// clientErrorStorage is the storage with the errors a request causes turned
// into 4xx: a write over the size limit or refused by etcd as too large is
// 413, and a malformed resourceVersion in a get, list or watch is 400.
type clientErrorStorage struct {
	storage.Interface
	limit objectSizeLimit
}

func (s clientErrorStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	if err := s.limit.check(obj); err != nil {
		return err
	}
	return s.limit.fromEtcd(s.Interface.Create(ctx, key, obj, out, ttl), obj)
}

func (s clientErrorStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	var updated runtime.Object
	checkedUpdate := func(existing runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
		obj, ttl, err := tryUpdate(existing, res)
		if err != nil {
			return nil, nil, err
		}
		if err := s.limit.check(obj); err != nil {
			return nil, nil, err
		}
		updated = obj
		return obj, ttl, nil
	}
	err := s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions, checkedUpdate, cachedExistingObject)
	return s.limit.fromEtcd(err, updated)
}

func (s clientErrorStorage) Get(ctx context.Context, key string, opts storage.GetOptions, objPtr runtime.Object) error {
	return badResourceVersion(s.Interface.Get(ctx, key, opts, objPtr))
}

func (s clientErrorStorage) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	return badResourceVersion(s.Interface.GetList(ctx, key, opts, listObj))
}

func (s clientErrorStorage) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w, err := s.Interface.Watch(ctx, key, opts)
	return w, badResourceVersion(err)
}

// badResourceVersion makes the storage's complaint about a resourceVersion
// that is no number a 400, as a list already answers it. The storage's
// InvalidError has no other cause than such a resourceVersion.
func badResourceVersion(err error) error {
	if !storage.IsInvalidError(err) {
		return err
	}
	return apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: %v", err))
}

// sizeLimitedCodec encodes as its codec does, and refuses an object whose
// encoding is over the limit.
type sizeLimitedCodec struct {
	runtime.Codec
	limit objectSizeLimit
}

func (c sizeLimitedCodec) Encode(obj runtime.Object, w io.Writer) error {
	var data bytes.Buffer
	if err := c.Codec.Encode(obj, &data); err != nil {
		return err
	}
	if err := c.limit.checkSize(obj, data.Len()); err != nil {
		return err
	}
	_, err := w.Write(data.Bytes())
	return err
}

func (c sizeLimitedCodec) Identifier() runtime.Identifier {
	return runtime.Identifier("sizeLimited(" + string(c.Codec.Identifier()) + ")")
}
