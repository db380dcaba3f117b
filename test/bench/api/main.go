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
	"runtime"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
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

// target is one way to reach the jobs.
type target struct {
	key       string // crd, aggregated, direct
	title     string
	namespace string
	kube      kubernetes.Interface
	// raw reads the collection as plain HTTP: base URL and client.
	rawHost   string
	rawClient *http.Client
	listPath  string
	create    func(ctx context.Context, name string) error
	delete    func(ctx context.Context, name string) error
	// list decodes the collection the way a Go client of this resource
	// would: the typed clientset for ours, the dynamic client for the CRD.
	list     func(ctx context.Context) (int, error)
	listHow  string
	listSeen *seen
	// listJSON is the typed clientset told to use JSON (ours only).
	listJSON func(ctx context.Context) (int, error)
	jsonSeen *seen
	// listDynamic decodes into unstructured objects, the same for all.
	listDynamic func(ctx context.Context) (int, error)
	createSeen  *seen
}

// seen records the content types a client sent and received.
type seen struct {
	mu       sync.Mutex
	request  string
	response string
}

func (s *seen) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return recorder{rt: rt, s: s} })
}

func (s *seen) get() (string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.request, s.response
}

type recorder struct {
	rt http.RoundTripper
	s  *seen
}

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.rt.RoundTrip(req)
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if ct := req.Header.Get("Content-Type"); ct != "" {
		r.s.request = ct
	}
	if err == nil {
		if ct := resp.Header.Get("Content-Type"); ct != "" {
			r.s.response = ct
		}
	}
	return resp, err
}

func newTargets(stack *benchkit.Stack, keys []string) ([]*target, error) {
	admin, err := stack.AdminConfig()
	if err != nil {
		return nil, err
	}
	direct, err := stack.DirectTrainingConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	var out []*target
	for _, key := range keys {
		var t *target
		switch strings.TrimSpace(key) {
		case "crd":
			t, err = crdTarget(admin)
		case "aggregated":
			t, err = ourTarget("aggregated", "ours via kube-apiserver (aggregated)", admin)
		case "direct":
			t, err = ourTarget("direct", "ours direct to training-apiserver", direct)
		default:
			err = fmt.Errorf("unknown target %q (crd, aggregated, direct)", key)
		}
		if err != nil {
			return nil, err
		}
		t.namespace = "bench-api-" + t.key
		t.kube = kube
		out = append(out, t)
	}
	return out, nil
}

func rawClient(cfg *rest.Config) (*http.Client, error) {
	return rest.HTTPClientFor(rest.CopyConfig(cfg))
}

func crdTarget(admin *rest.Config) (*target, error) {
	t := &target{key: "crd", title: "CRD (Kubeflow TFJob) via kube-apiserver", createSeen: &seen{}, listSeen: &seen{}}
	cfg := rest.CopyConfig(admin)
	t.createSeen.wrap(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	listCfg := rest.CopyConfig(admin)
	t.listSeen.wrap(listCfg)
	dynList, err := dynamic.NewForConfig(listCfg)
	if err != nil {
		return nil, err
	}
	if t.rawClient, err = rawClient(admin); err != nil {
		return nil, err
	}
	t.rawHost = admin.Host
	res := benchkit.TFJobResource
	t.listPath = fmt.Sprintf("/apis/%s/%s/namespaces/%%s/%s", res.Group, res.Version, res.Resource)
	t.create = func(ctx context.Context, name string) error {
		job, err := benchkit.KubeflowJob(t.namespace, name, benchkit.JobOptions{Paused: true})
		if err != nil {
			return err
		}
		_, err = dyn.Resource(res).Namespace(t.namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	}
	t.delete = func(ctx context.Context, name string) error {
		return dyn.Resource(res).Namespace(t.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.list = func(ctx context.Context) (int, error) {
		l, err := dynList.Resource(res).Namespace(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	t.listHow = "dynamic client (unstructured)"
	t.listDynamic = t.list
	return t, nil
}

func ourTarget(key, title string, base *rest.Config) (*target, error) {
	t := &target{key: key, title: title, createSeen: &seen{}, listSeen: &seen{}, jsonSeen: &seen{}}
	cfg := rest.CopyConfig(base)
	t.createSeen.wrap(cfg)
	typed, err := clientset.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	listCfg := rest.CopyConfig(base)
	t.listSeen.wrap(listCfg)
	typedList, err := clientset.NewForConfig(listCfg)
	if err != nil {
		return nil, err
	}
	jsonCfg := rest.CopyConfig(base)
	jsonCfg.ContentType = contentTypeJSON
	jsonCfg.AcceptContentTypes = contentTypeJSON
	t.jsonSeen.wrap(jsonCfg)
	typedJSON, err := clientset.NewForConfig(jsonCfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(base))
	if err != nil {
		return nil, err
	}
	if t.rawClient, err = rawClient(base); err != nil {
		return nil, err
	}
	t.rawHost = base.Host
	res := benchkit.OurResource
	t.listPath = fmt.Sprintf("/apis/%s/%s/namespaces/%%s/%s", res.Group, res.Version, res.Resource)
	t.create = func(ctx context.Context, name string) error {
		job := benchkit.OurJob(t.namespace, name, benchkit.JobOptions{Paused: true})
		_, err := typed.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	}
	t.delete = func(ctx context.Context, name string) error {
		return typed.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.list = func(ctx context.Context) (int, error) {
		l, err := typedList.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	t.listHow = "typed clientset"
	t.listJSON = func(ctx context.Context) (int, error) {
		l, err := typedJSON.BatchV1beta1().TensorFlowTrainingJobs(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	t.listDynamic = func(ctx context.Context) (int, error) {
		l, err := dyn.Resource(res).Namespace(t.namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, err
		}
		return len(l.Items), nil
	}
	return t, nil
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
}

func measure(ctx context.Context, t *target, stack *benchkit.Stack, o options) (*result, error) {
	pid, err := stack.Pid(memoryServer(t))
	if err != nil {
		return nil, err
	}
	if err := freshNamespace(ctx, t.kube, t.namespace); err != nil {
		return nil, err
	}
	// Warm up connections, caches and the server's code paths.
	warm := func(ctx context.Context, i int) error { return t.create(ctx, fmt.Sprintf("warmup-%d", i)) }
	if _, _, err := benchkit.Parallel(ctx, o.warmup, o.concurrency, warm); err != nil {
		return nil, fmt.Errorf("warm-up creates: %w", err)
	}
	if _, err := t.list(ctx); err != nil {
		return nil, fmt.Errorf("warm-up list: %w", err)
	}
	unwarm := func(ctx context.Context, i int) error { return t.delete(ctx, fmt.Sprintf("warmup-%d", i)) }
	if _, _, err := benchkit.Parallel(ctx, o.warmup, o.concurrency, unwarm); err != nil {
		return nil, fmt.Errorf("warm-up deletes: %w", err)
	}
	if err := waitCount(ctx, t, 0); err != nil {
		return nil, err
	}

	r := &result{}
	name := func(i int) string { return fmt.Sprintf("job-%05d", i) }
	cpuBefore, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	r.createWall, r.createLat, err = benchkit.Parallel(ctx, o.jobs, o.concurrency, func(ctx context.Context, i int) error {
		return t.create(ctx, name(i))
	})
	if err != nil {
		return nil, fmt.Errorf("creates: %w", err)
	}
	cpuAfter, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	r.createCPU = cpuAfter - cpuBefore
	r.createCT, _ = t.createSeen.get()
	benchkit.Logf("  created %d in %s", o.jobs, r.createWall.Round(time.Millisecond))
	if err := waitCount(ctx, t, o.jobs); err != nil {
		return nil, err
	}

	path := fmt.Sprintf(t.listPath, t.namespace)
	for i := 0; i < o.listRepeats; i++ {
		d, n, ct, err := rawGet(ctx, t.rawClient, t.rawHost+path, contentTypeJSON)
		if err != nil {
			return nil, fmt.Errorf("raw LIST: %w", err)
		}
		r.rawJSON, r.rawJSONBytes, r.rawJSONType = append(r.rawJSON, d), n, ct
		d, n, ct, err = rawGet(ctx, t.rawClient, t.rawHost+path, contentTypeProtobuf+","+contentTypeJSON)
		if err != nil {
			return nil, fmt.Errorf("raw LIST (protobuf asked): %w", err)
		}
		r.rawProto, r.rawProtoBytes, r.rawProtoType = append(r.rawProto, d), n, ct

		d, err = timedList(ctx, t.list, o.jobs)
		if err != nil {
			return nil, fmt.Errorf("LIST (%s): %w", t.listHow, err)
		}
		r.list = append(r.list, d)
		if t.listJSON != nil {
			d, err = timedList(ctx, t.listJSON, o.jobs)
			if err != nil {
				return nil, fmt.Errorf("LIST (typed, JSON): %w", err)
			}
			r.listJSON = append(r.listJSON, d)
		}
		d, err = timedList(ctx, t.listDynamic, o.jobs)
		if err != nil {
			return nil, fmt.Errorf("LIST (dynamic): %w", err)
		}
		r.dynamic = append(r.dynamic, d)
	}
	_, r.listCT = t.listSeen.get()
	if t.jsonSeen != nil {
		_, r.jsonCT = t.jsonSeen.get()
	}
	benchkit.Logf("  listed: raw %s, %s %s", benchkit.Median(r.rawJSON), t.listHow, benchkit.Median(r.list))

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

func report(w io.Writer, o options, targets []*target, results map[string]*result) {
	fmt.Fprintf(w, "\n## bench-api: %d jobs per target (chief 1 + ps 1 + worker 3, paused), concurrency %d\n\n", o.jobs, o.concurrency)
	fmt.Fprintf(w, "LIST times are the median of %d full LISTs of the namespace's %d jobs; machine: %d CPUs.\n\n", o.listRepeats, o.jobs, runtime.NumCPU())

	t := benchkit.Table{Header: []string{"metric"}}
	var crd *result
	var crdT *target
	var ours []*target
	for _, tg := range targets {
		t.Header = append(t.Header, tg.title)
		if tg.key == "crd" {
			crd, crdT = results[tg.key], tg
		} else {
			ours = append(ours, tg)
		}
	}
	if crd != nil {
		for _, tg := range ours {
			t.Header = append(t.Header, tg.key+" / CRD")
		}
	}
	type metric struct {
		name  string
		value func(r *result, tg *target) (float64, string)
	}
	// A negative value is not measured: its ratio is n/a.
	ms := func(d time.Duration) (float64, string) {
		if d <= 0 {
			return -1, "n/a"
		}
		return float64(d), benchkit.Ms(d)
	}
	size := func(bytes int64) (float64, string) {
		if bytes <= 0 {
			return -1, "n/a"
		}
		return float64(bytes), fmt.Sprintf("%.0f B/job (%s MiB)", float64(bytes)/float64(o.jobs), benchkit.MiB(bytes))
	}
	metrics := []metric{
		{"creates/s", func(r *result, _ *target) (float64, string) {
			v := perSecond(len(r.createLat), r.createWall)
			return v, fmt.Sprintf("%.0f", v)
		}},
		{"create p50 (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Percentile(r.createLat, 50)) }},
		{"create p99 (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Percentile(r.createLat, 99)) }},
		{"storing server's CPU per create (ms)", func(r *result, tg *target) (float64, string) {
			v := cpuPerCreate(r.createCPU, len(r.createLat))
			return v, fmt.Sprintf("%.2f (%s)", v, memoryServer(tg))
		}},
		{"LIST raw JSON (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Median(r.rawJSON)) }},
		{"LIST raw JSON size", func(r *result, _ *target) (float64, string) { return size(r.rawJSONBytes) }},
		{"LIST raw, protobuf asked (ms)", func(r *result, _ *target) (float64, string) {
			v, s := ms(benchkit.Median(r.rawProto))
			return v, s + " (" + shortType(r.rawProtoType) + ")"
		}},
		{"LIST raw, protobuf asked, size", func(r *result, _ *target) (float64, string) { return size(r.rawProtoBytes) }},
		{"LIST decoded by client-go (ms)", func(r *result, tg *target) (float64, string) {
			v, s := ms(benchkit.Median(r.list))
			return v, fmt.Sprintf("%s (%s, %s)", s, tg.listHow, shortType(r.listCT))
		}},
		{"LIST typed clientset, JSON (ms)", func(r *result, tg *target) (float64, string) {
			if tg.listJSON == nil {
				return -1, "n/a"
			}
			v, s := ms(benchkit.Median(r.listJSON))
			return v, s + " (" + shortType(r.jsonCT) + ")"
		}},
		{"LIST dynamic client, unstructured (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Median(r.dynamic)) }},
		{"deletes/s", func(r *result, _ *target) (float64, string) {
			v := perSecond(len(r.deleteLat), r.deleteWall)
			return v, fmt.Sprintf("%.0f", v)
		}},
		{"delete p50 (ms)", func(r *result, _ *target) (float64, string) { return ms(benchkit.Percentile(r.deleteLat, 50)) }},
	}
	for _, m := range metrics {
		row := []string{m.name}
		for _, tg := range targets {
			_, s := m.value(results[tg.key], tg)
			row = append(row, s)
		}
		if crd != nil {
			baseOf := m.value
			if m.name == "LIST typed clientset, JSON (ms)" {
				// The CRD has no typed client here: compare with its client-go LIST.
				baseOf = func(r *result, _ *target) (float64, string) { return ms(benchkit.Median(r.list)) }
			}
			base, _ := baseOf(crd, crdT)
			for _, tg := range ours {
				v, _ := m.value(results[tg.key], tg)
				row = append(row, benchkit.Ratio(v, base))
			}
		}
		t.Add(row...)
	}
	_ = t.Write(w)
	fmt.Fprintf(w, "\nRequest bodies of the creates: ")
	for i, tg := range targets {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		fmt.Fprintf(w, "%s %s", tg.key, shortType(results[tg.key].createCT))
	}
	fmt.Fprintln(w, ".")
	fmt.Fprintln(w, "Ratios are ours / CRD: above 1 is better for rates (creates/s, deletes/s), below 1 is better for times and sizes.")
}
