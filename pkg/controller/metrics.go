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

package controller

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

const metricsSubsystem = "training_controller"

var (
	reconcileDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem:      metricsSubsystem,
		Name:           "reconcile_duration_seconds",
		Help:           "How long reconciling one job took, by kind and result (success or error).",
		Buckets:        metrics.ExponentialBuckets(0.0005, 2, 16),
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "result"})

	podsCreated = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pods_created_total",
		Help:           "Replica pods the controller created, by job kind.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})

	podsDeleted = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "pods_deleted_total",
		Help:           "Replica pods the controller deleted, by job kind.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})

	unqueuedJobs = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem:      metricsSubsystem,
		Name:           "unqueued_jobs_total",
		Help:           "Jobs that name a queue but run unqueued, because the controller runs with --queueing=none, by job kind.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind"})

	heldJobs = metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: metricsSubsystem,
		Name:      "queue_held_jobs_total",
		Help: "Jobs that began to wait for a reason other than their queue's admission, by job kind and the reason of their " +
			"Queued condition (QueueingUnavailable, QueueNameRemoved, QueueNameRequired, PrebuiltWorkloadMismatch).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"kind", "reason"})

	// The finished-job metrics count what jobs ended as: the controller
	// caches no finished job, so their per-job series end with them
	// (jobseries.go). Their labels are bounded by the namespaces.
	jobsFinished = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "finished_total",
		Help:           "Jobs the controller finished, by namespace, kind, result (Succeeded or Failed) and the reason of the result.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "kind", "result", "reason"})

	jobDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           jobSeriesPrefix + "duration_seconds",
		Help:           "How long finished jobs ran, from their start (from their creation if they never started) to their completion, by namespace, kind and result.",
		Buckets:        metrics.ExponentialBuckets(30, 2, 16), // 30 s to 11 days
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "kind", "result"})

	jobQueued = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           jobSeriesPrefix + "queued_seconds",
		Help:           "How long finished jobs waited from their creation to their start, by namespace and kind; jobs that never started are left out.",
		Buckets:        metrics.ExponentialBuckets(1, 2, 18), // 1 s to 36 hours
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "kind"})

	jobsDesc = metrics.NewDesc(metricsSubsystem+"_jobs",
		"Unfinished jobs in the controller's cache, by kind and phase (a job not yet reconciled counts as Pending); finished jobs are not cached.",
		[]string{"kind", "phase"}, nil, metrics.ALPHA, "")

	queueHeldDesc = metrics.NewDesc(metricsSubsystem+"_queue_held_jobs",
		"Unfinished jobs waiting for a reason other than their queue's admission, by kind and the reason of their Queued "+
			"condition (QueueingUnavailable, QueueNameRemoved, QueueNameRequired, PrebuiltWorkloadMismatch).",
		[]string{"kind", "reason"}, nil, metrics.ALPHA, "")

	kueueUsableDesc = metrics.NewDesc(metricsSubsystem+"_kueue_usable",
		"1 when the controller queues jobs with Kueue, 0 when it cannot now; reason says why (Available, NotServed, NotInstalled, "+
			"Forbidden, Syncing, CheckFailed, NotChecked, Disabled).",
		[]string{"reason"}, nil, metrics.ALPHA, "")

	registerOnce sync.Once
)

// RegisterMetrics adds the controller's metrics to the legacy registry that
// the metrics endpoint serves. Unregistered metrics are inert, so tests need
// not call it.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(reconcileDuration, podsCreated, podsDeleted, unqueuedJobs, heldJobs,
			jobsFinished, jobDuration, jobQueued, jobStateSeconds, jobInterruptions, jobLostWork)
	})
}

func observeReconcile(kind string, d time.Duration, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	reconcileDuration.WithLabelValues(kind, result).Observe(d.Seconds())
}

// observeFinished counts a job whose status write just finished it.
func observeFinished(kind string, job v1beta1.TrainingJob) {
	st := job.JobStatus()
	result := string(st.Phase)
	reason := ReasonSucceeded
	if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionFailed); st.Phase == v1beta1.JobFailed && c != nil {
		reason = c.Reason
	}
	ns := job.GetNamespace()
	jobsFinished.WithLabelValues(ns, kind, result, reason).Inc()
	created := job.GetCreationTimestamp().Time
	began := created
	if st.StartTime != nil {
		began = st.StartTime.Time
		jobQueued.WithLabelValues(ns, kind).Observe(nonNegativeSeconds(began.Sub(created)))
	}
	if st.CompletionTime != nil {
		jobDuration.WithLabelValues(ns, kind, result).Observe(nonNegativeSeconds(st.CompletionTime.Sub(began)))
	}
}

// nonNegativeSeconds guards the histograms against clocks that disagree.
func nonNegativeSeconds(d time.Duration) float64 { return max(d.Seconds(), 0) }

// jobsCollector counts the cached jobs by phase whenever it is scraped, so
// the numbers never drift from the cache.
type jobsCollector struct {
	metrics.BaseStableCollector
	c *Controller
}

// JobsCollector returns a collector of the jobs-by-phase gauge; register it
// with legacyregistry.CustomMustRegister.
func (c *Controller) JobsCollector() metrics.StableCollector {
	return &jobsCollector{c: c}
}

// cachedPhases are the phases of the jobs the cache holds: every phase but
// the finished ones (finishedjobs.go).
var cachedPhases = []v1beta1.JobPhase{
	v1beta1.JobPending, v1beta1.JobRunning, v1beta1.JobPaused, v1beta1.JobResuming, v1beta1.JobUnknown,
}

func (j *jobsCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- jobsDesc
	ch <- queueHeldDesc
	ch <- kueueUsableDesc
}

// queueHoldReasons are the reasons of a Queued condition that holds a job
// for something other than its queue's admission.
var queueHoldReasons = []string{v1beta1.ReasonQueueingUnavailable, v1beta1.ReasonQueueNameRemoved,
	v1beta1.ReasonQueueNameRequired, v1beta1.ReasonPrebuiltWorkloadMismatch}

func (j *jobsCollector) CollectWithStability(ch chan<- metrics.Metric) {
	for kind, h := range j.c.kinds {
		jobs, err := h.list()
		if err != nil {
			continue
		}
		counts := map[v1beta1.JobPhase]int{}
		held := map[string]int{}
		for _, job := range jobs {
			st := job.JobStatus()
			phase := st.Phase
			if phase == "" {
				phase = v1beta1.JobPending
			}
			counts[phase]++
			if c := meta.FindStatusCondition(st.Conditions, v1beta1.ConditionQueued); c != nil && c.Status == metav1.ConditionTrue {
				held[c.Reason]++
			}
		}
		for _, p := range cachedPhases {
			ch <- metrics.NewLazyConstMetric(jobsDesc, metrics.GaugeValue, float64(counts[p]), kind, string(p))
		}
		for _, reason := range queueHoldReasons {
			ch <- metrics.NewLazyConstMetric(queueHeldDesc, metrics.GaugeValue, float64(held[reason]), kind, reason)
		}
	}
	_, availability := j.c.queueing.Current()
	usable := 0.0
	if availability.Usable {
		usable = 1
	}
	ch <- metrics.NewLazyConstMetric(kueueUsableDesc, metrics.GaugeValue, usable, availability.Reason)
}

var (
	jobStateSeconds = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "state_seconds_total",
		Help:           "Time jobs spent queued, starting, running or paused, by namespace, queue and state; added when a job leaves the state.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "queue", "state"})

	jobInterruptions = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "interruptions_total",
		Help:           "Stops of running jobs (Pause, Evicted, Resize, RestartJob, Stalled), by namespace, queue and reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "queue", "reason"})

	jobLostWork = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           jobSeriesPrefix + "lost_replica_seconds_total",
		Help:           "Work interruptions lost: for each, the time since the last checkpoint times the replicas that ran, by namespace and queue.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"namespace", "queue"})
)

// observeAccounting adds to the accounting metrics what a stored status
// write added to the job's accounting.
func observeAccounting(job v1beta1.TrainingJob, old, cur *v1beta1.Accounting) {
	if cur == nil {
		return
	}
	if old == nil {
		old = &v1beta1.Accounting{}
	}
	ns, queue := job.GetNamespace(), kueue.QueueName(job)
	for _, state := range v1beta1.AccountingStates {
		if d := *cur.StateSeconds(state) - *old.StateSeconds(state); d > 0 {
			jobStateSeconds.WithLabelValues(ns, queue, string(state)).Add(float64(d))
		}
	}
	added := int(cur.Interruptions - old.Interruptions)
	for i := max(len(cur.Recent)-added, 0); i < len(cur.Recent); i++ {
		jobInterruptions.WithLabelValues(ns, queue, cur.Recent[i].Reason).Inc()
	}
	if d := cur.LostReplicaSeconds - old.LostReplicaSeconds; d > 0 {
		jobLostWork.WithLabelValues(ns, queue).Add(float64(d))
	}
}

// jobSeriesPrefix begins the name of every series about a job.
const jobSeriesPrefix = "tensorstack_trainingjob_"
