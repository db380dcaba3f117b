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

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// collection is what the storage figures are read through: our jobs with
// the typed clientset in protobuf, the CRD's with the dynamic client in
// JSON, the one encoding kube-apiserver serves custom resources in.
type collection interface {
	// list returns how many items a LIST returned and its continue token.
	list(ctx context.Context, opts metav1.ListOptions) (items int, cont string, err error)
	watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// server is an apiserver whose storage of the history is measured.
type server struct {
	// component names the process in the stack (its pid, its restart).
	component string
	jobs      collection
	// etcdDB is the path of its etcd's database file.
	etcdDB string
}

// storageResult is what a server does with the history.
type storageResult struct {
	// rssEmpty is the server's RSS before the jobs were stored.
	rssEmpty    int64
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

// settledRSS is the server's RSS after settle.
func (b *bench) settledRSS(s server) (rss, anon int64, err error) {
	pid, err := b.stack.Pid(s.component)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(settle)
	return benchkit.RSS(pid)
}

func (b *bench) measureStorage(ctx context.Context, s server, r *storageResult) error {
	var err error
	if r.rss, r.anon, err = b.settledRSS(s); err != nil {
		return err
	}
	if r.etcdBytes, err = fileSize(s.etcdDB); err != nil {
		return err
	}
	if err := b.timePages(ctx, s, r); err != nil {
		return err
	}
	if err := timeFullList(ctx, s, r); err != nil {
		return err
	}
	if err := timeWatchInit(ctx, s, r); err != nil {
		return err
	}
	benchkit.Logf("restarting the %s", s.component)
	if r.restart, err = b.timedRestart(s.component); err != nil {
		return err
	}
	r.rssRestart, _, err = b.settledRSS(s)
	return err
}

// timePages reads the jobs page by page, o.pageSize at a time, as kubectl
// get --chunk-size and informers' initial lists do, and records each page.
func (b *bench) timePages(ctx context.Context, s server, r *storageResult) error {
	cont := ""
	for len(r.pages) < b.o.pages {
		start := time.Now()
		_, next, err := s.jobs.list(ctx, metav1.ListOptions{Limit: b.o.pageSize, Continue: cont})
		if err != nil {
			return fmt.Errorf("page %d: %w", len(r.pages), err)
		}
		r.pages = append(r.pages, time.Since(start))
		// At the end, start over: the pages of the whole collection are timed.
		cont = next
	}
	return nil
}

// timeFullList reads every job in one LIST.
func timeFullList(ctx context.Context, s server, r *storageResult) error {
	start := time.Now()
	items, _, err := s.jobs.list(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	r.fullList, r.fullItems = time.Since(start), items
	return nil
}

// timeWatchInit opens a watch that starts with every job (the streaming
// list informers use) and times it until the bookmark that ends the
// initial events.
func timeWatchInit(ctx context.Context, s server, r *storageResult) error {
	start := time.Now()
	w, err := s.jobs.watch(ctx, metav1.ListOptions{
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
			if initialEventsEnd(event.Object) {
				r.watchInit = time.Since(start)
				return nil
			}
		case watch.Error:
			return fmt.Errorf("watch: %v", event.Object)
		}
	}
	return fmt.Errorf("the watch ended after %d initial events", r.watchEvents)
}

// initialEventsEnd tells the bookmark that ends a watch's initial events.
func initialEventsEnd(obj any) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

func ptrTo[T any](v T) *T { return &v }
