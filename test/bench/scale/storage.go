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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// storageResult is what the training-apiserver does with the history.
type storageResult struct {
	rss, anon   int64
	etcdBytes   int64
	pages       []time.Duration
	fullList    time.Duration
	fullItems   int
	watchEvents int
	watchInit   time.Duration
	restart     time.Duration
	rssRestart  int64
}

// settle gives a process's memory time to come down after a burst of work
// (the garbage collector returns it in the background).
const settle = 15 * time.Second

func (b *bench) measureStorage(ctx context.Context) (*storageResult, error) {
	r := &storageResult{}
	pid, err := b.stack.Pid("training-apiserver")
	if err != nil {
		return nil, err
	}
	time.Sleep(settle)
	if r.rss, r.anon, err = benchkit.RSS(pid); err != nil {
		return nil, err
	}
	if r.etcdBytes, err = b.etcdSize(); err != nil {
		return nil, err
	}
	if err := b.timePages(ctx, r); err != nil {
		return nil, err
	}
	if err := b.timeFullList(ctx, r); err != nil {
		return nil, err
	}
	if err := b.timeWatchInit(ctx, r); err != nil {
		return nil, err
	}
	benchkit.Logf("restarting the training-apiserver")
	if r.restart, err = b.timedRestart("training-apiserver"); err != nil {
		return nil, err
	}
	if pid, err = b.stack.Pid("training-apiserver"); err != nil {
		return nil, err
	}
	time.Sleep(settle)
	if r.rssRestart, _, err = benchkit.RSS(pid); err != nil {
		return nil, err
	}
	return r, nil
}

// timePages reads the jobs page by page, o.pageSize at a time, as kubectl
// get --chunk-size and informers' initial lists do, and records each page.
func (b *bench) timePages(ctx context.Context, r *storageResult) error {
	jobs := b.direct.BatchV1beta1().TensorFlowTrainingJobs(namespace)
	cont := ""
	for len(r.pages) < b.o.pages {
		start := time.Now()
		list, err := jobs.List(ctx, metav1.ListOptions{Limit: b.o.pageSize, Continue: cont})
		if err != nil {
			return fmt.Errorf("page %d: %w", len(r.pages), err)
		}
		r.pages = append(r.pages, time.Since(start))
		if cont = list.Continue; cont == "" {
			// Start over: the pages of the whole collection are timed.
			continue
		}
	}
	return nil
}

// timeFullList reads every job in one LIST, in protobuf.
func (b *bench) timeFullList(ctx context.Context, r *storageResult) error {
	start := time.Now()
	list, err := b.direct.BatchV1beta1().TensorFlowTrainingJobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	r.fullList, r.fullItems = time.Since(start), len(list.Items)
	return nil
}

// timeWatchInit opens a watch that starts with every job (the streaming
// list informers use) and times it until the bookmark that ends the
// initial events.
func (b *bench) timeWatchInit(ctx context.Context, r *storageResult) error {
	start := time.Now()
	w, err := b.direct.BatchV1beta1().TensorFlowTrainingJobs(namespace).Watch(ctx, metav1.ListOptions{
		SendInitialEvents:    ptrTo(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	})
	if err != nil {
		return err
	}
	defer w.Stop()
	for event := range w.ResultChan() {
		switch event.Type {
		case watch.Added:
			r.watchEvents++
		case watch.Bookmark:
			if job, ok := event.Object.(*v1beta1.TensorFlowTrainingJob); ok && job.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				r.watchInit = time.Since(start)
				return nil
			}
		case watch.Error:
			return fmt.Errorf("watch: %v", event.Object)
		}
	}
	return fmt.Errorf("the watch ended after %d initial events", r.watchEvents)
}

func ptrTo[T any](v T) *T { return &v }
