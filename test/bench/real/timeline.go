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
	"regexp"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// podTimes are the moments a watch saw in a pod's life: bound to a node,
// its container running (the kubelet's report), its container terminated,
// and the pod Succeeded.
type podTimes struct {
	scheduled, running, terminated, succeeded time.Time
}

// podWatch records, from a watch of the namespace's pods, when each pod
// reached each moment, as this process saw it.
type podWatch struct {
	mu    sync.Mutex
	times map[string]*podTimes
	stop  context.CancelFunc
	done  chan struct{}
}

func watchPods(ctx context.Context, kube kubernetes.Interface) (*podWatch, error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := kube.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		return nil, err
	}
	pw := &podWatch{times: map[string]*podTimes{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(pw.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if p, ok := ev.Object.(*corev1.Pod); ok {
				pw.saw(p, time.Now())
			}
		}
	}()
	return pw, nil
}

func (pw *podWatch) saw(p *corev1.Pod, now time.Time) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	t := pw.times[p.Name]
	if t == nil {
		t = &podTimes{}
		pw.times[p.Name] = t
	}
	first := func(at *time.Time, reached bool) {
		if reached && at.IsZero() {
			*at = now
		}
	}
	first(&t.scheduled, p.Spec.NodeName != "")
	for _, c := range p.Status.ContainerStatuses {
		first(&t.running, c.State.Running != nil || c.State.Terminated != nil)
		first(&t.terminated, c.State.Terminated != nil)
	}
	first(&t.succeeded, p.Status.Phase == corev1.PodSucceeded)
}

// close stops the watch and returns what it saw.
func (pw *podWatch) close() map[string]podTimes {
	pw.stop()
	<-pw.done
	pw.mu.Lock()
	defer pw.mu.Unlock()
	out := map[string]podTimes{}
	for name, t := range pw.times {
		out[name] = *t
	}
	return out
}

// logTimes are the moments the training processes log: the rendezvous
// host's name resolved (waitdns.py, on a replica that waits for one), the
// process group joined, the first step, the end.
type logTimes struct {
	resolved, joined, firstStep, done time.Time
}

var (
	resolvedLine = regexp.MustCompile(`waitdns: \S+ resolved after \S+ at=([0-9.]+)`)
	joinedLine   = regexp.MustCompile(`rank=\d+ world=\d+ joined at=([0-9.]+)`)
)

func parseLog(log string) logTimes {
	var t logTimes
	at := func(re *regexp.Regexp, group int) time.Time {
		if m := re.FindStringSubmatch(log); m != nil {
			return unixTime(m[group])
		}
		return time.Time{}
	}
	t.resolved = at(resolvedLine, 1)
	t.joined = at(joinedLine, 1)
	t.firstStep = at(firstStep, 2)
	t.done = at(done, 2)
	return t
}

// phases is one run's breakdown: where the time from create to every
// rank's first step went, phase by phase, each up to the last replica to
// get there, and from the last rank's end to the job's Succeeded.
type phases struct {
	// create → every pod bound to a node.
	scheduling time.Duration
	// → every container running, as the kubelets report it: the sandbox,
	// its network, the container.
	sandbox time.Duration
	// → the rendezvous host's name resolved everywhere it is waited for.
	dns time.Duration
	// → every rank in the process group: PyTorch imported, torchrun's
	// rendezvous, the workers started, init_process_group.
	rendezvous time.Duration
	// → every rank's first step.
	firstStep time.Duration
	// the last rank's end → every container terminated (the kubelet's
	// report); from there, → every pod Succeeded (the kubelet's phase, after
	// the sandbox's teardown), and → the job Succeeded as a watcher sees it.
	// The controller decides from the containers' exit codes, so the pods'
	// phase is not on the job's path (and, for the job, not always seen:
	// the watch ends with the job's Succeeded).
	exitToTerminated, terminatedToPodSucceeded, terminatedToJobSucceeded time.Duration
}

func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// breakdown turns what was seen of the pods into phases; created is the
// create call, succeeded the job's Succeeded (zero for a bare pod).
func breakdown(created, succeeded time.Time, pods map[string]podTimes, logs map[string]logTimes) phases {
	var scheduled, running, resolved, joined, first, end, terminated, podSucceeded []time.Time
	for name, p := range pods {
		l := logs[name]
		scheduled, running, terminated, podSucceeded = append(scheduled, p.scheduled), append(running, p.running),
			append(terminated, p.terminated), append(podSucceeded, p.succeeded)
		resolved, joined, first, end = append(resolved, l.resolved), append(joined, l.joined), append(first, l.firstStep), append(end, l.done)
	}
	ph := phases{}
	s, r := latest(scheduled...), latest(running...)
	d := latest(append(resolved, r)...)
	j, f := latest(joined...), latest(first...)
	ph.scheduling, ph.sandbox, ph.dns, ph.rendezvous, ph.firstStep = s.Sub(created), r.Sub(s), d.Sub(r), j.Sub(d), f.Sub(j)
	e, t, ps := latest(end...), latest(terminated...), latest(podSucceeded...)
	ph.exitToTerminated = t.Sub(e)
	if succeeded.IsZero() {
		ph.terminatedToPodSucceeded = ps.Sub(t)
	} else {
		ph.terminatedToJobSucceeded = succeeded.Sub(t)
	}
	return ph
}

// breakdownTable prints the median of each phase for the floor (a bare
// Pod), the job with its default rendezvous and the job with c10d, side by
// side.
func breakdownTable(floor, job, c10d []phases) benchkit.Table {
	t := benchkit.Table{Header: []string{"phase (median ms)", "bare Pod (floor)", "PyTorchTrainingJob, 2 ranks (static)",
		"PyTorchTrainingJob, 2 ranks (c10d)"}}
	median := func(ps []phases, get func(phases) time.Duration) string {
		if len(ps) == 0 {
			return "-"
		}
		ds := make([]time.Duration, len(ps))
		for i, p := range ps {
			ds[i] = get(p)
		}
		return benchkit.Ms(benchkit.Median(ds))
	}
	for _, row := range []struct {
		name       string
		get        func(phases) time.Duration
		floor, job bool
	}{
		{"create → every pod bound (scheduling)", func(p phases) time.Duration { return p.scheduling }, true, true},
		{"→ every container running (sandbox, network, container; the kubelet's report)", func(p phases) time.Duration { return p.sandbox }, true, true},
		{"→ the rendezvous host's name resolved (DNS)", func(p phases) time.Duration { return p.dns }, true, true},
		{"→ every rank in the process group (PyTorch, torchrun's rendezvous)", func(p phases) time.Duration { return p.rendezvous }, true, true},
		{"→ every rank's first step", func(p phases) time.Duration { return p.firstStep }, true, true},
		{"last rank's end → every container terminated (torchrun's exit; the kubelet's report)", func(p phases) time.Duration { return p.exitToTerminated }, true, true},
		{"→ the pod Succeeded (the kubelet, once the sandbox is down)", func(p phases) time.Duration { return p.terminatedToPodSucceeded }, true, false},
		{"→ the job Succeeded (the controller, from the exit codes; its status write)", func(p phases) time.Duration { return p.terminatedToJobSucceeded }, false, true},
	} {
		f, j, c := "-", "-", "-"
		if row.floor {
			f = median(floor, row.get)
		}
		if row.job {
			j, c = median(job, row.get), median(c10d, row.get)
		}
		t.Add(row.name, f, j, c)
	}
	return t
}
