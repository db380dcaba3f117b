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
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"tensorstack.dev/training/pkg/apis/batch"
)

// compactingCodec is the storage codec made to decode jobs smaller in
// memory. The objects it decodes are what the watch cache keeps, every job
// for as long as it exists, so at 10,000 jobs each kilobyte saved per job is
// 10 MB of the server's heap:
//
//   - The replica specs, pod templates inline, are most of a job. Jobs of
//     one manifest repeat them: they share one copy of the list, or of each
//     template (sharedSpecs).
//   - The decoder grows lists by appending, so they have room to spare: a
//     status's lists are moved to arrays of exactly their length.
//   - A status repeats a few dozen words (phases, states, reasons), and so
//     do the managers of managedFields: they share one copy of each
//     (sharedWords).
//   - The managedFields of jobs written alike (one client, one template) are
//     byte for byte the same, about 1 KiB each: they share one copy.
//
// Sharing is safe because objects read from storage are never changed in
// place: the watch cache hands out the same objects to every reader, and
// whoever changes one changes a deep copy.
type compactingCodec struct {
	runtime.Codec
	specs  *sharedSpecs
	words  *sharedWords
	fields *sharedBytes
}

func newCompactingCodec(codec runtime.Codec) compactingCodec {
	return compactingCodec{Codec: codec, specs: newSharedSpecs(), words: newSharedWords(), fields: newSharedBytes(sharedFieldsMax)}
}

func (c compactingCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.Codec.Decode(data, defaults, into)
	if err == nil {
		if job, ok := obj.(batch.TrainingJob); ok {
			c.specs.share(job.CommonSpec())
			compactStatus(job.JobStatus())
			c.words.share(job)
			mf := job.GetManagedFields()
			for i := range mf {
				if f := mf[i].FieldsV1; f != nil {
					// SetRawBytes would copy the bytes, and sharing them
					// is the point.
					//lint:ignore SA1019 the shared bytes must be assigned, not copied
					f.Raw = c.fields.get(f.GetRawBytes())
				}
			}
		}
	}
	return obj, gvk, err
}

// compactStatus moves the status's lists to arrays of exactly their
// length.
func compactStatus(st *batch.TrainingJobStatus) {
	st.Conditions = exactly(st.Conditions)
	st.Tasks = exactly(st.Tasks)
	for i := range st.Tasks {
		t := &st.Tasks[i]
		t.ReplicaStatus = exactly(t.ReplicaStatus)
		for j := range t.ReplicaStatus {
			t.ReplicaStatus[j].Containers = exactly(t.ReplicaStatus[j].Containers)
		}
	}
}

// exactly returns s in an array of exactly its length.
func exactly[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

// sharedFieldsMax bounds the distinct managedFields contents kept for
// sharing: jobs come from few clients and templates at a time.
const sharedFieldsMax = 1024

// sharedBytes hands out one copy of each content it has seen. It keeps at
// most max contents and forgets them all when full: objects keep the
// copies they got, and later ones start sharing anew.
type sharedBytes struct {
	mu   sync.Mutex
	max  int
	seen map[string][]byte
}

func newSharedBytes(max int) *sharedBytes {
	return &sharedBytes{max: max, seen: map[string][]byte{}}
}

// get returns the shared copy of b's content, which must not be changed.
func (s *sharedBytes) get(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if shared, ok := s.seen[string(b)]; ok {
		return shared
	}
	if len(s.seen) >= s.max {
		clear(s.seen)
	}
	s.seen[string(b)] = b
	return b
}
