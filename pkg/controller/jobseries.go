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
	"math"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// The per-job series. They are made at scrape time from the jobs the
// controller caches, which are the unfinished ones (finishedjobs.go): a job's
// series go with it when it finishes, and what it ended as is counted by
// the finished-job metrics (observeFinished in metrics.go). Their names are those
// kube-state-metrics produced from the jobs' status before, so dashboards
// and alerts written for them keep working.
//
// A running job has at most
//
//	5 (phase) + 3 per condition + 7 (replicas) + 4 (pods replaced, restarts,
//	info, created) + 1 (started) + 7 (progress) + MaxProgressMetrics
//
// series: 39 with four conditions, full progress and three metrics, 51 at
// the most a job may report.

// jobLabels come first on every per-job series.
var jobLabels = []string{"namespace", "name", "kind"}

func jobDesc(name, help string, extra ...string) *metrics.Desc {
	return metrics.NewDesc(jobSeriesPrefix+name, help,
		append(append([]string(nil), jobLabels...), extra...), nil, metrics.ALPHA, "")
}

var (
	jobPhaseDesc = jobDesc("phase",
		"The phase of an unfinished job (status.phase), 1 for the current one; a job not yet reconciled is Pending.", "phase")
	jobConditionDesc = jobDesc("condition",
		"The job's conditions by type, 1 for the status each has.", "type", "status")
	jobReplicasDesc = jobDesc("replicas",
		"The job's replicas by state (status.aggregate).", "state")
	jobBackoffDesc = jobDesc("pods_replaced",
		"Pod replacements the job has used of its backoff limit (status.backoffCount).")
	jobRestartsDesc = jobDesc("restarts",
		"Restarts of the job's replicas in place, summed over its replica types (status.tasks[].restartCount).")
	jobInfoDesc = jobDesc("info",
		"Always 1: the job's UID and the queue it names (Kueue's queue-name label, else its t9kScheduler queue).", "uid", "queue")
	jobCreatedDesc = jobDesc("created_timestamp_seconds",
		"When the job was created, Unix seconds.")
	jobStartedDesc = jobDesc("start_timestamp_seconds",
		"When the job's pods first all ran (status.startTime), Unix seconds.")
	jobPercentDesc = jobDesc("progress_percent",
		"The last reported progress, in percent.")
	jobStepDesc = jobDesc("progress_step",
		"The last reported step.")
	jobTotalStepsDesc = jobDesc("progress_total_steps",
		"The steps the job reports it will take.")
	jobEpochDesc = jobDesc("progress_epoch",
		"The last reported epoch.")
	jobTotalEpochsDesc = jobDesc("progress_total_epochs",
		"The epochs the job reports it will take.")
	jobFinishDesc = jobDesc("progress_estimated_finish_timestamp_seconds",
		"When the job is estimated to finish at its reported pace, Unix seconds.")
	jobReportDesc = jobDesc("progress_report_timestamp_seconds",
		"When the stored progress was reported, Unix seconds.")
	jobMetricDesc = jobDesc("progress_metric",
		"The figures the job reports (loss, accuracy, ...) by name; values that are not numbers are left out.", "metric")

	jobSeriesDescs = []*metrics.Desc{
		jobPhaseDesc, jobConditionDesc, jobReplicasDesc, jobBackoffDesc, jobRestartsDesc, jobInfoDesc,
		jobCreatedDesc, jobStartedDesc, jobPercentDesc, jobStepDesc, jobTotalStepsDesc, jobEpochDesc,
		jobTotalEpochsDesc, jobFinishDesc, jobReportDesc, jobMetricDesc,
	}
)

// conditionStatuses are the values a condition's status series take, as a
// state set: 1 for the condition's status, 0 for the others.
var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// jobSeriesCollector makes the per-job series of the cached jobs.
type jobSeriesCollector struct {
	metrics.BaseStableCollector
	c *Controller
}

// JobSeriesCollector returns the collector of the per-job series; register
// it with legacyregistry.CustomMustRegister. A standby replica caches no
// job, so only the leader exports them.
func (c *Controller) JobSeriesCollector() metrics.StableCollector {
	return &jobSeriesCollector{c: c}
}

func (j *jobSeriesCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range jobSeriesDescs {
		ch <- d
	}
}

func (j *jobSeriesCollector) CollectWithStability(ch chan<- metrics.Metric) {
	for kind, h := range j.c.kinds {
		jobs, err := h.list()
		if err != nil {
			continue
		}
		for _, job := range jobs {
			collectJob(ch, kind, job)
		}
	}
}

// collectJob sends the series of one job.
func collectJob(ch chan<- metrics.Metric, kind string, job v1beta1.TrainingJob) {
	labels := []string{job.GetNamespace(), job.GetName(), kind}
	gauge := func(d *metrics.Desc, v float64, extra ...string) {
		ch <- metrics.NewLazyConstMetric(d, metrics.GaugeValue, v, append(labels, extra...)...)
	}
	st := job.JobStatus()

	phase := st.Phase
	if phase == "" {
		phase = v1beta1.JobPending
	}
	for _, p := range cachedPhases {
		gauge(jobPhaseDesc, boolValue(p == phase), string(p))
	}
	for _, cond := range st.Conditions {
		for _, s := range conditionStatuses {
			gauge(jobConditionDesc, boolValue(cond.Status == s), cond.Type, string(s))
		}
	}
	a := st.Aggregate
	for _, r := range []struct {
		state string
		n     int32
	}{
		{"creating", a.Creating}, {"pending", a.Pending}, {"running", a.Running}, {"succeeded", a.Succeeded},
		{"failed", a.Failed}, {"unknown", a.Unknown}, {"deleted", a.Deleted},
	} {
		gauge(jobReplicasDesc, float64(r.n), r.state)
	}
	gauge(jobBackoffDesc, float64(st.BackoffCount))
	var restarts int64
	for _, t := range st.Tasks {
		restarts += int64(t.RestartCount)
	}
	gauge(jobRestartsDesc, float64(restarts))
	gauge(jobInfoDesc, 1, string(job.GetUID()), kueue.QueueName(job))
	gauge(jobCreatedDesc, unixSeconds(job.GetCreationTimestamp().Time.UnixNano()))
	if st.StartTime != nil {
		gauge(jobStartedDesc, unixSeconds(st.StartTime.UnixNano()))
	}
	collectProgress(gauge, st.Progress)
}

// collectProgress sends the series of the fields the stored progress has.
func collectProgress(gauge func(d *metrics.Desc, v float64, extra ...string), p *v1beta1.ProgressStatus) {
	if p == nil {
		return
	}
	if p.Percent != nil {
		gauge(jobPercentDesc, float64(*p.Percent))
	}
	if p.Step != nil {
		gauge(jobStepDesc, float64(*p.Step))
	}
	if p.TotalSteps != nil {
		gauge(jobTotalStepsDesc, float64(*p.TotalSteps))
	}
	if p.Epoch != nil {
		gauge(jobEpochDesc, float64(*p.Epoch))
	}
	if p.TotalEpochs != nil {
		gauge(jobTotalEpochsDesc, float64(*p.TotalEpochs))
	}
	if p.EstimatedFinishTime != nil {
		gauge(jobFinishDesc, unixSeconds(p.EstimatedFinishTime.UnixNano()))
	}
	if p.ReportTime != nil {
		gauge(jobReportDesc, unixSeconds(p.ReportTime.UnixNano()))
	}
	// The API stores at most MaxProgressMetrics metrics, with names of a
	// restricted alphabet, so they are bounded as series and safe as label
	// values; the exposition escapes label values anyway.
	for _, m := range p.Metrics {
		v, err := strconv.ParseFloat(m.Value, 64)
		if err != nil || math.IsNaN(v) {
			continue
		}
		gauge(jobMetricDesc, v, m.Name)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// unixSeconds turns Unix nanoseconds into seconds, as Prometheus' own
// timestamps are given.
func unixSeconds(nanos int64) float64 { return float64(nanos) / 1e9 }
