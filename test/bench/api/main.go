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

// Command api is the API benchmark of make bench-api (hack/bench-api.sh),
// run against the local control plane: the same jobs (chief 1, ps 1,
// worker 3; paused, so no pod is made) created, listed and deleted through
//
//   - Kubeflow's TFJob CustomResourceDefinition (training-operator v1.9.4),
//     served by kube-apiserver itself;
//   - our TensorFlowTrainingJob through kube-apiserver, which proxies it to
//     the training-apiserver (the aggregator);
//   - our TensorFlowTrainingJob straight from the training-apiserver's port.
//
// It prints a markdown table: creates/s at a fixed concurrency, create
// latency p50/p99, the time of a full LIST read raw and decoded by
// client-go, deletes/s, and ours/CRD ratios. See docs/benchmarks.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

const (
	contentTypeJSON     = "application/json"
	contentTypeProtobuf = "application/vnd.kubernetes.protobuf"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-api: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	localDir    string
	jobs        int
	concurrency int
	listRepeats int
	warmup      int
	out         string
	targets     string
	// memoryJobs jobs are held at once to measure the storing server's
	// memory (0: not measured), memorySettle after the last create.
	memoryJobs   int
	memorySettle time.Duration
	// memoryOnly skips the speed measurements: hack/bench-api.sh measures
	// memory on freshly restarted servers, apart from them.
	memoryOnly bool
}

func run() error {
	o := options{}
	flag.StringVar(&o.localDir, "local-dir", benchkit.StringEnv("BENCH_LOCAL_DIR", "_output/local"), "state directory of the running local stack")
	flag.IntVar(&o.jobs, "jobs", benchkit.IntEnv("BENCH_JOBS", 2000), "jobs per target (env BENCH_JOBS)")
	flag.IntVar(&o.concurrency, "concurrency", benchkit.IntEnv("BENCH_CONCURRENCY", 8), "requests in flight while creating and deleting (env BENCH_CONCURRENCY)")
	flag.IntVar(&o.listRepeats, "list-repeats", benchkit.IntEnv("BENCH_LIST_REPEATS", 5), "full LISTs of each kind per target; the median is printed (env BENCH_LIST_REPEATS)")
	flag.IntVar(&o.warmup, "warmup", 20, "jobs created and deleted before each target is measured")
	flag.StringVar(&o.out, "out", "", "also write the table to this file")
	flag.StringVar(&o.targets, "targets", "crd,aggregated,direct", "targets to measure, in order")
	flag.IntVar(&o.memoryJobs, "memory-jobs", benchkit.IntEnv("BENCH_MEMORY_JOBS", 10000), "jobs held at once to measure the storing server's memory, 0 for none (env BENCH_MEMORY_JOBS)")
	flag.DurationVar(&o.memorySettle, "memory-settle", 10*time.Second, "how long after the last of those creates the server's RSS is read")
	flag.BoolVar(&o.memoryOnly, "memory-only", false, "measure only the servers' memory")
	flag.Parse()

	stack, err := benchkit.LoadStack(o.localDir)
	if err != nil {
		return err
	}
	ctx := context.Background()
	targets, err := newTargets(stack, strings.Split(o.targets, ","))
	if err != nil {
		return err
	}
	results := map[string]*result{}
	if !o.memoryOnly {
		for _, t := range targets {
			benchkit.Logf("%s: %d jobs, concurrency %d", t.title, o.jobs, o.concurrency)
			r, err := measure(ctx, t, stack, o)
			if err != nil {
				return fmt.Errorf("%s: %w", t.title, err)
			}
			results[t.key] = r
		}
	}
	memory := map[string]*memoryResult{}
	if o.memoryJobs > 0 {
		for _, t := range memoryTargets(targets) {
			benchkit.Logf("%s: memory of %s holding %d jobs", t.title, memoryServer(t), o.memoryJobs)
			r, err := measureMemory(ctx, t, stack, o)
			if err != nil {
				return fmt.Errorf("%s: memory: %w", t.title, err)
			}
			memory[t.key] = r
		}
	}

	var out strings.Builder
	if !o.memoryOnly {
		report(&out, o, targets, results)
	}
	reportMemory(&out, o, targets, memory)
	fmt.Print(out.String())
	if o.out != "" {
		if err := os.WriteFile(o.out, []byte(out.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// result is what was measured on one target.
type result struct {
	createWall time.Duration
	createLat  []time.Duration
	createCT   string

	rawJSON      []time.Duration
	rawJSONBytes int64
	rawJSONType  string

	rawProto      []time.Duration
	rawProtoBytes int64
	rawProtoType  string

	list     []time.Duration
	listCT   string
	jsonCT   string
	listJSON []time.Duration
	dynamic  []time.Duration

	deleteWall time.Duration
	deleteLat  []time.Duration

	// createCPU is the CPU time the server that stores the jobs spent
	// while the creates ran (kube-apiserver for the CRD, the
	// training-apiserver for ours): user plus system, in seconds.
	createCPU float64
	// machineCPU is the CPU time of the whole machine (every process:
	// apiservers, etcd, the benchmark client) while the creates ran.
	machineCPU float64
}

func measure(ctx context.Context, t *target, stack *benchkit.Stack, o options) (*result, error) {
	pid, err := stack.Pid(memoryServer(t))
	if err != nil {
		return nil, err
	}
	if err := freshNamespace(ctx, t.kube, t.namespace); err != nil {
		return nil, err
	}
	if err := warmUp(ctx, t, o); err != nil {
		return nil, err
	}

	r := &result{}
	name := func(i int) string { return fmt.Sprintf("job-%05d", i) }
	cpuBefore, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	machineBefore, err := benchkit.ReadMachineCPU()
	if err != nil {
		return nil, err
	}
	r.createWall, r.createLat, err = benchkit.Parallel(ctx, o.jobs, o.concurrency, func(ctx context.Context, i int) error {
		return t.create(ctx, name(i))
	})
	if err != nil {
		return nil, fmt.Errorf("creates: %w", err)
	}
	machineAfter, err := benchkit.ReadMachineCPU()
	if err != nil {
		return nil, err
	}
	cpuAfter, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	r.createCPU = cpuAfter - cpuBefore
	r.machineCPU = machineAfter.BusySecondsSince(machineBefore)
	r.createCT, _ = t.createSeen.get()
	benchkit.Logf("  created %d in %s", o.jobs, r.createWall.Round(time.Millisecond))
	if err := waitCount(ctx, t, o.jobs); err != nil {
		return nil, err
	}

	if err := measureLists(ctx, t, o, r); err != nil {
		return nil, err
	}

	r.deleteWall, r.deleteLat, err = benchkit.Parallel(ctx, o.jobs, o.concurrency, func(ctx context.Context, i int) error {
		return t.delete(ctx, name(i))
	})
	if err != nil {
		return nil, fmt.Errorf("deletes: %w", err)
	}
	benchkit.Logf("  deleted %d in %s", o.jobs, r.deleteWall.Round(time.Millisecond))
	if err := waitCount(ctx, t, 0); err != nil {
		return nil, err
	}
	return r, nil
}

// warmUp creates, lists and deletes o.warmup jobs, so that connections,
// caches and the server's code paths are warm before the measured run.
func warmUp(ctx context.Context, t *target, o options) error {
	warm := func(ctx context.Context, i int) error { return t.create(ctx, fmt.Sprintf("warmup-%d", i)) }
	if _, _, err := benchkit.Parallel(ctx, o.warmup, o.concurrency, warm); err != nil {
		return fmt.Errorf("warm-up creates: %w", err)
	}
	if _, err := t.list(ctx); err != nil {
		return fmt.Errorf("warm-up list: %w", err)
	}
	unwarm := func(ctx context.Context, i int) error { return t.delete(ctx, fmt.Sprintf("warmup-%d", i)) }
	if _, _, err := benchkit.Parallel(ctx, o.warmup, o.concurrency, unwarm); err != nil {
		return fmt.Errorf("warm-up deletes: %w", err)
	}
	return waitCount(ctx, t, 0)
}

// measureLists times o.listRepeats LISTs of the namespace's jobs each way: raw
// JSON, raw with protobuf asked, client-go's, the typed clientset's JSON and
// the dynamic client's.
func measureLists(ctx context.Context, t *target, o options, r *result) error {
	path := fmt.Sprintf(t.listPath, t.namespace)
	for i := 0; i < o.listRepeats; i++ {
		d, n, ct, err := rawGet(ctx, t.rawClient, t.rawHost+path, contentTypeJSON)
		if err != nil {
			return fmt.Errorf("raw LIST: %w", err)
		}
		r.rawJSON, r.rawJSONBytes, r.rawJSONType = append(r.rawJSON, d), n, ct
		d, n, ct, err = rawGet(ctx, t.rawClient, t.rawHost+path, contentTypeProtobuf+","+contentTypeJSON)
		if err != nil {
			return fmt.Errorf("raw LIST (protobuf asked): %w", err)
		}
		r.rawProto, r.rawProtoBytes, r.rawProtoType = append(r.rawProto, d), n, ct

		d, err = timedList(ctx, t.list, o.jobs)
		if err != nil {
			return fmt.Errorf("LIST (%s): %w", t.listHow, err)
		}
		r.list = append(r.list, d)
		if t.listJSON != nil {
			d, err = timedList(ctx, t.listJSON, o.jobs)
			if err != nil {
				return fmt.Errorf("LIST (typed, JSON): %w", err)
			}
			r.listJSON = append(r.listJSON, d)
		}
		d, err = timedList(ctx, t.listDynamic, o.jobs)
		if err != nil {
			return fmt.Errorf("LIST (dynamic): %w", err)
		}
		r.dynamic = append(r.dynamic, d)
	}
	_, r.listCT = t.listSeen.get()
	if t.jsonSeen != nil {
		_, r.jsonCT = t.jsonSeen.get()
	}
	benchkit.Logf("  listed: raw %s, %s %s", benchkit.Median(r.rawJSON), t.listHow, benchkit.Median(r.list))
	return nil
}

func timedList(ctx context.Context, list func(context.Context) (int, error), want int) (time.Duration, error) {
	start := time.Now()
	n, err := list(ctx)
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if n != want {
		return 0, fmt.Errorf("listed %d items, want %d", n, want)
	}
	return d, nil
}

// rawGet reads url to the end without decoding it and returns the time it
// took, the (uncompressed) bytes read and the Content-Type.
func rawGet(ctx context.Context, c *http.Client, url, accept string) (time.Duration, int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, "", err
	}
	req.Header.Set("Accept", accept)
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	d := time.Since(start)
	if err != nil {
		return 0, 0, "", err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return d, n, resp.Header.Get("Content-Type"), nil
}

func freshNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	err := kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
		time.Sleep(time.Second)
	}
}

// waitCount waits until a LIST returns n jobs (deletes of objects with
// finalizers finish later than the DELETE call).
func waitCount(ctx context.Context, t *target, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := t.listDynamic(ctx)
		if err == nil && got == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("namespace %s holds %d jobs, want %d (err %v)", t.namespace, got, n, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func shortType(ct string) string {
	ct, _, _ = strings.Cut(ct, ";")
	switch strings.TrimSpace(ct) {
	case contentTypeJSON:
		return "json"
	case contentTypeProtobuf:
		return "protobuf"
	case "":
		return "?"
	}
	return ct
}

// cpuPerCreate is CPU seconds spent over n creates, in milliseconds each.
func cpuPerCreate(seconds float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	return seconds * 1000 / float64(n)
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
