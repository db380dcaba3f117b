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
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/test/bench/internal/benchkit"
)

// controllerResult is how the controller starts on the history and what it
// holds.
type controllerResult struct {
	emptyRSS, rss int64
	// historyRSS and noHistoryRSS are its RSS once restarted on the running
	// jobs and their pods, with the finished jobs and after they were
	// deleted: the cost of the history alone.
	historyRSS, noHistoryRSS int64
	deleted                  int
	start                    time.Duration
	firstPod                 time.Duration
	allPods                  time.Duration
	pods                     int
	idleCores                float64
}

// controllerSettledRSS is the running controller's RSS once it settled.
func (b *bench) controllerSettledRSS() (int64, error) {
	pid, err := b.stack.Pid("training-controller-manager")
	if err != nil {
		return 0, err
	}
	time.Sleep(settle)
	rss, _, err := benchkit.RSS(pid)
	return rss, err
}

// measureController starts the controller on the stored jobs: the running
// ones have no pods yet, so its first creates show when it got to work.
func (b *bench) measureController(ctx context.Context, emptyRSS int64) (*controllerResult, error) {
	r := &controllerResult{emptyRSS: emptyRSS}
	want := b.o.running * benchkit.PodsPerJob()
	benchkit.Logf("starting the controller on %d jobs", b.o.jobs)
	start := time.Now()
	started := make(chan error, 1)
	go func() {
		var err error
		r.start, err = b.timedRestart("--start", "training-controller-manager")
		started <- err
	}()
	// The pods are counted every pollEvery: the first create is known to
	// that precision.
	const pollEvery = 100 * time.Millisecond
	deadline := time.Now().Add(15 * time.Minute)
	for r.pods < want {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d pods after 15 minutes", r.pods, want)
		}
		pods, err := b.kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return nil, err
		}
		if r.pods = len(pods.Items); r.pods > 0 && r.firstPod == 0 {
			r.firstPod = time.Since(start)
		}
		time.Sleep(pollEvery)
	}
	if err := <-started; err != nil {
		return nil, err
	}
	r.allPods = time.Since(start)
	benchkit.Logf("the controller made %d pods in %s", r.pods, r.allPods.Round(time.Millisecond))
	pid, err := b.stack.Pid("training-controller-manager")
	if err != nil {
		return nil, err
	}
	time.Sleep(settle)
	if r.rss, _, err = benchkit.RSS(pid); err != nil {
		return nil, err
	}
	before, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	time.Sleep(b.o.idle)
	after, err := benchkit.CPUSeconds(pid)
	if err != nil {
		return nil, err
	}
	r.idleCores = (after - before) / b.o.idle.Seconds()
	return r, nil
}

// measureHistoryCost restarts the controller on the running jobs, whose
// pods exist by now, first with the finished jobs stored and then after
// they were deleted, and notes its settled RSS each time.
func (b *bench) measureHistoryCost(ctx context.Context, r *controllerResult) error {
	var err error
	if err = b.restart("training-controller-manager"); err != nil {
		return err
	}
	if r.historyRSS, err = b.controllerSettledRSS(); err != nil {
		return err
	}
	finished := max(b.o.jobs-b.o.running, 0)
	benchkit.Logf("deleting the %d finished jobs", finished)
	jobs := b.direct.BatchV1beta1().TensorFlowTrainingJobs(namespace)
	took, _, err := benchkit.Parallel(ctx, finished, 32, func(ctx context.Context, i int) error {
		err := jobs.Delete(ctx, jobName(i), metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	r.deleted = finished
	benchkit.Logf("deleted %d jobs in %s", finished, took.Round(time.Second))
	if err = b.restart("training-controller-manager"); err != nil {
		return err
	}
	r.noHistoryRSS, err = b.controllerSettledRSS()
	return err
}
