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

// Command bench-progress measures what progress reports cost on the local
// stack: BENCH_JOBS running PyTorch jobs (one kwok pod each) first report
// nothing for BENCH_DURATION, then each reports every BENCH_REPORT_EVERY
// for BENCH_DURATION, as its pod would: with a token bound to its pod,
// through kube-apiserver. For each phase it prints the training-apiserver's,
// kube-apiserver's and the controller's CPU, the job writes to etcd per
// second and the watch events per second the training-apiserver sent, side
// by side in a markdown table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
	"tensorstack.dev/training/test/e2e/framework"
)

const namespace = "bench-progress"

func main() {
	localDir := flag.String("local-dir", "", "the local stack's directory (_output/local)")
	jobs := flag.Int("jobs", benchkit.IntEnv("BENCH_JOBS", 500), "running jobs")
	every := flag.Duration("every", envDuration("BENCH_REPORT_EVERY", time.Second), "how often each job reports")
	duration := flag.Duration("duration", envDuration("BENCH_DURATION", 30*time.Second), "length of each phase")
	out := flag.String("out", "", "also write the table to this file")
	flag.Parse()
	if err := run(*localDir, *jobs, *every, *duration, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-progress:", err)
		os.Exit(1)
	}
}

func envDuration(name string, def time.Duration) time.Duration {
	d, err := time.ParseDuration(benchkit.StringEnv(name, def.String()))
	if err != nil {
		return def
	}
	return d
}

// phase is what one phase of the benchmark measured.
type phase struct {
	name            string
	seconds         float64
	cpu             map[string]float64 // cores, by component
	etcdJobWrites   float64            // per second
	watchEvents     float64            // per second
	reports, failed int64
	latencies       []time.Duration
}

type bench struct {
	stack    *benchkit.Stack
	kube     kubernetes.Interface
	admin    *rest.Config
	direct   rest.Interface
	pids     map[string]int
	jobNames []string
	pods     []corev1.Pod
}

func run(localDir string, jobs int, every, duration time.Duration, out string) error {
	stack, err := benchkit.LoadStack(localDir)
	if err != nil {
		return err
	}
	admin, err := stack.AdminConfig()
	if err != nil {
		return err
	}
	direct, err := stack.DirectTrainingConfig()
	if err != nil {
		return err
	}
	b := &bench{stack: stack, admin: admin, pids: map[string]int{}}
	if b.kube, err = kubernetes.NewForConfig(admin); err != nil {
		return err
	}
	directClient, err := clientset.NewForConfig(direct)
	if err != nil {
		return err
	}
	b.direct = directClient.Discovery().RESTClient()
	for _, c := range []string{"training-apiserver", "kube-apiserver", "training-controller-manager", "etcd"} {
		if b.pids[c], err = stack.Pid(c); err != nil {
			return err
		}
	}
	ctx := context.Background()
	if err := b.createJobs(ctx, jobs); err != nil {
		return err
	}
	idle, err := b.measure(ctx, "no reports", duration, nil)
	if err != nil {
		return err
	}
	reporters, err := b.reporters(ctx)
	if err != nil {
		return err
	}
	reporting, err := b.measure(ctx, fmt.Sprintf("every job every %s", every), duration, func(ctx context.Context, p *phase) {
		report(ctx, reporters, b.jobNames, every, p)
	})
	if err != nil {
		return err
	}
	return write(out, jobs, every, duration, idle, reporting)
}

// createJobs creates the jobs, one kwok pod each that runs until deleted,
// and waits until every pod runs.
func (b *bench) createJobs(ctx context.Context, n int) error {
	if err := benchkit.EnsureNamespace(ctx, b.kube, namespace); err != nil {
		return err
	}
	training, err := clientset.NewForConfig(b.admin)
	if err != nil {
		return err
	}
	b.jobNames = make([]string, n)
	benchkit.Logf("creating %d jobs", n)
	_, _, err = benchkit.Parallel(ctx, n, 16, func(ctx context.Context, i int) error {
		b.jobNames[i] = fmt.Sprintf("progress-%04d", i)
		job := framework.NewPyTorchJob(b.jobNames[i]).WithReplicas("master", 1).Forever("master").Build(namespace).(*v1beta1.PyTorchTrainingJob)
		_, err := training.BatchV1beta1().PyTorchTrainingJobs(namespace).Create(ctx, job, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	benchkit.Logf("waiting for %d running pods", n)
	return wait.PollUntilContextTimeout(ctx, 2*time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := b.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		running := pods.Items[:0]
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running = append(running, p)
			}
		}
		b.pods = running
		return len(running) == n, nil
	})
}

// reporters returns, for each job, a client that authenticates with a
// token bound to the job's pod: what the pod itself would send.
func (b *bench) reporters(ctx context.Context) (map[string]clientset.Interface, error) {
	byJob := map[string]clientset.Interface{}
	for _, p := range b.pods {
		token, err := b.kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, "default", &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: ptr.To[int64](3600),
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("token for pod %s: %w", p.Name, err)
		}
		config := rest.AnonymousClientConfig(b.admin)
		config.BearerToken = token.Status.Token
		benchkit.Unthrottled(config)
		client, err := clientset.NewForConfig(config)
		if err != nil {
			return nil, err
		}
		byJob[p.Labels[v1beta1.LabelJobName]] = client
	}
	return byJob, nil
}

// report has every job report every interval, the jobs spread evenly over
// the interval, until ctx ends.
func report(ctx context.Context, reporters map[string]clientset.Interface, jobs []string, every time.Duration, p *phase) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var reports, failed atomic.Int64
	for i, name := range jobs {
		client := reporters[name]
		if client == nil {
			failed.Add(1)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(every * time.Duration(i) / time.Duration(len(jobs))):
			case <-ctx.Done():
				return
			}
			ticker := time.NewTicker(every)
			defer ticker.Stop()
			for step := int64(1); ; step++ {
				start := time.Now()
				_, err := client.BatchV1beta1().PyTorchTrainingJobs(namespace).ReportProgress(ctx, name, &v1beta1.ProgressReport{
					ProgressValues: v1beta1.ProgressValues{Step: &step, TotalSteps: ptr.To[int64](1 << 40),
						Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: fmt.Sprint(1.0 / float64(step))}}},
				}, metav1.CreateOptions{})
				if ctx.Err() != nil {
					return
				}
				reports.Add(1)
				if err != nil {
					if failed.Add(1) == 1 {
						benchkit.Logf("a report failed: %v", err)
					}
				} else {
					mu.Lock()
					p.latencies = append(p.latencies, time.Since(start))
					mu.Unlock()
				}
				select {
				case <-ticker.C:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	wg.Wait()
	p.reports, p.failed = reports.Load(), failed.Load()
}

// measure runs load (nil: none) for duration and records the servers' CPU
// and the training-apiserver's counters over that time.
func (b *bench) measure(ctx context.Context, name string, duration time.Duration, load func(context.Context, *phase)) (*phase, error) {
	benchkit.Logf("phase %q: %s", name, duration)
	p := &phase{name: name, cpu: map[string]float64{}}
	before, err := benchkit.ScrapeMetrics(ctx, b.direct)
	if err != nil {
		return nil, err
	}
	cpuBefore := map[string]float64{}
	for c, pid := range b.pids {
		if cpuBefore[c], err = benchkit.CPUSeconds(pid); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	loadCtx, cancel := context.WithTimeout(ctx, duration)
	if load != nil {
		load(loadCtx, p)
	}
	<-loadCtx.Done()
	cancel()
	p.seconds = time.Since(start).Seconds()
	for c, pid := range b.pids {
		after, err := benchkit.CPUSeconds(pid)
		if err != nil {
			return nil, err
		}
		p.cpu[c] = (after - cpuBefore[c]) / p.seconds
	}
	after, err := benchkit.ScrapeMetrics(ctx, b.direct)
	if err != nil {
		return nil, err
	}
	jobs := func(l map[string]string) bool { return l["resource"] == v1beta1.PyTorchTrainingJobResource }
	writes := func(l map[string]string) bool { return jobs(l) && l["operation"] == "update" }
	p.etcdJobWrites = (after.Sum("etcd_requests_total", writes) - before.Sum("etcd_requests_total", writes)) / p.seconds
	p.watchEvents = (after.Sum("apiserver_watch_events_total", jobs) - before.Sum("apiserver_watch_events_total", jobs)) / p.seconds
	return p, nil
}

func write(out string, jobs int, every, duration time.Duration, idle, reporting *phase) error {
	t := &benchkit.Table{Header: []string{"", idle.name, reporting.name}}
	for _, c := range []string{"training-apiserver", "kube-apiserver", "training-controller-manager", "etcd"} {
		label := c + " CPU (cores)"
		if c == "etcd" {
			// The training-apiserver's own etcd is embedded: its CPU is the
			// training-apiserver's.
			label = "kube-apiserver's etcd CPU (cores)"
		}
		t.Add(label, fmt.Sprintf("%.3f", idle.cpu[c]), fmt.Sprintf("%.3f", reporting.cpu[c]))
	}
	t.Add("job writes to etcd /s", fmt.Sprintf("%.1f", idle.etcdJobWrites), fmt.Sprintf("%.1f", reporting.etcdJobWrites))
	t.Add("watch events sent /s", fmt.Sprintf("%.1f", idle.watchEvents), fmt.Sprintf("%.1f", reporting.watchEvents))
	t.Add("reports /s (failed)", "0", fmt.Sprintf("%.1f (%d)", float64(reporting.reports)/reporting.seconds, reporting.failed))
	t.Add("report latency p50 / p99 (ms)", "", benchkit.Ms(benchkit.Median(reporting.latencies))+" / "+benchkit.Ms(benchkit.Percentile(reporting.latencies, 99)))
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d running PyTorch jobs (one kwok pod each), %s per phase; reports through kube-apiserver with tokens bound to the jobs' pods\n\n", jobs, duration)
	if err := t.Write(&sb); err != nil {
		return err
	}
	fmt.Print(sb.String())
	if out != "" {
		return os.WriteFile(out, []byte(sb.String()), 0o644)
	}
	return nil
}
