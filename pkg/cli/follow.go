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

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// logDrainTime is how long the logs of a finished job may take to end: the
// last lines are still on their way, and the pods of a failed job are being
// stopped.
const logDrainTime = 10 * time.Second

// followJob streams the logs of the job's pods until the job finishes, and
// returns its outcome as jobOutcome does.
func followJob(ctx context.Context, e *env, c clients, found foundJob, maxStreams int) error {
	follower := newPodLogFollower(ctx, e, c, found, maxStreams)
	podsCtx, stopWatchingPods := context.WithCancel(ctx)
	defer stopWatchingPods()
	podsSeen, err := follower.watchPods(podsCtx, c.kube)
	if err != nil {
		return err
	}

	job, deleted, err := watchJob(ctx, c.training, found, func(v1beta1.TrainingJob) error { return nil })

	// The logs of a finished job end soon after it: wait for their last
	// lines, and for the pods' first list, should the job have finished
	// before it came. A job that did not finish leaves nothing to wait for.
	drain, cancel := context.WithTimeout(ctx, logDrainTime)
	defer cancel()
	if !phaseOf(job).IsFinished() {
		cancel()
	}
	cache.WaitForCacheSync(drain.Done(), podsSeen)
	stopWatchingPods()
	follower.finish(drain)

	switch {
	case err != nil:
		return err
	case deleted:
		return fmt.Errorf("%s was deleted before it finished", found.Ref())
	case ctx.Err() != nil:
		return fmt.Errorf("stopped following %s, which goes on: it is %s", found.Ref(), phaseOf(job))
	}
	return jobOutcome(found.kind, job)
}

// jobOutcome is nil for a job that succeeded, and otherwise an error saying
// why it failed, as its Failed condition does, or that it has not finished.
func jobOutcome(kind *jobKind, job v1beta1.TrainingJob) error {
	ref := kind.Ref(job.GetName())
	switch phase := phaseOf(job); phase {
	case v1beta1.JobSucceeded:
		return nil
	case v1beta1.JobFailed:
		failure := ref + " failed"
		if c := meta.FindStatusCondition(job.JobStatus().Conditions, v1beta1.ConditionFailed); c != nil {
			for _, why := range []string{c.Reason, c.Message} {
				if why != "" {
					failure += ": " + why
				}
			}
		}
		return errors.New(failure)
	default:
		return fmt.Errorf("%s has not finished: it is %s", ref, phase)
	}
}

// podLogFollower streams the training container's log of each pod of a job
// as the pods come and go: every pod the controller creates, and every run
// of a container restarted in place, once.
type podLogFollower struct {
	job        foundJob
	pods       typedcorev1.PodInterface
	out        *lineWriter
	errOut     io.Writer
	maxStreams int
	// streams ends the streams still open, with stopStreams. The informer's
	// handlers, which start the streams, take no context.
	streams     context.Context
	stopStreams context.CancelFunc

	mu sync.Mutex
	// followed holds the container runs whose log was streamed or
	// skipped: pod UID and restart count.
	followed   sets.Set[string]
	open       int
	finished   bool
	warnedFull bool
	lastError  string
	wg         sync.WaitGroup
}

func newPodLogFollower(ctx context.Context, e *env, c clients, found foundJob, maxStreams int) *podLogFollower {
	f := &podLogFollower{
		job:        found,
		pods:       c.kube.CoreV1().Pods(found.job.GetNamespace()),
		out:        &lineWriter{out: e.streams.Out},
		errOut:     e.streams.ErrOut,
		maxStreams: maxStreams,
		followed:   sets.New[string](),
	}
	f.streams, f.stopStreams = context.WithCancel(ctx)
	return f
}

// watchPods streams the logs of the job's pods until ctx ends. The function
// it returns says whether the pods that existed at the start were seen.
func (f *podLogFollower) watchPods(ctx context.Context, kube kubernetes.Interface) (cache.InformerSynced, error) {
	selector := jobPodSelector(f.job)
	informer := coreinformers.NewTypedFilteredPodInformer(kube, f.job.job.GetNamespace(), 0, nil,
		func(opts *metav1.ListOptions) { opts.LabelSelector = selector })
	if err := informer.SetWatchErrorHandlerWithContext(f.watchFailed); err != nil {
		return nil, err
	}
	registration, err := informer.AddTypedEventHandler(coreinformers.PodHandlerFuncs{
		AddFunc:    f.podChanged,
		UpdateFunc: func(_, pod *corev1.Pod) { f.podChanged(pod) },
	})
	if err != nil {
		return nil, err
	}
	go informer.RunWithContext(ctx)
	return registration.HasSynced, nil
}

// watchFailed tells once of each error the pod watch keeps meeting, such as
// a Forbidden; the informer retries.
func (f *podLogFollower) watchFailed(_ context.Context, _ *cache.Reflector, err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return // the watch ended as watches do; the informer opens another
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err.Error() != f.lastError {
		f.lastError = err.Error()
		fmt.Fprintf(f.errOut, "Warning: watching the pods of %s: %v\n", f.job.Ref(), err)
	}
}

// podChanged streams the log of the pod's training container once it has
// one to read.
func (f *podLogFollower) podChanged(pod *corev1.Pod) {
	container := trainingContainer(f.job.kind, pod.Spec.Containers)
	var run string
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == container && (s.State.Running != nil || s.State.Terminated != nil) {
			run = string(pod.UID) + "/" + strconv.Itoa(int(s.RestartCount))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if run == "" || f.finished || f.followed.Has(run) {
		return
	}
	f.followed.Insert(run)
	if f.open >= f.maxStreams {
		if !f.warnedFull {
			f.warnedFull = true
			fmt.Fprintf(f.errOut, "Warning: not following the log of %s, nor of other pods while %d logs stream: raise --max-log-requests to follow more\n",
				pod.Name, f.open)
		}
		return
	}
	f.open++
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		logs := logsOptions{follow: true, prefix: true, tail: -1}
		err := logs.copyLog(f.streams, f.pods, f.out, logSource{pod: pod.Name, container: container})
		f.mu.Lock()
		defer f.mu.Unlock()
		f.open--
		if err != nil {
			// The other logs go on.
			fmt.Fprintln(f.errOut, ErrorMessage(err))
		}
	}()
}

// finish starts no more streams, waits for the open ones to end until ctx
// does, then ends them.
func (f *podLogFollower) finish(ctx context.Context) {
	f.mu.Lock()
	f.finished = true
	f.mu.Unlock()
	ended := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(ended)
	}()
	select {
	case <-ended:
	case <-ctx.Done():
		f.stopStreams()
		<-ended
	}
	f.stopStreams()
}
