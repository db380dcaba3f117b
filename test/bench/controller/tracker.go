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
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// tracker records when the run's objects appeared and changed.
type tracker struct {
	mu    sync.Mutex
	jobs  int
	kind  string
	t0    time.Time
	pods  map[types.UID]*podState
	seen  map[string]map[types.UID]bool
	done  map[string]bool // job name: succeeded
	last  struct{ podSeen, podStarted, podEnded, jobDone time.Duration }
	ended chan struct{}
	// podsDeleted counts pods deleted during the run.
	podsDeleted int
	// lastExit is, per job, when the last of its pods was seen ended;
	// doneLags are the times from then until the job was seen finished.
	lastExit map[string]time.Duration
	doneLags []time.Duration
	// runFor is how long a pod runs; overruns are how much longer each
	// pod was seen running, exitSeenLags how long after kwok's exit time
	// each job's last pod was seen ended.
	runFor       time.Duration
	overruns     []time.Duration
	lastExitLag  map[string]time.Duration
	exitSeenLags []time.Duration
	// startSpan is, per job, when its first and its last pod were seen
	// started: pods that start apart end apart.
	startSpan map[string]*[2]time.Duration
}

type podState struct {
	started, ended bool
	startedAt      time.Duration
}

func newTracker(jobs int, kind string, runFor time.Duration) *tracker {
	return &tracker{
		jobs: jobs, kind: kind, runFor: runFor,
		lastExitLag: map[string]time.Duration{},
		startSpan:   map[string]*[2]time.Duration{},
		pods:        map[types.UID]*podState{},
		seen:        map[string]map[types.UID]bool{},
		done:        map[string]bool{},
		ended:       make(chan struct{}),
		lastExit:    map[string]time.Duration{},
	}
}

func (t *tracker) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.t0 = time.Now()
}

func (t *tracker) since() time.Duration { return time.Since(t.t0) }

func (t *tracker) pod(obj interface{}, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.pods[p.UID]
	if st == nil {
		st = &podState{}
		t.pods[p.UID] = st
		t.last.podSeen = t.since()
	}
	if deleted {
		t.podsDeleted++
		return
	}
	switch p.Status.Phase {
	case corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed:
		if !st.started {
			st.started = true
			st.startedAt = t.since()
			t.last.podStarted = st.startedAt
			if ref := metav1.GetControllerOf(p); ref != nil {
				if span := t.startSpan[ref.Name]; span == nil {
					t.startSpan[ref.Name] = &[2]time.Duration{st.startedAt, st.startedAt}
				} else {
					span[1] = st.startedAt
				}
			}
		}
	}
	if (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) && !st.ended {
		st.ended = true
		now := t.since()
		t.last.podEnded = now
		if st.started {
			t.overruns = append(t.overruns, now-st.startedAt-t.runFor)
		}
		// Both controllers make the job the pod's controller.
		if ref := metav1.GetControllerOf(p); ref != nil {
			if _, done := t.done[ref.Name]; !done {
				t.lastExit[ref.Name] = now
				if exited, ok := containersFinishedAt(p); ok {
					t.lastExitLag[ref.Name] = time.Since(exited)
				}
			}
		}
	}
}

func (t *tracker) object(kind string, obj interface{}) {
	m, ok := obj.(metav1.Object)
	if !ok || m.GetName() == "kube-root-ca.crt" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen[kind] == nil {
		t.seen[kind] = map[types.UID]bool{}
	}
	t.seen[kind][m.GetUID()] = true
}

func (t *tracker) job(obj interface{}) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	succeeded, finished := jobOutcome(t.kind, u)
	if !finished {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.done[u.GetName()]; ok {
		return
	}
	t.done[u.GetName()] = succeeded
	t.last.jobDone = t.since()
	if exit, ok := t.lastExit[u.GetName()]; ok {
		t.doneLags = append(t.doneLags, t.last.jobDone-exit)
	}
	if lag, ok := t.lastExitLag[u.GetName()]; ok {
		t.exitSeenLags = append(t.exitSeenLags, lag)
	}
	if len(t.done) == t.jobs {
		close(t.ended)
	}
}

// containersFinishedAt is when the last of a pod's containers exited, as
// its status says (whole seconds).
func containersFinishedAt(p *corev1.Pod) (time.Time, bool) {
	var last time.Time
	for _, c := range p.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	return last, !last.IsZero()
}

// Percentiles are the p50, p99 and largest of some durations, in seconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func percentiles(ds []time.Duration) Percentiles {
	n := len(ds)
	if n == 0 {
		return Percentiles{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return Percentiles{P50: sorted[n/2].Seconds(), P99: sorted[min(n-1, n*99/100)].Seconds(), Max: sorted[n-1].Seconds()}
}

// jobOutcome reads whether a job finished and whether it succeeded: our
// status.phase, or Kubeflow's Succeeded and Failed conditions.
func jobOutcome(kind string, u *unstructured.Unstructured) (succeeded, finished bool) {
	if kind == kindOurs {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return phase == "Succeeded", phase == "Succeeded" || phase == "Failed"
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]interface{})
		if !ok || m["status"] != "True" {
			continue
		}
		switch m["type"] {
		case "Succeeded":
			return true, true
		case "Failed":
			return false, true
		}
	}
	return false, false
}

// wait waits until every job finished, logging progress, or the timeout;
// it says whether they all finished.
func (t *tracker) wait(timeout time.Duration) bool {
	deadline := time.After(timeout)
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-t.ended:
			return true
		case <-deadline:
			return false
		case <-tick.C:
			t.mu.Lock()
			started := 0
			for _, p := range t.pods {
				if p.started {
					started++
				}
			}
			benchkit.Logf("  %4.0fs: pods %d seen, %d started; jobs %d/%d finished",
				t.since().Seconds(), len(t.pods), started, len(t.done), t.jobs)
			t.mu.Unlock()
		}
	}
}

func (t *tracker) fill(r *Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r.PodsSeen = len(t.pods)
	for _, p := range t.pods {
		if p.started {
			r.PodsStarted++
		}
	}
	for _, ok := range t.done {
		if ok {
			r.JobsSucceeded++
		} else {
			r.JobsFailed++
		}
	}
	done := percentiles(t.doneLags)
	r.DoneLagP50Seconds, r.DoneLagP99Seconds, r.DoneLagMaxSeconds = done.P50, done.P99, done.Max
	r.ExitSeenLag = percentiles(t.exitSeenLags)
	r.RunOverrun = percentiles(t.overruns)
	spans := make([]time.Duration, 0, len(t.startSpan))
	for _, span := range t.startSpan {
		spans = append(spans, span[1]-span[0])
	}
	r.StartSpread = percentiles(spans)
	r.PodsEndedSeconds = t.last.podEnded.Seconds()
	r.PodsExistSeconds = t.last.podSeen.Seconds()
	r.PodsStartedSeconds = t.last.podStarted.Seconds()
	r.JobsDoneSeconds = t.last.jobDone.Seconds()
	r.PodsCreated = len(t.pods)
	r.PodsDeleted = t.podsDeleted
	r.Services = len(t.seen["services"])
	r.ConfigMaps = len(t.seen["configmaps"])
}
