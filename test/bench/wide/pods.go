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

package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// podWatcher notes when each pod of a namespace was first seen.
type podWatcher struct {
	mu      sync.Mutex
	seen    map[types.UID]time.Time
	stopCh  chan struct{}
	factory informers.SharedInformerFactory
}

func watchPods(ctx context.Context, kube kubernetes.Interface, ns string) (*podWatcher, error) {
	w := &podWatcher{seen: map[types.UID]time.Time{}, stopCh: make(chan struct{})}
	w.factory = informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := w.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: w.add}); err != nil {
		return nil, err
	}
	w.factory.Start(w.stopCh)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.stop()
		return nil, fmt.Errorf("the pod informer did not sync")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.seen); n > 0 {
		w.stop()
		return nil, fmt.Errorf("%d pods in namespace %s before the run", n, ns)
	}
	return w, nil
}

func (w *podWatcher) add(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.seen[p.UID]; !ok {
		w.seen[p.UID] = time.Now()
	}
}

// waitFor waits until n pods were seen, calling every second, and returns
// the time from start until the last of the first n appeared.
func (w *podWatcher) waitFor(n int, start time.Time, timeout time.Duration, every func() error) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for {
		w.mu.Lock()
		count, last := len(w.seen), time.Time{}
		for _, t := range w.seen {
			if t.After(last) {
				last = t
			}
		}
		w.mu.Unlock()
		if count >= n {
			return last.Sub(start), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d pods after %s", count, n, timeout)
		}
		if err := every(); err != nil {
			return 0, err
		}
		time.Sleep(time.Second)
	}
}

func (w *podWatcher) stop() {
	select {
	case <-w.stopCh:
	default:
		close(w.stopCh)
		w.factory.Shutdown()
	}
}
