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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// roundResult is what one round measured with some number of replicas.
type roundResult struct {
	replicas int
	// secondReady is how long the second replica took from its start to
	// ready, with the jobs of the earlier rounds deleted (2 replicas only).
	secondReady time.Duration
	direct      creates
	aggregated  creates
	// servedAggregated is how many of the creates through kube-apiserver
	// each replica served; connections how many connections the balancer
	// gave each.
	servedAggregated []float64
	connections      []int64
	pagesWall        time.Duration
	pages            []time.Duration
	watchLag         []time.Duration
	// rss is each replica's resident memory after the round's creates.
	rss []int64
}

func (b *bench) round(ctx context.Context, round, n int) (*roundResult, error) {
	r := &roundResult{replicas: n}
	replicas := []*replica{b.first}
	if n == 2 {
		start := time.Now()
		second, err := startReplica(ctx, b.stack, b.first, b.o.secondPort)
		if err != nil {
			return nil, err
		}
		defer second.stop()
		r.secondReady = time.Since(start)
		replicas = append(replicas, second)
	}
	var ports, pids []int
	var clients []*jobClient
	for _, rep := range replicas {
		ports = append(ports, rep.port)
		pids = append(pids, rep.pid)
		c, err := newJobClient(b.stack, rep)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	aggregated, err := newJobClient(b.stack, nil)
	if err != nil {
		return nil, err
	}
	namespace := fmt.Sprintf("bench-replicas-%d-%d", round, n)
	if err := benchkit.EnsureNamespace(ctx, b.kube, namespace); err != nil {
		return nil, err
	}
	defer b.cleanUp(namespace, clients[0])

	if r.direct, err = b.measureCreates(ctx, namespace, "direct", clients, append(pids, b.etcdPid)); err != nil {
		return nil, fmt.Errorf("direct creates: %w", err)
	}

	connsBefore := b.connections(ports)
	b.balancer.setBackends(ports...)
	servedBefore, err := createsServed(ctx, replicas)
	if err != nil {
		return nil, err
	}
	if r.aggregated, err = b.measureCreates(ctx, namespace, "aggregated", []*jobClient{aggregated}, append(pids, b.etcdPid, b.kubePid)); err != nil {
		return nil, fmt.Errorf("creates through kube-apiserver: %w", err)
	}
	servedAfter, err := createsServed(ctx, replicas)
	if err != nil {
		return nil, err
	}
	for i := range replicas {
		r.servedAggregated = append(r.servedAggregated, servedAfter[i]-servedBefore[i])
		r.connections = append(r.connections, b.balancer.connections(ports[i])-connsBefore[i])
	}

	if r.pagesWall, r.pages, err = b.measurePages(ctx, namespace, clients); err != nil {
		return nil, fmt.Errorf("pages: %w", err)
	}
	if r.watchLag, err = b.measureWatchLag(ctx, namespace, clients[0], clients[len(clients)-1]); err != nil {
		return nil, fmt.Errorf("watch: %w", err)
	}
	for _, rep := range replicas {
		rss, _, err := benchkit.RSS(rep.pid)
		if err != nil {
			return nil, err
		}
		r.rss = append(r.rss, rss)
	}
	return r, nil
}

func (b *bench) connections(ports []int) []int64 {
	out := make([]int64, len(ports))
	for i, p := range ports {
		out[i] = b.balancer.connections(p)
	}
	return out
}

// createsServed reads from each replica's metrics how many job creates it
// has served.
func createsServed(ctx context.Context, replicas []*replica) ([]float64, error) {
	out := make([]float64, len(replicas))
	for i, rep := range replicas {
		client, err := rep.restClient()
		if err != nil {
			return nil, err
		}
		samples, err := benchkit.ScrapeMetrics(ctx, client)
		if err != nil {
			return nil, fmt.Errorf("%s metrics: %w", rep.name, err)
		}
		out[i] = samples.Sum("apiserver_request_total", func(l map[string]string) bool {
			return l["verb"] == "POST" && l["resource"] == benchkit.OurResource.Resource && l["subresource"] == ""
		})
	}
	return out, nil
}

// cleanUp deletes the round's jobs and namespace and waits until the jobs
// are gone, so that the next round starts from the same store.
func (b *bench) cleanUp(namespace string, c *jobClient) {
	ctx := context.Background()
	jobs := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(namespace)
	if err := jobs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		benchkit.Logf("WARNING: deleting the jobs of %s: %v", namespace, err)
	}
	err := wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := jobs.List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil && len(l.Items) == 0, nil
	})
	if err != nil {
		benchkit.Logf("WARNING: the jobs of %s are not gone: %v", namespace, err)
	}
	if err := b.kube.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil {
		benchkit.Logf("WARNING: deleting namespace %s: %v", namespace, err)
	}
}

func metaName(obj runtime.Object) (string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", err
	}
	return m.GetName(), nil
}
