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
	"sync"

	corev1 "k8s.io/api/core/v1"

	"tensorstack.dev/training/pkg/podbuilder"
)

// Jobs are reconciled from two work queues. The main one is FIFO: when
// thousands of jobs start together, it holds their pod creations for as long
// as the cluster takes to make the pods. A job one of whose pods has just
// ended goes to the urgent queue instead, which workers of its own drain:
// its reconcile may decide the job's outcome, and that must not wait for
// other jobs' pods to be created. A key may sit in both queues; keyLocks
// keeps two workers off the same job at once.

// urgentPodChange says whether a pod change goes to the urgent queue: it
// may decide its job's outcome (the pod exited, or is being deleted). A pod
// that waits at its attempt barrier goes the same way: the last of a job's
// pods to get there lets an in-place restart release the new attempt, and
// every replica waits for that.
func urgentPodChange(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil || isTerminated(p) || podbuilder.ParkedAtBarrier(p)
}

// urgentWorkers is how many workers drain the urgent queue next to the
// given number on the main one.
func urgentWorkers(workers int) int {
	return max(1, workers/2)
}

// keyLocks serializes the reconciles of each job across the queues.
type keyLocks struct {
	mu   sync.Mutex
	held map[jobKey]*keyLock
}

type keyLock struct {
	sync.Mutex
	users int
}

func newKeyLocks() *keyLocks { return &keyLocks{held: map[jobKey]*keyLock{}} }

// lock waits until no other worker reconciles key, and returns the unlock.
func (l *keyLocks) lock(key jobKey) (unlock func()) {
	l.mu.Lock()
	e := l.held[key]
	if e == nil {
		e = &keyLock{}
		l.held[key] = e
	}
	e.users++
	l.mu.Unlock()
	e.Lock()
	return func() {
		e.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.held, key)
		}
		l.mu.Unlock()
	}
}

// jobKey identifies a job across kinds; it is the work queues' item.
type jobKey struct {
	Kind, Namespace, Name string
}

func (k jobKey) String() string { return k.Kind + "/" + k.Namespace + "/" + k.Name }
