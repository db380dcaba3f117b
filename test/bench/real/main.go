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

// Command bench-real measures, on the local stack's real node, how long a
// PyTorchTrainingJob takes from its create to every rank's first training
// step, with its default rendezvous (static) and with c10d, next to a bare
// Pod of the same image and script on the same node (the floor: what the
// node, the image and PyTorch cost without us), next to two bare Pods
// meeting through the same static rendezvous (what two ranks cost without
// us), from the last rank's exit to the job's Succeeded, and from a SIGKILL
// of rank 1 to every rank training again, recreated and restarted in place
// (recovery.go; BENCH_REAL_ONLY=recovery runs it alone). The training processes
// print the wall-clock time of each step (scripts/pytorch_ddp.py); this
// program runs on the same machine, so the clocks are one. It prints a
// markdown table.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/bench/internal/benchkit"
)

const (
	image     = "localhost/tensorstack/training:v1"
	namespace = "default"
	// steps each run trains: enough to see training, short enough to repeat.
	steps = "5"
	// monitorInterval has torchrun's agent look at its worker every 0.2 s
	// rather than every 5 s (its default), so that the time from the last
	// rank's exit to Succeeded measures the kubelet and the controller, not
	// torchrun's polling.
	monitorInterval = "--monitor-interval=0.2"
)

var (
	firstStep = regexp.MustCompile(`rank=(\d+) step=1 loss=\S+ at=([0-9.]+)`)
	// worldOfTwo is a step of scripts/pytorch_elastic.py in a group of 2.
	worldOfTwo = regexp.MustCompile(`rank=\d+ world=2 step=\d+ loss=\S+ at=([0-9.]+)`)
	done       = regexp.MustCompile(`rank=(\d+) done steps=\d+ at=([0-9.]+)`)
)

func main() {
	localDir := flag.String("local-dir", "", "the local stack's directory (_output/local)")
	ctr := flag.String("ctr", "", "containerd's ctr, to kill a training process on a real node (_output/bin/ctr)")
	runs := flag.Int("runs", benchkit.IntEnv("BENCH_RUNS", 5), "runs of each measurement")
	out := flag.String("out", "", "also write the table to this file")
	flag.Parse()
	if err := run(*localDir, *ctr, *runs, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench-real:", err)
		os.Exit(1)
	}
}

func run(localDir, ctr string, runs int, out string) error {
	stack, err := benchkit.LoadStack(localDir)
	if err != nil {
		return err
	}
	cfg, err := stack.AdminConfig()
	if err != nil {
		return err
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	training := clientset.NewForConfigOrDie(cfg)
	ctx := context.Background()

	if benchkit.StringEnv("BENCH_REAL_ONLY", "") == "recovery" {
		recreate, inPlace, err := recoveries(ctx, kube, training, realNodes{ctr: ctr, stackDir: stack.Dir}, runs)
		if err != nil {
			return err
		}
		restarts := recoveryTable(runs, recreate, inPlace)
		return report(out, &restarts)
	}
	var bare, pair, toFirstStep, toFirstStepC10d, toSucceeded, scaleToTraining []time.Duration
	var floorPhases, jobPhases, c10dPhases []phases
	for i := range runs {
		d, fp, err := barePod(ctx, kube, fmt.Sprintf("bench-floor-%d", i))
		if err != nil {
			return fmt.Errorf("bare pod, run %d: %w", i, err)
		}
		bare, floorPhases = append(bare, d), append(floorPhases, fp)
		p, err := barePair(ctx, kube, fmt.Sprintf("bench-pair-%d", i))
		if err != nil {
			return fmt.Errorf("two bare pods, run %d: %w", i, err)
		}
		pair = append(pair, p)
		// The two jobs take turns at going first, so that neither always
		// starts on the nodes the other just left.
		var first, firstC10d, end time.Duration
		for _, backend := range rendezvousTurns(i) {
			f, e, jp, err := job(ctx, kube, training, fmt.Sprintf("bench-ddp-%s-%d", backendName(backend), i), backend)
			if err != nil {
				return fmt.Errorf("job (%s), run %d: %w", backendName(backend), i, err)
			}
			if backend == v1beta1.RendezvousBackendC10d {
				firstC10d, toFirstStepC10d, c10dPhases = f, append(toFirstStepC10d, f), append(c10dPhases, jp)
				continue
			}
			first, end = f, e
			toFirstStep, toSucceeded, jobPhases = append(toFirstStep, f), append(toSucceeded, e), append(jobPhases, jp)
		}
		scaled, err := elasticScale(ctx, kube, training, fmt.Sprintf("bench-elastic-%d", i))
		if err != nil {
			return fmt.Errorf("elastic job, run %d: %w", i, err)
		}
		scaleToTraining = append(scaleToTraining, scaled)
		benchkit.Logf("run %d: bare pod %s, two bare pods %s, job to every rank's first step %s (c10d %s), last exit to Succeeded %s, "+
			"scale 1 to 2 to training %s", i, benchkit.Ms(d), benchkit.Ms(p), benchkit.Ms(first), benchkit.Ms(firstC10d), benchkit.Ms(end),
			benchkit.Ms(scaled))
	}

	table := benchkit.Table{Header: []string{"measurement (real node, " + strconv.Itoa(runs) + " runs)", "median ms", "min ms", "max ms", "vs floor"}}
	row := func(name string, ds []time.Duration, floor time.Duration) {
		ratio := ""
		if floor > 0 {
			ratio = benchkit.Ratio(float64(benchkit.Median(ds)), float64(floor))
		}
		table.Add(name, benchkit.Ms(benchkit.Median(ds)), benchkit.Ms(benchkit.Percentile(ds, 0)), benchkit.Ms(benchkit.Percentile(ds, 100)), ratio)
	}
	row("bare Pod, torchrun standalone: create → first step (the floor)", bare, 0)
	row("two bare Pods, torchrun static, 2 ranks: create → every rank's first step", pair, benchkit.Median(bare))
	row("PyTorchTrainingJob, 2 ranks (static, the default): create → every rank's first step", toFirstStep, benchkit.Median(bare))
	table.Add("PyTorchTrainingJob, 2 ranks (static), next to the two bare Pods", "", "", "",
		benchkit.Ratio(float64(benchkit.Median(toFirstStep)), float64(benchkit.Median(pair))))
	row("PyTorchTrainingJob, 2 ranks, rdzvBackend c10d: create → every rank's first step", toFirstStepC10d, benchkit.Median(bare))
	row("PyTorchTrainingJob: last rank's exit → Succeeded", toSucceeded, 0)
	table.Add("elastic PyTorchTrainingJob: scale 1 → 2 → both ranks training at world 2",
		benchkit.Ms(benchkit.Median(scaleToTraining)), benchkit.Ms(benchkit.Percentile(scaleToTraining, 0)),
		benchkit.Ms(benchkit.Percentile(scaleToTraining, 100)),
		benchkit.Ratio(float64(benchkit.Median(scaleToTraining)), float64(benchkit.Median(toFirstStep)))+" of a new 2-rank job")
	recreate, inPlace, err := recoveries(ctx, kube, training, realNodes{ctr: ctr, stackDir: stack.Dir}, runs)
	if err != nil {
		return err
	}
	breakdown, restarts := breakdownTable(floorPhases, jobPhases, c10dPhases), recoveryTable(runs, recreate, inPlace)
	return report(out, &table, &breakdown, &restarts)
}

// report prints the tables, a blank line after each, and writes them to
// out too when it is set.
func report(out string, tables ...*benchkit.Table) error {
	var b strings.Builder
	for _, t := range tables {
		if err := t.Write(&b); err != nil {
			return err
		}
		b.WriteString("\n")
	}
	fmt.Print(b.String())
	if out != "" {
		return os.WriteFile(out, []byte(b.String()), 0o644)
	}
	return nil
}

func container(command ...string) corev1.Container {
	return corev1.Container{
		Name: "pytorch", Image: image, Command: command,
		Env: []corev1.EnvVar{{Name: "STEPS", Value: steps}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
		}},
	}
}

// barePod runs the training script in one Pod, through torchrun with a
// standalone rendezvous, and returns the time from its create to its first
// step.
func barePod(ctx context.Context, kube kubernetes.Interface, name string) (time.Duration, phases, error) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{container("torchrun", "--standalone", "--nnodes=1", "--nproc-per-node=1", monitorInterval, "pytorch_ddp.py")},
		},
	}
	pods := kube.CoreV1().Pods(namespace)
	seen, err := watchPods(ctx, kube)
	if err != nil {
		return 0, phases{}, err
	}
	created := time.Now()
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		seen.close()
		return 0, phases{}, err
	}
	defer func() {
		_ = pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}()
	err = untilPodsSucceeded(ctx, kube, name)
	seenPods := seen.close()
	if err != nil {
		return 0, phases{}, err
	}
	times, _, logs, err := stepTimes(ctx, kube, []string{name})
	if err != nil {
		return 0, phases{}, err
	}
	return times[0].Sub(created), breakdown(created, time.Time{}, onlyPods(seenPods, name), logs), nil
}

// onlyPods keeps the named pods of what a watch saw.
func onlyPods(seen map[string]podTimes, names ...string) map[string]podTimes {
	out := map[string]podTimes{}
	for _, n := range names {
		out[n] = seen[n]
	}
	return out
}

// untilPodsSucceeded polls the named pods until every one has succeeded;
// a failed one is an error.
func untilPodsSucceeded(ctx context.Context, kube kubernetes.Interface, names ...string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, n := range names {
			p, err := kube.CoreV1().Pods(namespace).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.Phase == corev1.PodFailed {
				return false, fmt.Errorf("pod %s failed", n)
			}
			if p.Status.Phase != corev1.PodSucceeded {
				return false, nil
			}
		}
		return true, nil
	})
}

// barePair runs the training script as two bare Pods behind a headless
// Service, each through torchrun with the job's default rendezvous, static,
// on the first one's DNS name, and returns the time from their create to
// the last rank's first step: what two ranks meeting through PyTorch cost
// without the controller (the job's own floor).
func barePair(ctx context.Context, kube kubernetes.Interface, name string) (time.Duration, error) {
	labels := map[string]string{"bench.tensorstack.dev/pair": name}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, PublishNotReadyAddresses: true},
	}
	host := "node-0." + name + "." + namespace + ".svc"
	pods := make([]*corev1.Pod, 2)
	for i := range pods {
		c := container("torchrun", "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=static", "--master-addr="+host,
			"--master-port=29400", fmt.Sprintf("--node-rank=%d", i), "--rdzv-id="+name, monitorInterval, "pytorch_ddp.py")
		c.Env = append(c.Env, corev1.EnvVar{Name: "MASTER_ADDR", Value: host}) // waitdns.py waits for it
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, i), Labels: labels},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Hostname: fmt.Sprintf("node-%d", i), Subdomain: name,
				Containers: []corev1.Container{c},
			},
		}
	}
	created := time.Now()
	if _, err := kube.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	defer func() {
		_ = kube.CoreV1().Services(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
	}()
	var names []string
	for _, p := range pods {
		if _, err := kube.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return 0, err
		}
		defer func() {
			_ = kube.CoreV1().Pods(namespace).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}()
		names = append(names, p.Name)
	}
	if err := untilPodsSucceeded(ctx, kube, names...); err != nil {
		return 0, err
	}
	firsts, _, _, err := stepTimes(ctx, kube, names)
	if err != nil {
		return 0, err
	}
	return latest(firsts...).Sub(created), nil
}

// rendezvousTurns is the order in which run i creates its two jobs: the
// default rendezvous ("") and c10d.
func rendezvousTurns(i int) []v1beta1.RendezvousBackend {
	if i%2 == 0 {
		return []v1beta1.RendezvousBackend{"", v1beta1.RendezvousBackendC10d}
	}
	return []v1beta1.RendezvousBackend{v1beta1.RendezvousBackendC10d, ""}
}

// backendName names a job's rendezvous in its name and in errors.
func backendName(backend v1beta1.RendezvousBackend) string {
	if backend == "" {
		return "default"
	}
	return string(backend)
}

// job runs a 2-rank DDP job with the given rendezvous ("" for the API's
// default) and returns the time from its create to the last rank's first
// step, and from the last rank's exit to Succeeded as its watcher sees it.
func job(ctx context.Context, kube kubernetes.Interface, training clientset.Interface, name string,
	backend v1beta1.RendezvousBackend) (time.Duration, time.Duration, phases, error) {
	j := &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.PyTorchTrainingJobSpec{
			TorchrunConfig: &v1beta1.TorchrunConfig{Enabled: true, ProcPerNode: "1", RdzvBackend: backend,
				ExtraOptions: []string{monitorInterval}},
			TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: []v1beta1.ReplicaSpec{{
				Type: "node", Replicas: ptr.To[int32](2),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{container("python3", "pytorch_ddp.py")}}},
			}}},
		},
	}
	jobs := training.BatchV1beta1().PyTorchTrainingJobs(namespace)
	seen, err := watchPods(ctx, kube)
	if err != nil {
		return 0, 0, phases{}, err
	}
	created := time.Now()
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		seen.close()
		return 0, 0, phases{}, err
	}
	defer func() {
		_ = jobs.Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	}()
	succeeded, err := untilSucceeded(ctx, training, name)
	seenPods := seen.close()
	if err != nil {
		return 0, 0, phases{}, err
	}
	pods := []string{name + "-node-0", name + "-node-1"}
	firsts, ends, logs, err := stepTimes(ctx, kube, pods)
	if err != nil {
		return 0, 0, phases{}, err
	}
	return latest(firsts...).Sub(created), succeeded.Sub(latest(ends...)), breakdown(created, succeeded, onlyPods(seenPods, pods...), logs), nil
}

// untilSucceeded watches a job until it succeeds, and returns when the
// watch saw it: a watch, not a poll, so that the time is the status
// write's to within the event's delivery.
func untilSucceeded(ctx context.Context, training clientset.Interface, name string) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	w, err := training.BatchV1beta1().PyTorchTrainingJobs(namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
	})
	if err != nil {
		return time.Time{}, err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		got, ok := ev.Object.(*v1beta1.PyTorchTrainingJob)
		if !ok {
			continue
		}
		switch got.Status.Phase {
		case v1beta1.JobFailed:
			return time.Time{}, fmt.Errorf("job %s failed", name)
		case v1beta1.JobSucceeded:
			return time.Now(), nil
		}
	}
	return time.Time{}, fmt.Errorf("job %s: the watch ended before it succeeded: %w", name, ctx.Err())
}

// unixTime reads the time the training scripts log: seconds since the
// epoch, with a fraction.
func unixTime(s string) time.Time {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Unix(0, int64(f*float64(time.Second)))
}

// trainingLog is the log of a pod's training container ("pytorch", as
// container names it).
func trainingLog(ctx context.Context, kube kubernetes.Interface, pod string) (string, error) {
	data, err := kube.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: "pytorch"}).DoRaw(ctx)
	return string(data), err
}

// stepTimes reads each pod's log for the time of its first step and of its
// end, and all it logs with a time.
func stepTimes(ctx context.Context, kube kubernetes.Interface, pods []string) (first, end []time.Time, logs map[string]logTimes, err error) {
	logs = map[string]logTimes{}
	for _, pod := range pods {
		data, err := trainingLog(ctx, kube, pod)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("logs of %s: %w", pod, err)
		}
		m, e := firstStep.FindStringSubmatch(data), done.FindStringSubmatch(data)
		if m == nil || e == nil {
			return nil, nil, nil, fmt.Errorf("pod %s logged no first step or no end:\n%s", pod, data)
		}
		first, end = append(first, unixTime(m[2])), append(end, unixTime(e[2]))
		logs[pod] = parseLog(data)
	}
	return first, end, logs, nil
}

// elasticScale runs an elastic job of one rank, scales it to two through
// the scale subresource once it trains, and returns the time from the
// scale to both ranks having trained a step in a group of two.
func elasticScale(ctx context.Context, kube kubernetes.Interface, training clientset.Interface, name string) (time.Duration, error) {
	c := container("python3", "pytorch_elastic.py")
	c.Env = []corev1.EnvVar{{Name: "STEPS", Value: "2000"}, {Name: "STEP_SECONDS", Value: "0.05"}}
	j := &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.PyTorchTrainingJobSpec{
			TorchrunConfig: &v1beta1.TorchrunConfig{Enabled: true, ProcPerNode: "1", MaxRestarts: ptr.To[int32](3),
				ExtraOptions: []string{monitorInterval, "--rdzv-conf=last_call_timeout=1"}},
			Elastic: &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](2),
				ExpectedReplicas: ptr.To[int32](1)},
			TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: []v1beta1.ReplicaSpec{{
				Type: "worker", Replicas: ptr.To[int32](1),
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{c}}},
			}}},
		},
	}
	jobs := training.BatchV1beta1().PyTorchTrainingJobs(namespace)
	if _, err := jobs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
		return 0, err
	}
	defer func() {
		_ = jobs.Delete(context.Background(), name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	}()
	logOf := func(ctx context.Context, pod string) string {
		log, _ := trainingLog(ctx, kube, pod)
		return log
	}
	pod0, pod1 := name+"-worker-0", name+"-worker-1"
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		return strings.Contains(logOf(ctx, pod0), "world=1 step=3 "), nil
	})
	if err != nil {
		return 0, fmt.Errorf("waiting for the first rank to train: %w", err)
	}
	scaled := time.Now()
	err = training.BatchV1beta1().RESTClient().Patch(types.MergePatchType).Namespace(namespace).
		Resource(v1beta1.PyTorchTrainingJobResource).Name(name).SubResource("scale").
		Body([]byte(`{"spec":{"replicas":2}}`)).Do(ctx).Error()
	if err != nil {
		return 0, fmt.Errorf("scaling to 2: %w", err)
	}
	var trained time.Time
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		trained = time.Time{}
		for _, pod := range []string{pod0, pod1} {
			m := worldOfTwo.FindStringSubmatch(logOf(ctx, pod))
			if m == nil {
				return false, nil
			}
			if at := unixTime(m[1]); at.After(trained) {
				trained = at
			}
		}
		return true, nil
	})
	if err != nil {
		return 0, fmt.Errorf("waiting for both ranks to train in a group of 2: %w", err)
	}
	return trained.Sub(scaled), nil
}
