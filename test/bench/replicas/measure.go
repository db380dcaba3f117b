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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// jobClient reaches the jobs one way: a replica's port, or kube-apiserver.
type jobClient struct {
	jobs versioned.Interface
}

// newJobClient is a client of replica r, or of kube-apiserver for nil.
func newJobClient(stack *benchkit.Stack, r *replica) (*jobClient, error) {
	var cfg *rest.Config
	var err error
	if r == nil {
		cfg, err = stack.AdminConfig()
		if err != nil {
			return nil, err
		}
	} else {
		cfg = rest.CopyConfig(r.config)
	}
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &jobClient{jobs: c}, nil
}

func (c *jobClient) create(ctx context.Context, namespace, name string) error {
	job := benchkit.OurJob(namespace, name, benchkit.JobOptions{Paused: true})
	_, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(namespace).Create(ctx, job, metav1.CreateOptions{})
	return err
}

// probe succeeds when the group is served.
func (c *jobClient) probe(ctx context.Context) error {
	_, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs("default").List(ctx, metav1.ListOptions{Limit: 1})
	return err
}

// creates is one measured run of creates.
type creates struct {
	wall time.Duration
	lat  []time.Duration
	// serverCPU is what the servers that store the jobs spent (the
	// replicas and etcd, and kube-apiserver when it proxied), machineCPU
	// what all CPUs did, both in seconds.
	serverCPU, machineCPU float64
}

// measureCreates creates o.jobs jobs named prefix-<i>, request i through
// clients[i % len(clients)], with the CPU of pids around it.
func (b *bench) measureCreates(ctx context.Context, namespace, prefix string, clients []*jobClient, pids []int) (creates, error) {
	cpuBefore, err := cpuSeconds(pids)
	if err != nil {
		return creates{}, err
	}
	machineBefore, err := benchkit.ReadMachineCPU()
	if err != nil {
		return creates{}, err
	}
	wall, lat, err := benchkit.Parallel(ctx, b.o.jobs, b.o.concurrency, func(ctx context.Context, i int) error {
		return clients[i%len(clients)].create(ctx, namespace, fmt.Sprintf("%s-%d", prefix, i))
	})
	if err != nil {
		return creates{}, err
	}
	machineAfter, err := benchkit.ReadMachineCPU()
	if err != nil {
		return creates{}, err
	}
	cpuAfter, err := cpuSeconds(pids)
	if err != nil {
		return creates{}, err
	}
	return creates{wall: wall, lat: lat, serverCPU: cpuAfter - cpuBefore, machineCPU: machineAfter.BusySecondsSince(machineBefore)}, nil
}

func cpuSeconds(pids []int) (float64, error) {
	sum := 0.0
	for _, pid := range pids {
		s, err := benchkit.CPUSeconds(pid)
		if err != nil {
			return 0, err
		}
		sum += s
	}
	return sum, nil
}

// measurePages reads o.pages pages of 500 jobs from four readers, each
// page from the next client, walking the namespace from its start again
// whenever a walk ends.
func (b *bench) measurePages(ctx context.Context, namespace string, clients []*jobClient) (time.Duration, []time.Duration, error) {
	const readers = 4
	var mu sync.Mutex
	next := 0
	pick := func() *jobClient {
		mu.Lock()
		defer mu.Unlock()
		c := clients[next%len(clients)]
		next++
		return c
	}
	perReader := b.o.pages / readers
	lat := make([]time.Duration, 0, perReader*readers)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for w := 0; w < readers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cont := ""
			for i := 0; i < perReader; i++ {
				t := time.Now()
				l, err := pick().jobs.BatchV1beta1().TensorFlowTrainingJobs(namespace).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
				if err != nil {
					errs <- fmt.Errorf("page %d: %w", i, err)
					return
				}
				d := time.Since(t)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				cont = l.Continue
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, nil, err
	}
	return time.Since(start), lat, nil
}

// measureWatchLag creates o.lagSamples jobs one at a time through writer
// and times each from the start of its create until a watch through
// watcher delivers it.
func (b *bench) measureWatchLag(ctx context.Context, namespace string, writer, watcher *jobClient) ([]time.Duration, error) {
	jobs := watcher.jobs.BatchV1beta1().TensorFlowTrainingJobs(namespace)
	l, err := jobs.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return nil, err
	}
	w, err := jobs.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	var lat []time.Duration
	for i := 0; i < b.o.lagSamples; i++ {
		name := fmt.Sprintf("lag-%d", i)
		start := time.Now()
		if err := writer.create(ctx, namespace, name); err != nil {
			return nil, err
		}
		if err := waitAdded(w, name, time.Minute); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(start))
	}
	return lat, nil
}

func waitAdded(w watch.Interface, name string, timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return fmt.Errorf("the watch ended before %s arrived", name)
			}
			if ev.Type == watch.Error {
				return fmt.Errorf("watch error: %v", ev.Object)
			}
			if m, err := metaName(ev.Object); err == nil && ev.Type == watch.Added && m == name {
				return nil
			}
		case <-timer.C:
			return fmt.Errorf("%s did not arrive within %s", name, timeout)
		}
	}
}
