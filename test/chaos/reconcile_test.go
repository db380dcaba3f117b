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

package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// lagTolerance is how old a difference between a job's status and its pods
// may be and still count as the controller's normal reaction time.
const lagTolerance = 2 * time.Second

// snapshot is one consistent-enough read of the namespace: every job and
// every pod.
type snapshot struct {
	at   time.Time
	jobs map[string]v1beta1.TrainingJob // by name
	pods map[string][]corev1.Pod        // by job name
}

// checker reads the namespace and says what the controller has not caught
// up with yet.
type checker struct {
	f       *framework.Framework
	history *framework.PodHistory
	mu      sync.Mutex
	jobs    []*chaosJob
}

func (c *checker) add(j *chaosJob) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.jobs = append(c.jobs, j)
}

func (c *checker) all() []*chaosJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.jobs)
}

func (c *checker) read(ctx context.Context) (*snapshot, error) {
	s := &snapshot{at: time.Now(), jobs: map[string]v1beta1.TrainingJob{}, pods: map[string][]corev1.Pod{}}
	tjs, err := c.f.Training.BatchV1beta1().TensorFlowTrainingJobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing tj: %w", err)
	}
	for i := range tjs.Items {
		s.jobs[tjs.Items[i].Name] = &tjs.Items[i]
	}
	pjs, err := c.f.Training.BatchV1beta1().PyTorchTrainingJobs(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pj: %w", err)
	}
	for i := range pjs.Items {
		s.jobs[pjs.Items[i].Name] = &pjs.Items[i]
	}
	pods, err := c.f.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	c.history.Observe(pods.Items)
	for _, p := range pods.Items {
		if job := p.Labels[v1beta1.LabelJobName]; job != "" {
			s.pods[job] = append(s.pods[job], p)
		}
	}
	return s, nil
}

func replicaStatus(job v1beta1.TrainingJob, pod string) *v1beta1.ReplicaStatus {
	for _, t := range job.JobStatus().Tasks {
		for i := range t.ReplicaStatus {
			if t.ReplicaStatus[i].Name == pod {
				return &t.ReplicaStatus[i]
			}
		}
	}
	return nil
}

func terminated(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// lags lists, keyed so that the same difference has the same key from one
// read to the next, what the jobs' status and pods do not yet agree on:
//   - a job without status (never reconciled), or with an old observedGeneration;
//   - an unfinished job whose replica status does not show a pod's UID and phase
//     (a failed pod may show Deleted: it is being replaced);
//   - an unfinished job missing a replica's pod, unless the status records the
//     replica Succeeded (never rerun) or waiting out its restart backoff;
//   - a finished job with pods still running (clean-up);
//   - a pod being deleted that still carries the replica-outcome finalizer.
func (c *checker) lags(s *snapshot) map[string]string {
	out := map[string]string{}
	for _, j := range c.all() {
		job, ok := s.jobs[j.ref.Name]
		if !ok {
			out[j.ref.Name+"/missing"] = "job not found"
			continue
		}
		st := job.JobStatus()
		if st.Phase == "" || st.ObservedGeneration < job.GetGeneration() {
			out[j.ref.Name+"/unobserved"] = fmt.Sprintf("phase %q, observedGeneration %d of %d", st.Phase, st.ObservedGeneration, job.GetGeneration())
			continue
		}
		finished := st.Phase.IsFinished()
		have := map[string]bool{}
		for i := range s.pods[j.ref.Name] {
			p := &s.pods[j.ref.Name][i]
			have[p.Name] = true
			key := fmt.Sprintf("%s/%s/%s", j.ref.Name, p.Name, p.UID)
			if p.DeletionTimestamp != nil {
				if slices.Contains(p.Finalizers, v1beta1.ReplicaOutcomeFinalizer) {
					out[key+"/finalizer"] = "pod being deleted still has the finalizer " + v1beta1.ReplicaOutcomeFinalizer
				}
				continue
			}
			if finished {
				if !terminated(p) {
					out[key+"/cleanup"] = fmt.Sprintf("job %s but pod %s still %s", st.Phase, p.Name, p.Status.Phase)
				}
				continue
			}
			rs := replicaStatus(job, p.Name)
			want := v1beta1.ReplicaPhase(p.Status.Phase)
			if p.Status.Phase == "" {
				want = v1beta1.ReplicaPending
			}
			switch {
			case rs == nil:
				out[key+"/"+string(want)] = "no replica status for pod " + p.Name
			case rs.UID != p.UID:
				out[key+"/"+string(want)] = fmt.Sprintf("replica status has UID %s, pod %s", rs.UID, p.UID)
			case rs.Phase == want:
			case p.Status.Phase == corev1.PodFailed && rs.Phase == v1beta1.ReplicaDeleted:
			default:
				out[key+"/"+string(want)] = fmt.Sprintf("replica status says %s, pod is %s", rs.Phase, p.Status.Phase)
			}
		}
		if finished {
			continue
		}
		for _, name := range j.pods {
			if have[name] {
				continue
			}
			rs := replicaStatus(job, name)
			switch {
			case rs != nil && rs.Phase == v1beta1.ReplicaSucceeded:
				// Recorded success: not run again.
			case rs != nil && rs.RestartAt != nil && rs.RestartAt.After(s.at.Add(-lagTolerance)):
				// Waiting out the restart backoff.
			default:
				desc := "no pod"
				if rs != nil {
					desc = fmt.Sprintf("no pod; replica status %s %s", rs.Phase, rs.Reason)
				}
				out[j.ref.Name+"/"+name+"/missing"] = desc
			}
		}
	}
	return out
}

// recovery is how a wait for the controller to catch up went.
type recovery struct {
	took    time.Duration // from the given start until caught up
	backlog int           // differences at the first read
	err     error
}

// waitCaughtUp reads the namespace every 500ms from start on until every
// difference seen at the first read is resolved and no newer one is older
// than lagTolerance. It reports the time from start.
func (c *checker) waitCaughtUp(start time.Time, timeout time.Duration) recovery {
	firstSeen := map[string]time.Time{}
	var first time.Time
	backlog := -1
	var last map[string]string
	var lastErr error
	deadline := start.Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := c.read(ctx)
		cancel()
		if err != nil {
			lastErr = err
		} else {
			lags := c.lags(s)
			if backlog < 0 {
				backlog, first = len(lags), s.at
			}
			for k := range firstSeen {
				if _, ok := lags[k]; !ok {
					delete(firstSeen, k)
				}
			}
			stale := 0
			for k := range lags {
				if _, ok := firstSeen[k]; !ok {
					firstSeen[k] = s.at
				}
				if !firstSeen[k].After(first) || s.at.Sub(firstSeen[k]) > lagTolerance {
					stale++
				}
			}
			if stale == 0 {
				return recovery{took: s.at.Sub(start), backlog: backlog}
			}
			last, lastErr = lags, nil
		}
		if time.Now().After(deadline) {
			return recovery{took: time.Since(start), backlog: backlog,
				err: fmt.Errorf("not caught up within %s; last error: %v; differences: %s", timeout, lastErr, describeLags(last, firstSeen))}
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func describeLags(lags map[string]string, since map[string]time.Time) string {
	if len(lags) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(lags))
	for k := range lags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d", len(keys))
	for i, k := range keys {
		if i == 15 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(keys)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", k, lags[k])
		if t, ok := since[k]; ok {
			fmt.Fprintf(&b, " (for %s)", time.Since(t).Round(100*time.Millisecond))
		}
	}
	return b.String()
}
