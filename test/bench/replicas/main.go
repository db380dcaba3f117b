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

// Command replicas is the benchmark of make bench-replicas
// (hack/bench-replicas.sh): one training-apiserver against two, both on the
// stack's etcd, the way artifacts/deploy runs them. For each count it
// measures
//
//   - creates sent straight to the replicas, each request to the next one
//     (what kube-apiserver's endpoint routing does per request);
//   - creates through kube-apiserver, whose aggregator reaches the replicas
//     through a connection balancer that stands in for the Service's
//     virtual IP (like kube-proxy, it spreads connections, not requests);
//   - pages of 500 jobs read from the replicas in turn;
//   - how long a job created on the first replica takes to reach a watch
//     on the last one;
//   - each replica's memory, and how long a second replica takes to be
//     ready.
//
// It prints a markdown table; see docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-replicas: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	localDir     string
	jobs         int
	concurrency  int
	rounds       int
	pages        int
	lagSamples   int
	secondPort   int
	balancerPort int
	out          string
}

func run() error {
	o := options{}
	flag.StringVar(&o.localDir, "local-dir", benchkit.StringEnv("BENCH_LOCAL_DIR", "_output/local"), "state directory of the running local stack")
	flag.IntVar(&o.jobs, "jobs", benchkit.IntEnv("BENCH_JOBS", 3000), "jobs created each way (direct, through kube-apiserver) per measurement (env BENCH_JOBS)")
	flag.IntVar(&o.concurrency, "concurrency", benchkit.IntEnv("BENCH_CONCURRENCY", 8), "requests in flight (env BENCH_CONCURRENCY)")
	flag.IntVar(&o.rounds, "rounds", benchkit.IntEnv("BENCH_ROUNDS", 3), "rounds of one replica then two; the table shows medians (env BENCH_ROUNDS)")
	flag.IntVar(&o.pages, "pages", 200, "pages of 500 jobs read per measurement")
	flag.IntVar(&o.lagSamples, "lag-samples", 100, "jobs created one at a time to time the watch")
	flag.IntVar(&o.secondPort, "second-port", 18445, "the second replica's port on 127.0.0.1")
	flag.IntVar(&o.balancerPort, "balancer-port", 18446, "the connection balancer's port on 127.0.0.1")
	flag.StringVar(&o.out, "out", "", "also write the table to this file")
	flag.Parse()
	if o.rounds < 1 || o.jobs < 1 || o.concurrency < 1 {
		return fmt.Errorf("-rounds (%d), -jobs (%d) and -concurrency (%d) must be 1 or more", o.rounds, o.jobs, o.concurrency)
	}

	stack, err := benchkit.LoadStack(o.localDir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	b, err := newBench(stack, o)
	if err != nil {
		return err
	}
	defer b.balancer.close()

	benchkit.Logf("routing the APIService through the balancer on port %d", o.balancerPort)
	if err := b.route(ctx, o.balancerPort); err != nil {
		return fmt.Errorf("routing the APIService through the balancer: %w", err)
	}
	defer func() {
		benchkit.Logf("routing the APIService back to port %d", b.first.port)
		if err := b.route(context.Background(), b.first.port); err != nil {
			benchkit.Logf("WARNING: routing the APIService back: %v", err)
		}
	}()

	var results []*roundResult
	for round := 1; round <= o.rounds; round++ {
		for _, n := range []int{1, 2} {
			benchkit.Logf("round %d of %d: %d replica(s)", round, o.rounds, n)
			r, err := b.round(ctx, round, n)
			if err != nil {
				return fmt.Errorf("round %d, %d replica(s): %w", round, n, err)
			}
			results = append(results, r)
		}
	}

	var out strings.Builder
	report(&out, o, results)
	fmt.Print(out.String())
	if o.out != "" {
		return os.WriteFile(o.out, []byte(out.String()), 0o644)
	}
	return nil
}

// bench holds what every round uses.
type bench struct {
	o        options
	stack    *benchkit.Stack
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	first    *replica
	balancer *balancer
	etcdPid  int
	kubePid  int
}

func newBench(stack *benchkit.Stack, o options) (*bench, error) {
	admin, err := stack.AdminConfig()
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, stack: stack}
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return nil, err
	}
	if b.dyn, err = dynamic.NewForConfig(admin); err != nil {
		return nil, err
	}
	if b.first, err = firstReplica(stack); err != nil {
		return nil, err
	}
	if b.etcdPid, err = stack.Pid("etcd"); err != nil {
		return nil, err
	}
	if b.kubePid, err = stack.Pid("kube-apiserver"); err != nil {
		return nil, err
	}
	if b.balancer, err = newBalancer(o.balancerPort); err != nil {
		return nil, err
	}
	b.balancer.setBackends(b.first.port)
	return b, nil
}

// route points the APIService at port and waits until a request through
// kube-apiserver gets through.
func (b *bench) route(ctx context.Context, port int) error {
	aggregated, err := newJobClient(b.stack, nil)
	if err != nil {
		return err
	}
	return routeAPIService(ctx, b.kube, b.dyn, port, aggregated.probe)
}
