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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// sharedWordsMax bounds the distinct words kept for sharing; sharedWordLen
// the length of a word worth sharing: the words of a status are phases,
// states, reasons and the messages that repeat, such as "the job
// succeeded".
const (
	sharedWordsMax = 4096
	sharedWordLen  = 128
)

// sharedWords hands out one copy of each short string it has seen. The
// decoder allocates every string of every job anew, and a stored finished
// job repeats the same few dozen words (its phase, its replicas' phases,
// containers' names, states and reasons, its conditions' types, reasons and
// messages, its managers): one copy of each serves them all. It keeps at
// most sharedWordsMax words and forgets them all when full.
type sharedWords struct {
	mu   sync.Mutex
	seen map[string]string
}

func newSharedWords() *sharedWords { return &sharedWords{seen: map[string]string{}} }

// share points each word of a decoded job's status and managedFields at
// its shared copy.
func (s *sharedWords) share(job batch.TrainingJob) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := job.JobStatus()
	st.Phase = batch.JobPhase(s.word(string(st.Phase)))
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type, c.Reason, c.Message = s.word(c.Type), s.word(c.Reason), s.word(c.Message)
	}
	for i := range st.Tasks {
		t := &st.Tasks[i]
		t.Type = batch.ReplicaType(s.word(string(t.Type)))
		for j := range t.ReplicaStatus {
			r := &t.ReplicaStatus[j]
			r.Phase, r.Reason = batch.ReplicaPhase(s.word(string(r.Phase))), s.word(r.Reason)
			for k := range r.Containers {
				c := &r.Containers[k]
				c.Name, c.State, c.Reason = s.word(c.Name), batch.ContainerState(s.word(string(c.State))), s.word(c.Reason)
				if t := c.LastTermination; t != nil {
					t.Reason, t.Message = s.word(t.Reason), s.word(t.Message)
				}
			}
		}
	}
	mf := job.GetManagedFields()
	for i := range mf {
		s.shareEntry(&mf[i])
	}
}

func (s *sharedWords) shareEntry(e *metav1.ManagedFieldsEntry) {
	e.Manager, e.APIVersion, e.FieldsType, e.Subresource = s.word(e.Manager), s.word(e.APIVersion), s.word(e.FieldsType), s.word(e.Subresource)
	e.Operation = metav1.ManagedFieldsOperationType(s.word(string(e.Operation)))
}

// word returns the shared copy of w; the caller holds s.mu.
func (s *sharedWords) word(w string) string {
	if w == "" || len(w) > sharedWordLen {
		return w
	}
	if shared, ok := s.seen[w]; ok {
		return shared
	}
	if len(s.seen) >= sharedWordsMax {
		clear(s.seen)
	}
	s.seen[w] = w
	return w
}
