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

package framework

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
)

// errStop ends a wait early: what the waiter saw can no longer turn into
// what it waits for.
type errStop struct{ msg string }

func (e errStop) Error() string { return e.msg }

// Stop makes a wait condition end the wait at once with a failure.
func Stop(format string, args ...any) error { return errStop{fmt.Sprintf(format, args...)} }

// Eventually polls cond every Poll until it returns true, for at most
// timeout. Errors from cond are remembered and polling goes on (the control
// plane may be restarting) unless they come from Stop. On failure it returns
// an error that says what was awaited and the last error.
func Eventually(timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ok, err := cond(ctx)
		cancel()
		if ok && err == nil {
			return nil
		}
		if err != nil {
			var stop errStop
			if errors.As(err, &stop) {
				return fmt.Errorf("%s: gave up: %w", desc, err)
			}
			last = err
		}
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("%s: not within %s (last error: %v)", desc, timeout, last)
			}
			return fmt.Errorf("%s: not within %s", desc, timeout)
		}
		time.Sleep(Poll)
	}
}

// WaitForJob waits until cond holds for the job and returns the job as it
// was then. On failure it dumps the job, its pods and its events.
func (f *Framework) WaitForJob(ref JobRef, desc string, timeout time.Duration, cond func(job v1beta1.TrainingJob) (bool, error)) v1beta1.TrainingJob {
	f.T.Helper()
	var seen v1beta1.TrainingJob
	err := Eventually(timeout, fmt.Sprintf("%s: %s", ref, desc), func(ctx context.Context) (bool, error) {
		job, err := f.GetJob(ctx, ref)
		if err != nil {
			return false, err
		}
		seen = job
		return cond(job)
	})
	if err != nil {
		f.T.Fatalf("%v\n%s", err, f.DumpJob(ref))
	}
	return seen
}

// WaitForPhase waits until the job is in phase. It stops early when the job
// reaches another terminal phase, since terminal phases never change.
func (f *Framework) WaitForPhase(ref JobRef, phase v1beta1.JobPhase) v1beta1.TrainingJob {
	f.T.Helper()
	return f.WaitForJob(ref, "phase "+string(phase), Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		got := job.JobStatus().Phase
		if got != phase && got.IsFinished() {
			return false, Stop("the job finished with phase %s", got)
		}
		return got == phase, nil
	})
}

// WaitForCondition waits until the job has condition typ with status (and
// reason unless empty).
func (f *Framework) WaitForCondition(ref JobRef, typ string, status metav1.ConditionStatus, reason string) v1beta1.TrainingJob {
	f.T.Helper()
	desc := fmt.Sprintf("condition %s=%s", typ, status)
	if reason != "" {
		desc += " reason " + reason
	}
	return f.WaitForJob(ref, desc, Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return HasCondition(job, typ, status, reason), nil
	})
}

// WaitForPods waits until cond holds for the job's pods and returns them.
func (f *Framework) WaitForPods(ref JobRef, desc string, timeout time.Duration, cond func(pods []corev1.Pod) (bool, error)) []corev1.Pod {
	f.T.Helper()
	var seen []corev1.Pod
	err := Eventually(timeout, fmt.Sprintf("pods of %s: %s", ref, desc), func(ctx context.Context) (bool, error) {
		pods, err := f.ListPods(ctx, ref)
		if err != nil {
			return false, err
		}
		seen = pods
		return cond(pods)
	})
	if err != nil {
		f.T.Fatalf("%v\n%s", err, f.DumpJob(ref))
	}
	return seen
}

// WaitForRunningPods waits until the job has exactly n pods, all Running
// and not being deleted.
func (f *Framework) WaitForRunningPods(ref JobRef, n int) []corev1.Pod {
	f.T.Helper()
	return f.WaitForPods(ref, fmt.Sprintf("%d running pods", n), Timeout, func(pods []corev1.Pod) (bool, error) {
		if len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				return false, nil
			}
		}
		return true, nil
	})
}

// WaitForNoPods waits until the job has no pods at all.
func (f *Framework) WaitForNoPods(ref JobRef, timeout time.Duration) {
	f.T.Helper()
	f.WaitForPods(ref, "no pods", timeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 0, nil
	})
}

// WaitForJobGone waits until the job cannot be found any more.
func (f *Framework) WaitForJobGone(ref JobRef, timeout time.Duration) {
	f.T.Helper()
	err := Eventually(timeout, fmt.Sprintf("%s to be deleted", ref), func(ctx context.Context) (bool, error) {
		_, err := f.GetJob(ctx, ref)
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		f.T.Fatalf("%v\n%s", err, f.DumpJob(ref))
	}
}

// Eventually is the package's Eventually that fails the test with the
// namespace's state.
func (f *Framework) Eventually(timeout time.Duration, desc string, cond func(ctx context.Context) (bool, error)) {
	f.T.Helper()
	if err := Eventually(timeout, desc, cond); err != nil {
		f.T.Fatalf("%v\n%s", err, f.DumpNamespace())
	}
}

// DumpJob describes the job's status, pods and events for a failure message.
func (f *Framework) DumpJob(ref JobRef) string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "---- %s\n", ref)
	job, err := f.GetJob(ctx, ref)
	if err != nil {
		fmt.Fprintf(&b, "job: %v\n", err)
	} else {
		dump := map[string]any{
			"generation":        job.GetGeneration(),
			"deletionTimestamp": job.GetDeletionTimestamp(),
			"runMode":           job.CommonSpec().RunMode,
			"runPolicy":         job.CommonSpec().RunPolicy,
			"status":            job.JobStatus(),
		}
		data, _ := yaml.Marshal(dump)
		b.Write(data)
	}
	pods, err := f.ListPods(ctx, ref)
	if err != nil {
		fmt.Fprintf(&b, "pods: %v\n", err)
	} else {
		fmt.Fprintf(&b, "pods (%d):\n", len(pods))
		for i := range pods {
			b.WriteString(describePod(&pods[i]))
		}
	}
	b.WriteString(f.events(ctx, ref.Namespace, ref.Name))
	return b.String()
}

// DumpNamespace describes every job of the test's namespace.
func (f *Framework) DumpNamespace() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var b strings.Builder
	var refs []JobRef
	for _, kind := range jobclient.Kinds {
		jobs, err := kind.Client(f.Training, f.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			fmt.Fprintf(&b, "listing %ss: %v\n", kind.Name, err)
			continue
		}
		for _, j := range jobs {
			refs = append(refs, f.Ref(Kind(kind.Name), j.GetName()))
		}
	}
	if len(refs) == 0 {
		b.WriteString("no jobs\n")
	}
	for _, r := range refs {
		b.WriteString(f.DumpJob(r))
	}
	return b.String()
}

func describePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "  %s uid=%s phase=%s", p.Name, p.UID, p.Status.Phase)
	if p.DeletionTimestamp != nil {
		fmt.Fprintf(&b, " deleting(since %s)", p.DeletionTimestamp.Format(time.RFC3339))
	}
	if p.Spec.NodeName != "" {
		fmt.Fprintf(&b, " node=%s", p.Spec.NodeName)
	}
	if v, ok := p.Annotations[AnnotationExitCode]; ok {
		fmt.Fprintf(&b, " exit-code=%s", v)
	}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, " [%s: terminated %d]", c.Name, c.State.Terminated.ExitCode)
		case c.State.Running != nil:
			fmt.Fprintf(&b, " [%s: running]", c.Name)
		case c.State.Waiting != nil:
			fmt.Fprintf(&b, " [%s: waiting %s]", c.Name, c.State.Waiting.Reason)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// events lists the namespace's events about objects named name (the job,
// and also its Service) in time order.
func (f *Framework) events(ctx context.Context, namespace, name string) string {
	list, err := f.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String(),
	})
	if err != nil {
		return fmt.Sprintf("events: %v\n", err)
	}
	items := list.Items
	sort.SliceStable(items, func(i, j int) bool {
		return eventTime(&items[i]).Before(eventTime(&items[j]))
	})
	var b strings.Builder
	fmt.Fprintf(&b, "events of %s (%d):\n", name, len(items))
	for _, e := range items {
		fmt.Fprintf(&b, "  %s %s %s %s: %s (x%d)\n", eventTime(&e).Format("15:04:05.000"),
			e.InvolvedObject.Kind, e.Type, e.Reason, e.Message, max(e.Count, 1))
	}
	return b.String()
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	default:
		return e.CreationTimestamp.Time
	}
}

// Consistently checks cond every Poll for the whole duration and fails the
// test the first time it does not hold. It is the way to assert that
// something does not happen, such as a kept pod being deleted; use it after
// the event that would have caused it.
func (f *Framework) Consistently(duration time.Duration, desc string, cond func(ctx context.Context) error) {
	f.T.Helper()
	deadline := time.Now().Add(duration)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := cond(ctx)
		cancel()
		if err != nil {
			f.T.Fatalf("%s: did not hold: %v\n%s", desc, err, f.DumpNamespace())
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(Poll)
	}
}

// PhaseRecorder records every phase a job is seen in through a watch, so
// that short-lived phases such as Resuming are not missed by polling.
type PhaseRecorder struct {
	mu     sync.Mutex
	phases []v1beta1.JobPhase
	stop   context.CancelFunc
	done   chan struct{}
}

// RecordPhases starts watching the job from its current resourceVersion.
func (f *Framework) RecordPhases(ref JobRef) *PhaseRecorder {
	f.T.Helper()
	job := f.MustGetJob(ref)
	ctx, cancel := context.WithCancel(context.Background())
	opts := metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", ref.Name).String(),
		ResourceVersion: job.GetResourceVersion(),
	}
	var w watch.Interface
	var err error
	w, err = ref.Kind.info().Client(f.Training, ref.Namespace).Watch(ctx, opts)
	if err != nil {
		cancel()
		f.T.Fatalf("watching %s: %v", ref, err)
	}
	r := &PhaseRecorder{stop: cancel, done: make(chan struct{}), phases: []v1beta1.JobPhase{job.JobStatus().Phase}}
	go func() {
		defer close(r.done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			j, ok := ev.Object.(v1beta1.TrainingJob)
			if !ok {
				continue
			}
			r.mu.Lock()
			if p := j.JobStatus().Phase; r.phases[len(r.phases)-1] != p {
				r.phases = append(r.phases, p)
			}
			r.mu.Unlock()
		}
	}()
	f.T.Cleanup(r.Stop)
	return r
}

// Phases returns the distinct consecutive phases seen so far.
func (r *PhaseRecorder) Phases() []v1beta1.JobPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]v1beta1.JobPhase(nil), r.phases...)
}

// Stop ends the watch.
func (r *PhaseRecorder) Stop() {
	r.stop()
	<-r.done
}
