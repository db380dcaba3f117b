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

package controller

import (
	"encoding/json"
	"strconv"
	"sync"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// statusWrites remembers, per job, the resourceVersion of the last status
// the controller wrote, until the job informer has caught up with it.
//
// A reconcile that reads the job from a cache still behind that write
// would judge the pods against an older status: a pod the controller just
// deleted to replace it, with its replacement recorded in the newer status,
// would look deleted by someone else, and a failure would be counted again.
// So such a reconcile waits for the cache; the informer's event for the
// write queues the job again.
//
// resourceVersions are compared as numbers, which they are with etcd; one
// that is not a number never holds a reconcile back.
type statusWrites struct {
	mu sync.Mutex
	rv map[jobKey]uint64
}

// statusWriteWait is how long a reconcile held back by statusWrites waits
// at most for the informer's event.
const statusWriteWait = time.Second

func newStatusWrites() *statusWrites { return &statusWrites{rv: map[jobKey]uint64{}} }

// wrote records the resourceVersion a status write returned.
func (w *statusWrites) wrote(key jobKey, resourceVersion string) {
	rv, err := strconv.ParseUint(resourceVersion, 10, 64)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if rv > w.rv[key] {
		w.rv[key] = rv
	}
}

// behind says whether a cached job is older than the controller's last
// status write; once it is not, the write is forgotten.
func (w *statusWrites) behind(key jobKey, cachedResourceVersion string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	written, ok := w.rv[key]
	if !ok {
		return false
	}
	cached, err := strconv.ParseUint(cachedResourceVersion, 10, 64)
	if err != nil || cached >= written {
		delete(w.rv, key)
		return false
	}
	return true
}

// forget drops what is known of a job that is gone.
func (w *statusWrites) forget(key jobKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, key)
}

// statusPatch is the JSON merge patch that turns the status old into cur:
// only what changed, without a resourceVersion, so a status write does not
// conflict with a change to the spec or labels made meanwhile. Only the
// controller writes the status, and it computes cur from a cache that has
// its own last write (statusWrites), so old is what is stored. The UID
// keeps the patch off a job of the same name created anew: the apiserver
// refuses to change an object's UID.
func statusPatch(uid types.UID, old, cur *v1beta1.TrainingJobStatus) ([]byte, error) {
	before, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	diff, err := jsonpatch.CreateMergePatch(before, after)
	if err != nil {
		return nil, err
	}
	type metadata struct {
		UID types.UID `json:"uid"`
	}
	return json.Marshal(struct {
		Metadata metadata        `json:"metadata"`
		Status   json.RawMessage `json:"status"`
	}{Metadata: metadata{UID: uid}, Status: diff})
}
