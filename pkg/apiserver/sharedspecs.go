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
	"encoding/binary"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// sharedSpecsMax bounds the distinct replica spec lists, and apart from them
// the distinct pod templates, kept for sharing. Jobs come from few
// manifests at a time; when a bound is reached its table starts anew, and
// the objects decoded so far keep what they got.
const sharedSpecsMax = 512

// sharedSpecs hands decoded jobs one copy of each replica spec list seen
// before, and failing that one copy of each pod template: the pod templates
// are most of a job's memory, and the jobs of one manifest (a sweep, a
// pipeline's runs) repeat them byte for byte. Equal means equal in protobuf,
// which is how etcd holds them.
//
// What is handed out is shared by many jobs and must never be changed in
// place; the server changes deep copies only (see compactingCodec).
type sharedSpecs struct {
	mu        sync.Mutex
	lists     map[string][]batch.ReplicaSpec
	templates map[string]corev1.PodTemplateSpec
}

func newSharedSpecs() *sharedSpecs {
	return &sharedSpecs{lists: map[string][]batch.ReplicaSpec{}, templates: map[string]corev1.PodTemplateSpec{}}
}

// share points spec.ReplicaSpecs at the shared list of its content, or at a
// list of exactly its length whose templates are shared. A template that
// does not encode is left as it is.
func (s *sharedSpecs) share(spec *batch.TrainingJobSpec) {
	specs := spec.ReplicaSpecs
	if len(specs) == 0 {
		return
	}
	templates := make([]string, len(specs))
	var list []byte
	for i := range specs {
		t, err := specs[i].Template.Marshal()
		if err != nil {
			return
		}
		templates[i] = string(t)
		list = appendSpecKey(list, &specs[i], t)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if shared, ok := s.lists[string(list)]; ok {
		spec.ReplicaSpecs = shared
		return
	}
	// The decoder grows the list by appending, so it has room to spare; the
	// copy has none.
	own := append(make([]batch.ReplicaSpec, 0, len(specs)), specs...)
	for i := range own {
		if t, ok := s.templates[templates[i]]; ok {
			own[i].Template = t
			continue
		}
		if len(s.templates) >= sharedSpecsMax {
			clear(s.templates)
		}
		s.templates[templates[i]] = own[i].Template
	}
	if len(s.lists) >= sharedSpecsMax {
		clear(s.lists)
	}
	s.lists[string(list)] = own
	spec.ReplicaSpecs = own
}

// appendSpecKey appends what tells a replica spec apart: its type, replicas,
// restart policy and encoded template, each prefixed by its length.
func appendSpecKey(key []byte, spec *batch.ReplicaSpec, template []byte) []byte {
	key = binary.AppendUvarint(key, uint64(len(spec.Type)))
	key = append(key, spec.Type...)
	if spec.Replicas == nil {
		key = append(key, 0)
	} else {
		key = append(key, 1)
		key = binary.AppendVarint(key, int64(*spec.Replicas))
	}
	key = binary.AppendUvarint(key, uint64(len(spec.RestartPolicy)))
	key = append(key, spec.RestartPolicy...)
	key = binary.AppendUvarint(key, uint64(len(template)))
	return append(key, template...)
}
