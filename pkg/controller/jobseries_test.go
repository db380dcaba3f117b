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
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

func TestJobSeries(t *testing.T) {
	started := metav1.NewTime(testStart.Add(90 * time.Second))
	reported := metav1.NewMicroTime(testStart.Add(150 * time.Second))
	finish := metav1.NewTime(testStart.Add(time.Hour))
	running := newTFJob("a").withReplicas("worker", 2).withStatus(v1beta1.TrainingJobStatus{
		Phase: v1beta1.JobRunning,
		Conditions: []metav1.Condition{
			{Type: v1beta1.ConditionRunning, Status: metav1.ConditionTrue},
			{Type: "Queued", Status: metav1.ConditionFalse},
		},
		Aggregate:    v1beta1.Aggregate{Running: 2, Failed: 1},
		BackoffCount: 1,
		Tasks:        []v1beta1.TaskStatus{{Type: "worker", RestartCount: 2}, {Type: "ps", RestartCount: 1}},
		StartTime:    &started,
		Progress: &v1beta1.ProgressStatus{
			ProgressValues: v1beta1.ProgressValues{
				Percent: ptr.To[int32](25), Step: ptr.To[int64](50), TotalSteps: ptr.To[int64](200),
				Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "0.75"}, {Name: "phase", Value: "warmup"}},
			},
			EstimatedFinishTime: &finish,
			ReportTime:          &reported,
		},
	}).obj()
	running.SetLabels(map[string]string{kueue.LabelQueueName: "team-a"})
	// Not reconciled yet: Pending, no conditions, nothing started.
	fresh := newPyTorchJob("b").withReplicas("master", 1).obj()
	// Finished: not cached, so no series.
	done := newPyTorchJob("c").withReplicas("master", 1).withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobSucceeded}).obj()
	f := newFixture(t, running, fresh, done)

	created := float64(testStart.Unix())
	want := fmt.Sprintf(`
# HELP tensorstack_trainingjob_phase [ALPHA] The phase of an unfinished job (status.phase), 1 for the current one; a job not yet reconciled is Pending.
# TYPE tensorstack_trainingjob_phase gauge
tensorstack_trainingjob_phase{kind="PyTorchTrainingJob",name="b",namespace="ns",phase="Paused"} 0
tensorstack_trainingjob_phase{kind="PyTorchTrainingJob",name="b",namespace="ns",phase="Pending"} 1
tensorstack_trainingjob_phase{kind="PyTorchTrainingJob",name="b",namespace="ns",phase="Resuming"} 0
tensorstack_trainingjob_phase{kind="PyTorchTrainingJob",name="b",namespace="ns",phase="Running"} 0
tensorstack_trainingjob_phase{kind="PyTorchTrainingJob",name="b",namespace="ns",phase="Unknown"} 0
tensorstack_trainingjob_phase{kind="TensorFlowTrainingJob",name="a",namespace="ns",phase="Paused"} 0
tensorstack_trainingjob_phase{kind="TensorFlowTrainingJob",name="a",namespace="ns",phase="Pending"} 0
tensorstack_trainingjob_phase{kind="TensorFlowTrainingJob",name="a",namespace="ns",phase="Resuming"} 0
tensorstack_trainingjob_phase{kind="TensorFlowTrainingJob",name="a",namespace="ns",phase="Running"} 1
tensorstack_trainingjob_phase{kind="TensorFlowTrainingJob",name="a",namespace="ns",phase="Unknown"} 0
# HELP tensorstack_trainingjob_condition [ALPHA] The job's conditions by type, 1 for the status each has.
# TYPE tensorstack_trainingjob_condition gauge
tensorstack_trainingjob_condition{kind="TensorFlowTrainingJob",name="a",namespace="ns",status="False",type="Queued"} 1
tensorstack_trainingjob_condition{kind="TensorFlowTrainingJob",name="a",namespace="ns",status="False",type="Running"} 0
tensorstack_trainingjob_condition{kind="TensorFlowTrainingJob",name="a",namespace="ns",status="True",type="Queued"} 0
tensorstack_trainingjob_condition{kind="TensorFlowTrainingJob",name="a",namespace="ns",status="True",type="Running"} 1
tensorstack_trainingjob_condition{kind="TensorFlowTrainingJob",name="a",namespace="ns",status="Unknown",type="Queued"} 0
tensorstack_trainingjob_condition{kind="TensorFlowTrainingJob",name="a",namespace="ns",status="Unknown",type="Running"} 0
# HELP tensorstack_trainingjob_replicas [ALPHA] The job's replicas by state (status.aggregate).
# TYPE tensorstack_trainingjob_replicas gauge
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="creating"} 0
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="deleted"} 0
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="failed"} 0
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="pending"} 0
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="running"} 0
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="succeeded"} 0
tensorstack_trainingjob_replicas{kind="PyTorchTrainingJob",name="b",namespace="ns",state="unknown"} 0
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="creating"} 0
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="deleted"} 0
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="failed"} 1
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="pending"} 0
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="running"} 2
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="succeeded"} 0
tensorstack_trainingjob_replicas{kind="TensorFlowTrainingJob",name="a",namespace="ns",state="unknown"} 0
# HELP tensorstack_trainingjob_pods_replaced [ALPHA] Pod replacements the job has used of its backoff limit (status.backoffCount).
# TYPE tensorstack_trainingjob_pods_replaced gauge
tensorstack_trainingjob_pods_replaced{kind="PyTorchTrainingJob",name="b",namespace="ns"} 0
tensorstack_trainingjob_pods_replaced{kind="TensorFlowTrainingJob",name="a",namespace="ns"} 1
# HELP tensorstack_trainingjob_restarts [ALPHA] Restarts of the job's replicas in place, summed over its replica types (status.tasks[].restartCount).
# TYPE tensorstack_trainingjob_restarts gauge
tensorstack_trainingjob_restarts{kind="PyTorchTrainingJob",name="b",namespace="ns"} 0
tensorstack_trainingjob_restarts{kind="TensorFlowTrainingJob",name="a",namespace="ns"} 3
# HELP tensorstack_trainingjob_info [ALPHA] Always 1: the job's UID and the queue it names (Kueue's queue-name label, else its t9kScheduler queue).
# TYPE tensorstack_trainingjob_info gauge
tensorstack_trainingjob_info{kind="PyTorchTrainingJob",name="b",namespace="ns",queue="",uid="uid-b"} 1
tensorstack_trainingjob_info{kind="TensorFlowTrainingJob",name="a",namespace="ns",queue="team-a",uid="uid-a"} 1
# HELP tensorstack_trainingjob_created_timestamp_seconds [ALPHA] When the job was created, Unix seconds.
# TYPE tensorstack_trainingjob_created_timestamp_seconds gauge
tensorstack_trainingjob_created_timestamp_seconds{kind="PyTorchTrainingJob",name="b",namespace="ns"} %[1]v
tensorstack_trainingjob_created_timestamp_seconds{kind="TensorFlowTrainingJob",name="a",namespace="ns"} %[1]v
# HELP tensorstack_trainingjob_start_timestamp_seconds [ALPHA] When the job's pods first all ran (status.startTime), Unix seconds.
# TYPE tensorstack_trainingjob_start_timestamp_seconds gauge
tensorstack_trainingjob_start_timestamp_seconds{kind="TensorFlowTrainingJob",name="a",namespace="ns"} %[2]v
# HELP tensorstack_trainingjob_progress_percent [ALPHA] The last reported progress, in percent.
# TYPE tensorstack_trainingjob_progress_percent gauge
tensorstack_trainingjob_progress_percent{kind="TensorFlowTrainingJob",name="a",namespace="ns"} 25
# HELP tensorstack_trainingjob_progress_step [ALPHA] The last reported step.
# TYPE tensorstack_trainingjob_progress_step gauge
tensorstack_trainingjob_progress_step{kind="TensorFlowTrainingJob",name="a",namespace="ns"} 50
# HELP tensorstack_trainingjob_progress_total_steps [ALPHA] The steps the job reports it will take.
# TYPE tensorstack_trainingjob_progress_total_steps gauge
tensorstack_trainingjob_progress_total_steps{kind="TensorFlowTrainingJob",name="a",namespace="ns"} 200
# HELP tensorstack_trainingjob_progress_estimated_finish_timestamp_seconds [ALPHA] When the job is estimated to finish at its reported pace, Unix seconds.
# TYPE tensorstack_trainingjob_progress_estimated_finish_timestamp_seconds gauge
tensorstack_trainingjob_progress_estimated_finish_timestamp_seconds{kind="TensorFlowTrainingJob",name="a",namespace="ns"} %[3]v
# HELP tensorstack_trainingjob_progress_report_timestamp_seconds [ALPHA] When the stored progress was reported, Unix seconds.
# TYPE tensorstack_trainingjob_progress_report_timestamp_seconds gauge
tensorstack_trainingjob_progress_report_timestamp_seconds{kind="TensorFlowTrainingJob",name="a",namespace="ns"} %[4]v
# HELP tensorstack_trainingjob_progress_metric [ALPHA] The figures the job reports (loss, accuracy, ...) by name; values that are not numbers are left out.
# TYPE tensorstack_trainingjob_progress_metric gauge
tensorstack_trainingjob_progress_metric{kind="TensorFlowTrainingJob",metric="loss",name="a",namespace="ns"} 0.75
`, created, float64(started.Unix()), float64(finish.Unix()), float64(reported.Unix()))
	// Every family is compared, the epoch ones too: the job reported no
	// epoch, so it must have no epoch series.
	var names []string
	for _, n := range []string{"phase", "condition", "replicas", "pods_replaced", "restarts", "info",
		"created_timestamp_seconds", "start_timestamp_seconds", "progress_percent", "progress_step",
		"progress_total_steps", "progress_epoch", "progress_total_epochs",
		"progress_estimated_finish_timestamp_seconds", "progress_report_timestamp_seconds", "progress_metric"} {
		names = append(names, jobSeriesPrefix+n)
	}
	if err := testutil.CustomCollectAndCompare(f.c.JobSeriesCollector(), strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
}

// TestFinishedJobsAreCounted drives one job to success and one to failure
// and reads the finished-job metrics.
func TestFinishedJobsAreCounted(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	registry.MustRegister(jobsFinished, jobDuration, jobQueued)
	// The metrics are the package's, and other tests finish jobs in the
	// same namespace: what counts is how much they grow here.
	const ns, kind = "ns", "TensorFlowTrainingJob"
	counter := func(result, reason string) float64 {
		v, err := testutil.GetCounterMetricValue(jobsFinished.WithLabelValues(ns, kind, result, reason))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	succeededBefore, failedBefore := counter("Succeeded", "Succeeded"), counter("Failed", ReasonReplicaFailed)
	ranBefore, ranSumBefore := histogramOf(t, jobDuration.WithLabelValues(ns, kind, "Succeeded"))
	queuedBefore, _ := histogramOf(t, jobQueued.WithLabelValues(ns, kind))

	ok := newTFJob("ok").withReplicas("worker", 1).obj()
	bad := newTFJob("bad").withReplicas("worker", 1).obj() // restart policy Never: fails at once
	f := newFixture(t, ok, bad)
	f.start(ok)
	f.setPod("ok-worker-0", succeeded)
	f.mustSync(ok)
	f.start(bad)
	f.setPod("bad-worker-0", failed(3))
	f.step(bad)
	f.mustSync(bad) // a finished job reconciled again is not counted again
	assertPhase(t, f.status(ok), v1beta1.JobSucceeded)
	assertPhase(t, f.status(bad), v1beta1.JobFailed)

	if got := counter("Succeeded", "Succeeded") - succeededBefore; got != 1 {
		t.Errorf("finished_total Succeeded grew by %v, want 1", got)
	}
	if got := counter("Failed", ReasonReplicaFailed) - failedBefore; got != 1 {
		t.Errorf("finished_total Failed/%s grew by %v, want 1", ReasonReplicaFailed, got)
	}
	st := f.status(ok)
	wantRan := st.CompletionTime.Sub(st.StartTime.Time).Seconds()
	if n, sum := histogramOf(t, jobDuration.WithLabelValues(ns, kind, "Succeeded")); n-ranBefore != 1 || sum-ranSumBefore != wantRan {
		t.Errorf("duration of the succeeded job: %d observations, sum %v; want 1, %v", n-ranBefore, sum-ranSumBefore, wantRan)
	}
	if n, _ := histogramOf(t, jobQueued.WithLabelValues(ns, kind)); n-queuedBefore != 2 {
		t.Errorf("queued: %d observations, want 2", n-queuedBefore)
	}
}

func histogramOf(t *testing.T, o metrics.ObserverMetric) (uint64, float64) {
	t.Helper()
	h, err := testutil.GetHistogramMetricValue(o)
	if err != nil {
		t.Fatal(err)
	}
	n, err := testutil.GetHistogramMetricCount(o)
	if err != nil {
		t.Fatal(err)
	}
	return n, h
}

// TestFinishedJobMetricsStayBounded finishes 100,000 jobs and checks that
// the finished-job metrics hold as many series, and about as much memory,
// as after the first thousand: nothing in them grows with the history.
func TestFinishedJobMetricsStayBounded(t *testing.T) {
	registry := metrics.NewKubeRegistry()
	registry.MustRegister(jobsFinished, jobDuration, jobQueued)
	const namespaces = 20
	finish := func(from, to int) {
		for i := from; i < to; i++ {
			job := newTFJob(fmt.Sprintf("job-%d", i)).obj()
			job.SetNamespace(fmt.Sprintf("bounded-%d", i%namespaces))
			start := metav1.NewTime(testStart.Add(time.Duration(i%600) * time.Second))
			end := metav1.NewTime(start.Add(time.Duration(i%7200) * time.Second))
			st := job.JobStatus()
			st.Phase, st.StartTime, st.CompletionTime = v1beta1.JobSucceeded, &start, &end
			if i%3 == 0 {
				st.Phase = v1beta1.JobFailed
				st.Conditions = []metav1.Condition{{Type: v1beta1.ConditionFailed, Status: metav1.ConditionTrue, Reason: ReasonDeadlineExceeded}}
			}
			observeFinished("TensorFlowTrainingJob", job)
		}
	}
	series := func() int {
		families, err := registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, f := range families {
			if strings.HasPrefix(f.GetName(), jobSeriesPrefix+"finished") ||
				strings.HasPrefix(f.GetName(), jobSeriesPrefix+"duration") ||
				strings.HasPrefix(f.GetName(), jobSeriesPrefix+"queued") {
				n += len(f.GetMetric())
			}
		}
		return n
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	finish(0, 1000)
	seriesAfter1k, heapAfter1k := series(), heap()
	finish(1000, 100_000)
	seriesAfter100k, heapAfter100k := series(), heap()
	t.Logf("finished-job series: %d after 1,000 jobs, %d after 100,000; heap %d KiB, then %d KiB",
		seriesAfter1k, seriesAfter100k, heapAfter1k/1024, heapAfter100k/1024)
	if seriesAfter100k != seriesAfter1k {
		t.Errorf("series grew from %d to %d with the history", seriesAfter1k, seriesAfter100k)
	}
	// Per job kept, even 16 bytes would be 1.5 MiB: a limit of 1 MiB
	// catches any per-job memory and leaves room for the runtime's noise.
	if grew := int64(heapAfter100k) - int64(heapAfter1k); grew > 1<<20 {
		t.Errorf("heap grew by %d KiB over 99,000 finished jobs", grew/1024)
	}
}

// BenchmarkScrape measures a scrape of the controller's metrics with 500
// running jobs in its cache, each with four conditions, full progress and
// three reported metrics, through the handler /metrics serves (gathering
// and encoding in the text format). The floor is the same scrape without the per-job
// series; the difference is what the series cost per scrape.
func BenchmarkScrape(b *testing.B) {
	reported := metav1.NewMicroTime(testStart.Add(time.Minute))
	finish := metav1.NewTime(testStart.Add(time.Hour))
	jobs := benchJobsList()
	objs := make([]k8sruntime.Object, len(jobs))
	for i, job := range jobs {
		*job.JobStatus() = v1beta1.TrainingJobStatus{
			Phase: v1beta1.JobRunning,
			Conditions: []metav1.Condition{
				{Type: "Initialized", Status: metav1.ConditionTrue}, {Type: v1beta1.ConditionRunning, Status: metav1.ConditionTrue},
				{Type: "Queued", Status: metav1.ConditionFalse}, {Type: "PodsReady", Status: metav1.ConditionTrue},
			},
			Aggregate: v1beta1.Aggregate{Running: benchReplicas},
			StartTime: &metav1.Time{Time: testStart},
			Progress: &v1beta1.ProgressStatus{
				ProgressValues: v1beta1.ProgressValues{
					Percent: ptr.To[int32](40), Step: ptr.To[int64](400), TotalSteps: ptr.To[int64](1000),
					Epoch: ptr.To[int32](2), TotalEpochs: ptr.To[int32](5),
					Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: "0.4213"}, {Name: "accuracy", Value: "0.87"}, {Name: "samples/s", Value: "1520"}},
				},
				EstimatedFinishTime: &finish, ReportTime: &reported,
			},
		}
		objs[i] = job
	}
	f := newQuietFixture(b, objs...)
	for _, withJobs := range []bool{false, true} {
		name := "floor: the controller's own metrics"
		registry := metrics.NewKubeRegistry()
		registry.MustRegister(reconcileDuration, podsCreated, podsDeleted, unqueuedJobs, jobsFinished, jobDuration, jobQueued)
		registry.CustomMustRegister(f.c.JobsCollector())
		if withJobs {
			name = "with the per-job series of 500 running jobs"
			registry.CustomMustRegister(f.c.JobSeriesCollector())
		}
		handler := metrics.HandlerFor(registry, metrics.HandlerOpts{})
		b.Run(name, func(b *testing.B) {
			var bytes, series int
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				req.Header.Set("Accept", "text/plain;version=0.0.4")
				rec := httptest.NewRecorder()
				handler.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d", rec.Code)
				}
				bytes = rec.Body.Len()
				series = 0
				for _, line := range strings.Split(rec.Body.String(), "\n") {
					if line != "" && !strings.HasPrefix(line, "#") {
						series++
					}
				}
			}
			b.ReportMetric(float64(series), "series")
			b.ReportMetric(float64(bytes), "bytes/scrape")
		})
	}
}
