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
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// The two controllers the benchmark knows.
const (
	kindOurs = "ours"
	kindPeer = "training-operator"
)

// Result is one run's measurements, written as JSON for report.
type Result struct {
	Kind            string `json:"kind"`
	Title           string `json:"title"`
	ControllerFlags string `json:"controllerFlags"`
	Jobs            int    `json:"jobs"`
	PodsPerJob      int    `json:"podsPerJob"`
	RunFor          string `json:"runFor"`
	Concurrency     int    `json:"concurrency"`

	// Seconds from the first create.
	CreateSeconds      float64 `json:"createSeconds"`
	PodsExistSeconds   float64 `json:"podsExistSeconds"`
	PodsStartedSeconds float64 `json:"podsStartedSeconds"`
	JobsDoneSeconds    float64 `json:"jobsDoneSeconds"`
	PodsEndedSeconds   float64 `json:"podsEndedSeconds"`
	PodsSeen           int     `json:"podsSeen"`
	PodsStarted        int     `json:"podsStarted"`
	JobsSucceeded      int     `json:"jobsSucceeded"`
	JobsFailed         int     `json:"jobsFailed"`
	// Seconds from the last exit of a job's pod seen before the job was
	// seen finished, to then: how long the controller took to mark it done.
	DoneLagP50Seconds float64 `json:"doneLagP50Seconds"`
	DoneLagP99Seconds float64 `json:"doneLagP99Seconds"`
	DoneLagMaxSeconds float64 `json:"doneLagMaxSeconds"`
	// The tail of a job, per job, p50 / p99 / max: from the exit kwok
	// wrote in its last pod's containers (finishedAt, whole seconds) to
	// the benchmark's watch seeing the pod end; and how much longer than
	// the run its pods ran, from seen Running to seen ended: kwok's lag.
	ExitSeenLag Percentiles `json:"exitSeenLag"`
	RunOverrun  Percentiles `json:"runOverrun"`
	// From the first to the last of a job's pods seen started.
	StartSpread Percentiles `json:"startSpread"`
	TimedOut    bool        `json:"timedOut,omitempty"`

	Usage []benchkit.Usage `json:"usage"`
	// Percent of all the machine's CPU time that was busy from the first
	// create until all pods existed, and until all jobs were done: near 100
	// the stack, not the controller, set the pace.
	MachineBusyToPodsExist *float64 `json:"machineBusyToPodsExist,omitempty"`
	MachineBusyToJobsDone  *float64 `json:"machineBusyToJobsDone,omitempty"`

	// Requests on the jobs the serving apiserver counted
	// (apiserver_request_total), the benchmark's own creates left out.
	StatusWrites    float64 `json:"statusWrites"`
	StatusConflicts float64 `json:"statusConflicts"`
	JobWrites       float64 `json:"jobWrites"`
	JobConflicts    float64 `json:"jobConflicts"`
	MetricsSource   string  `json:"metricsSource"`
	// Writes each apiserver counted during the run (apiserver_request_total,
	// every client: the controller, the scheduler, kwok, the garbage
	// collector), by "verb resource[/subresource]", the benchmark's own job
	// creates left out. TrainingWrites only for ours.
	KubeWrites     map[string]float64 `json:"kubeWrites"`
	TrainingWrites map[string]float64 `json:"trainingWrites,omitempty"`
	// Counters of our controller's own /metrics during the run, when it
	// serves them without authentication (LOCAL_TRAINING_METRICS_SECURE=0):
	// reconciles, queue adds and the requests it made.
	ControllerCounters map[string]float64 `json:"controllerCounters,omitempty"`

	// Objects in the namespace during the run.
	PodsCreated       int            `json:"podsCreated"`
	PodsDeleted       int            `json:"podsDeleted"`
	Services          int            `json:"services"`
	ConfigMaps        int            `json:"configMaps"`
	Events            int            `json:"events"`
	EventsByComponent map[string]int `json:"eventsByComponent"`
}

type runOptions struct {
	localDir        string
	kind            string
	jobs            int
	concurrency     int
	runFor          string
	timeout         time.Duration
	settle          time.Duration
	controllerPid   int
	controllerFlags string
	namespace       string
	out             string
}

func runCommand(args []string) error {
	o := runOptions{}
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	fs.StringVar(&o.localDir, "local-dir", benchkit.StringEnv("BENCH_LOCAL_DIR", "_output/local"), "state directory of the running local stack")
	fs.StringVar(&o.kind, "kind", kindOurs, "whose jobs: ours (TensorFlowTrainingJob) or training-operator (Kubeflow TFJob)")
	fs.IntVar(&o.jobs, "jobs", benchkit.IntEnv("BENCH_JOBS", 500), "jobs (env BENCH_JOBS)")
	fs.IntVar(&o.concurrency, "concurrency", benchkit.IntEnv("BENCH_CONCURRENCY", 8), "creates in flight")
	fs.StringVar(&o.runFor, "run-for", benchkit.StringEnv("BENCH_RUN_FOR", "20s"), "how long each pod runs before it exits 0")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up waiting for the jobs after this long")
	fs.DurationVar(&o.settle, "settle", 5*time.Second, "wait this long after the last job finished before the final samples")
	fs.IntVar(&o.controllerPid, "controller-pid", 0, "pid of the controller (default: training-controller-manager's pid file)")
	fs.StringVar(&o.controllerFlags, "controller-flags", "", "the controller's tuning flags, for the report")
	fs.StringVar(&o.namespace, "namespace", "", "namespace of the jobs (default bench-controller-<kind>)")
	fs.StringVar(&o.out, "out", "", "write the result as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.kind != kindOurs && o.kind != kindPeer {
		return fmt.Errorf("-kind must be %s or %s", kindOurs, kindPeer)
	}
	if o.namespace == "" {
		o.namespace = "bench-controller-" + o.kind
	}
	if _, err := time.ParseDuration(o.runFor); err != nil {
		return fmt.Errorf("-run-for: %w", err)
	}
	stack, err := benchkit.LoadStack(o.localDir)
	if err != nil {
		return err
	}
	r, err := runBench(context.Background(), stack, o)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if o.out == "" {
		fmt.Println(string(data))
		return nil
	}
	return os.WriteFile(o.out, data, 0o644)
}

// bench holds the clients of one run.
type bench struct {
	o        runOptions
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	training clientset.Interface
	metrics  rest.Interface
	resource schema.GroupVersionResource
	// kubeMetrics and trainingMetrics (ours only) read the apiservers'
	// /metrics; controllerMetrics, when set, is our controller's.
	kubeMetrics       rest.Interface
	trainingMetrics   rest.Interface
	controllerMetrics string
}

// stackProcesses are the stack's other processes whose CPU the run
// samples when they run.
var stackProcesses = []string{"kube-scheduler", "kube-controller-manager", "kwok"}

// newBench connects to the stack and says which target the run measures:
// where its jobs are served, whose /metrics count their writes, and which
// processes' CPU and memory are sampled.
func newBench(stack *benchkit.Stack, o runOptions) (*bench, *Result, []benchkit.Process, error) {
	admin, err := stack.AdminConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	b := &bench{o: o}
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return nil, nil, nil, err
	}
	if b.dyn, err = dynamic.NewForConfig(admin); err != nil {
		return nil, nil, nil, err
	}
	if b.training, err = clientset.NewForConfig(admin); err != nil {
		return nil, nil, nil, err
	}
	r := &Result{
		Kind: o.kind, ControllerFlags: o.controllerFlags, Jobs: o.jobs, PodsPerJob: benchkit.PodsPerJob(),
		RunFor: o.runFor, Concurrency: o.concurrency,
	}

	// Who serves the jobs counts their writes; which processes to watch.
	controller := benchkit.Process{Name: "controller", Pid: o.controllerPid}
	var procs []benchkit.Process
	switch o.kind {
	case kindOurs:
		r.Title = "ours (training-controller-manager)"
		b.resource = benchkit.OurResource
		direct, err := stack.DirectTrainingConfig()
		if err != nil {
			return nil, nil, nil, err
		}
		dk, err := kubernetes.NewForConfig(direct)
		if err != nil {
			return nil, nil, nil, err
		}
		b.metrics = dk.Discovery().RESTClient()
		b.trainingMetrics = b.metrics
		r.MetricsSource = "training-apiserver /metrics"
		if stack.Settings["LOCAL_TRAINING_METRICS_SECURE"] == "0" {
			if port, err := stack.Port("LOCAL_TRAINING_METRICS_PORT"); err == nil {
				b.controllerMetrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
			}
		}
		if controller.Pid == 0 {
			if controller.Pid, err = stack.Pid("training-controller-manager"); err != nil {
				return nil, nil, nil, err
			}
		}
		procs = append(procs, controller)
		pid, err := stack.Pid("training-apiserver")
		if err != nil {
			return nil, nil, nil, err
		}
		procs = append(procs, benchkit.Process{Name: "training-apiserver", Pid: pid})
	case kindPeer:
		r.Title = "Kubeflow training-operator v1.9.4"
		b.resource = benchkit.TFJobResource
		b.metrics = b.kube.Discovery().RESTClient()
		r.MetricsSource = "kube-apiserver /metrics"
		if controller.Pid == 0 {
			return nil, nil, nil, fmt.Errorf("-controller-pid is required with -kind %s", kindPeer)
		}
		procs = append(procs, controller)
	}
	b.kubeMetrics = b.kube.Discovery().RESTClient()
	for _, c := range []string{"kube-apiserver", "etcd"} {
		pid, err := stack.Pid(c)
		if err != nil {
			return nil, nil, nil, err
		}
		procs = append(procs, benchkit.Process{Name: c, Pid: pid})
	}
	// The rest of the stack works for both alike, per pod, but what a
	// controller makes them do (events, pod updates kwok watches) shows.
	for _, c := range stackProcesses {
		if pid, err := stack.Pid(c); err == nil {
			procs = append(procs, benchkit.Process{Name: c, Pid: pid})
		}
	}

	return b, r, procs, nil
}

func runBench(ctx context.Context, stack *benchkit.Stack, o runOptions) (*Result, error) {
	b, r, procs, err := newBench(stack, o)
	if err != nil {
		return nil, err
	}
	if err := b.freshNamespace(ctx); err != nil {
		return nil, err
	}
	runFor, _ := time.ParseDuration(o.runFor)
	tr := newTracker(o.jobs, o.kind, runFor)
	stopInformers, err := b.startInformers(tr)
	if err != nil {
		return nil, err
	}
	defer stopInformers()

	before, err := b.scrape(ctx)
	if err != nil {
		return nil, err
	}
	sampler, err := benchkit.StartSampler(procs, 500*time.Millisecond)
	if err != nil {
		return nil, err
	}

	benchkit.Logf("%s: creating %d jobs (chief 1 + ps 1 + worker 3, pods exit 0 after %s) in namespace %s",
		r.Title, o.jobs, o.runFor, o.namespace)
	tr.start()
	wall, _, err := benchkit.Parallel(ctx, o.jobs, o.concurrency, func(ctx context.Context, i int) error {
		return b.create(ctx, fmt.Sprintf("job-%05d", i))
	})
	if err != nil {
		sampler.Stop()
		return nil, fmt.Errorf("creating jobs: %w", err)
	}
	r.CreateSeconds = wall.Seconds()
	benchkit.Logf("created %d jobs in %.1fs", o.jobs, wall.Seconds())

	if !tr.wait(o.timeout) {
		r.TimedOut = true
		benchkit.Logf("timed out after %s", o.timeout)
	}
	time.Sleep(o.settle)
	r.Usage = sampler.Stop()
	after, err := b.scrape(ctx)
	if err != nil {
		return nil, err
	}
	tr.fill(r)
	r.MachineBusyToPodsExist = machineBusyPercent(sampler, tr.t0, r.PodsExistSeconds)
	r.MachineBusyToJobsDone = machineBusyPercent(sampler, tr.t0, r.JobsDoneSeconds)
	b.countWrites(r, before.jobs, after.jobs)
	r.KubeWrites = writesByResource(before.kube, after.kube)
	if b.trainingMetrics != nil {
		r.TrainingWrites = writesByResource(before.training, after.training)
	}
	// The benchmark's own creates are not the controller's.
	if b.trainingMetrics != nil {
		r.TrainingWrites[writeKey("POST", b.resource.Resource, "")] -= float64(o.jobs)
	} else {
		r.KubeWrites[writeKey("POST", b.resource.Resource, "")] -= float64(o.jobs)
	}
	if before.controller != nil && after.controller != nil {
		r.ControllerCounters = controllerCounters(before.controller, after.controller)
	}
	if err := b.countEvents(ctx, r); err != nil {
		return nil, err
	}
	benchkit.Logf("all jobs done after %.1fs (%d succeeded, %d failed); deleting namespace %s",
		r.JobsDoneSeconds, r.JobsSucceeded, r.JobsFailed, o.namespace)
	stopInformers()
	if err := b.deleteNamespace(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// machineBusyPercent is the busy share of the machine's CPU from t0 for
// seconds, in percent, or nil when the samples do not cover it.
func machineBusyPercent(s *benchkit.Sampler, t0 time.Time, seconds float64) *float64 {
	f, ok := s.MachineBusy(t0, t0.Add(time.Duration(seconds*float64(time.Second))))
	if !ok {
		return nil
	}
	percent := f * 100
	return &percent
}

func (b *bench) create(ctx context.Context, name string) error {
	opts := benchkit.JobOptions{ExitAfter: b.o.runFor}
	if b.o.kind == kindOurs {
		job := benchkit.OurJob(b.o.namespace, name, opts)
		_, err := b.training.BatchV1beta1().TensorFlowTrainingJobs(b.o.namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	}
	job, err := benchkit.KubeflowJob(b.o.namespace, name, opts)
	if err != nil {
		return err
	}
	_, err = b.dyn.Resource(b.resource).Namespace(b.o.namespace).Create(ctx, job, metav1.CreateOptions{})
	return err
}

func (b *bench) freshNamespace(ctx context.Context) error {
	if err := b.deleteNamespace(ctx); err != nil {
		return err
	}
	_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.o.namespace}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating namespace %s: %w", b.o.namespace, err)
	}
	// Pods need the namespace's default ServiceAccount.
	return waitFor(2*time.Minute, "ServiceAccount default in "+b.o.namespace, func() (bool, error) {
		_, err := b.kube.CoreV1().ServiceAccounts(b.o.namespace).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// deleteNamespace deletes the namespace and waits until it is gone, so that
// the next run starts on a quiet cluster.
func (b *bench) deleteNamespace(ctx context.Context) error {
	err := b.kube.CoreV1().Namespaces().Delete(ctx, b.o.namespace, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	start := time.Now()
	err = waitFor(15*time.Minute, "namespace "+b.o.namespace+" deleted", func() (bool, error) {
		_, err := b.kube.CoreV1().Namespaces().Get(ctx, b.o.namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err == nil {
		benchkit.Logf("namespace %s deleted in %.1fs", b.o.namespace, time.Since(start).Seconds())
	}
	return err
}

func waitFor(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s (last error: %v)", timeout, what, err)
		}
		time.Sleep(time.Second)
	}
}

// startInformers follows the namespace's jobs, pods, Services and
// ConfigMaps into the tracker; the returned function stops them.
func (b *bench) startInformers(tr *tracker) (func(), error) {
	stop := make(chan struct{})
	kf := informers.NewSharedInformerFactoryWithOptions(b.kube, 0, informers.WithNamespace(b.o.namespace))
	df := dynamicinformer.NewFilteredDynamicSharedInformerFactory(b.dyn, 0, b.o.namespace, nil)

	handlers := []struct {
		informer cache.SharedIndexInformer
		h        cache.ResourceEventHandlerFuncs
	}{
		{kf.Core().V1().Pods().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { tr.pod(obj, false) },
			UpdateFunc: func(_, obj interface{}) { tr.pod(obj, false) },
			DeleteFunc: func(obj interface{}) { tr.pod(obj, true) },
		}},
		{kf.Core().V1().Services().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) { tr.object("services", obj) },
		}},
		{kf.Core().V1().ConfigMaps().Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj interface{}) { tr.object("configmaps", obj) },
		}},
		{df.ForResource(b.resource).Informer(), cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj interface{}) { tr.job(obj) },
			UpdateFunc: func(_, obj interface{}) { tr.job(obj) },
		}},
	}
	for _, h := range handlers {
		if _, err := h.informer.AddEventHandler(h.h); err != nil {
			close(stop)
			return nil, err
		}
	}
	kf.Start(stop)
	df.Start(stop)
	for _, h := range handlers {
		if !cache.WaitForCacheSync(stop, h.informer.HasSynced) {
			close(stop)
			return nil, fmt.Errorf("informers did not sync")
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stop)
			kf.Shutdown()
			df.Shutdown()
		})
	}, nil
}

// scrapes are the /metrics read at one moment of the run: the server that
// stores the jobs, kube-apiserver, the training-apiserver (ours) and our
// controller (when it serves them openly); nil when not read.
type scrapes struct {
	jobs, kube, training, controller benchkit.Samples
}

func (b *bench) scrape(ctx context.Context) (scrapes, error) {
	var s scrapes
	var err error
	if s.jobs, err = benchkit.ScrapeMetrics(ctx, b.metrics); err != nil {
		return s, err
	}
	if s.kube, err = benchkit.ScrapeMetrics(ctx, b.kubeMetrics); err != nil {
		return s, err
	}
	if b.trainingMetrics != nil {
		if s.training, err = benchkit.ScrapeMetrics(ctx, b.trainingMetrics); err != nil {
			return s, err
		}
	}
	if b.controllerMetrics != "" {
		// The controller's counters explain the writes; without them the
		// run still measures everything else.
		if s.controller, err = scrapeURL(ctx, b.controllerMetrics); err != nil {
			benchkit.Logf("not reading the controller's metrics: %v", err)
		}
	}
	return s, nil
}

func scrapeURL(ctx context.Context, url string) (benchkit.Samples, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return benchkit.ParseMetrics(data)
}

// writeKey names a kind of write: its verb, resource and subresource.
func writeKey(verb, resource, subresource string) string {
	k := strings.ToLower(verb) + " " + resource
	if subresource != "" {
		k += "/" + subresource
	}
	return k
}

// writesByResource is what apiserver_request_total counted between two
// scrapes of one server, by writeKey; dry runs and reads left out.
func writesByResource(before, after benchkit.Samples) map[string]float64 {
	sum := func(ss benchkit.Samples) map[string]float64 {
		m := map[string]float64{}
		for _, s := range ss {
			l := s.Labels
			if s.Name != "apiserver_request_total" || benchkit.ReadOnlyVerb(l["verb"]) || l["dry_run"] != "" {
				continue
			}
			m[writeKey(l["verb"], l["resource"], l["subresource"])] += s.Value
		}
		return m
	}
	out := sum(after)
	for k, v := range sum(before) {
		out[k] -= v
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

// controllerCounters are what our controller counted between two scrapes:
// reconciles, adds to its queues, and its requests by method.
func controllerCounters(before, after benchkit.Samples) map[string]float64 {
	out := map[string]float64{}
	add := func(key string, sign float64, s benchkit.Sample) { out[key] += sign * s.Value }
	for i, ss := range []benchkit.Samples{before, after} {
		sign := float64(2*i - 1)
		for _, s := range ss {
			switch {
			case strings.HasSuffix(s.Name, "reconcile_duration_seconds_count"):
				add("reconciles", sign, s)
			case s.Name == "workqueue_adds_total":
				add("queue adds "+s.Labels["name"], sign, s)
			case s.Name == "rest_client_requests_total" && !benchkit.ReadOnlyVerb(s.Labels["method"]):
				add("requests "+s.Labels["method"], sign, s)
			}
		}
	}
	return out
}

// countWrites fills in the writes to the jobs between two scrapes of the
// serving apiserver's apiserver_request_total.
func (b *bench) countWrites(r *Result, before, after benchkit.Samples) {
	count := func(subresource string, conflictsOnly bool) float64 {
		match := func(l map[string]string) bool {
			return l["group"] == b.resource.Group && l["resource"] == b.resource.Resource &&
				l["subresource"] == subresource && !benchkit.ReadOnlyVerb(l["verb"]) &&
				l["dry_run"] == "" && (!conflictsOnly || l["code"] == "409")
		}
		return after.Sum("apiserver_request_total", match) - before.Sum("apiserver_request_total", match)
	}
	r.StatusWrites = count("status", false)
	r.StatusConflicts = count("status", true)
	// The benchmark's own creates are not the controller's.
	r.JobWrites = count("", false) - float64(r.Jobs)
	r.JobConflicts = count("", true)
}

// countEvents counts the namespace's Events by the component that reported
// them.
func (b *bench) countEvents(ctx context.Context, r *Result) error {
	r.EventsByComponent = map[string]int{}
	var cont string
	for {
		l, err := b.kube.CoreV1().Events(b.o.namespace).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return fmt.Errorf("listing events: %w", err)
		}
		for _, e := range l.Items {
			c := e.ReportingController
			if c == "" {
				c = e.Source.Component
			}
			if c == "" {
				c = "unknown"
			}
			r.EventsByComponent[c]++
			r.Events++
		}
		if cont = l.Continue; cont == "" {
			return nil
		}
	}
}
