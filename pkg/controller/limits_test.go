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
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// allocatedBytes is how many bytes fn allocates on the heap.
func allocatedBytes(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestJobOverLimitIsRefused stores jobs that validation refuses today but
// that an older apiserver accepted, as the probe found them: the controller
// must neither allocate for what they claim nor create anything, and must
// say why.
func TestJobOverLimitIsRefused(t *testing.T) {
	manyTypes := newPyTorchJob("types").withReplicas("master", 1)
	for i := range batch.MaxReplicaTypes {
		manyTypes.withReplicas(v1beta1.ReplicaType(fmt.Sprintf("type-%d", i)), 0)
	}
	cases := []struct {
		name string
		job  v1beta1.TrainingJob
	}{
		{"TensorFlow workers at the int32 limit", newTFJob("tf").withReplicas("worker", math.MaxInt32).obj()},
		{"TensorFlow types whose sum overflows int32", newTFJob("tf").withReplicas("worker", math.MaxInt32).withReplicas("ps", math.MaxInt32).obj()},
		{"PyTorch 32000 replicas", newPyTorchJob("pt").withReplicas("master", 1).withReplicas("worker", 31999).obj()},
		{"one over the cap", newPyTorchJob("pt").withReplicas("master", 1).withReplicas("worker", batch.MaxTotalReplicas).obj()},
		{"too many replica types", manyTypes.obj()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.job)
			var err error
			allocated := allocatedBytes(func() { _, err = f.sync(tc.job) })
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			// A reconcile of a small job allocates some hundred KiB; building
			// anything per claimed replica would be far more.
			if allocated > 8<<20 {
				t.Errorf("the reconcile allocated %d bytes for a job it refuses", allocated)
			}
			for _, a := range f.kubeClient.Actions() {
				t.Errorf("unexpected %s of %s: nothing is created or deleted for the job", a.GetVerb(), a.GetResource().Resource)
			}
			st := f.status(tc.job)
			assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonTooManyReplicas)
			assertPhase(t, st, v1beta1.JobPending)
			if len(st.Tasks) != 0 {
				t.Errorf("status lists %d tasks for a refused job", len(st.Tasks))
			}
			if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonTooManyReplicas) {
				t.Errorf("no %s event", ReasonTooManyReplicas)
			}

			// Looking again changes nothing and says nothing new.
			f.observe()
			f.mustSync(tc.job)
			if n := f.statusUpdates(); n != 0 {
				t.Errorf("%d status writes on the second look, want none", n)
			}
			if events := f.events(); len(events) != 0 {
				t.Errorf("events on the second look: %v", events)
			}
		})
	}
}

// TestJobBroughtWithinLimitRuns lowers the replicas of a refused job: the
// controller then creates its pods and clears the condition.
func TestJobBroughtWithinLimitRuns(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", math.MaxInt32).obj()
	f := newFixture(t, job)
	f.step(job)
	assertCondition(t, f.status(job), v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonTooManyReplicas)

	fixed := f.job(job)
	fixed.CommonSpec().ReplicaSpecs[0].Replicas = ptr.To[int32](2)
	f.updateJob(fixed)
	f.mustSync(fixed)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-worker-0", "j-worker-1"}) {
		t.Fatalf("created %v, want both workers", got)
	}
	assertCondition(t, f.status(job), v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonReplicasWithinLimit)
}

// failStatusWrites makes status writes of PyTorch jobs fail with err while
// the status lists any replica, as a status too large to store would; a
// status without replica entries (the report of the failure) is stored.
func failStatusWrites(f *fixture, err error) (stop func()) {
	failing := true
	f.jobClient.PrependReactor("patch", "pytorchtrainingjobs", func(a core.Action) (bool, k8sruntime.Object, error) {
		if !failing || a.GetSubresource() != "status" {
			return false, nil, nil
		}
		var patch struct {
			Status v1beta1.TrainingJobStatus `json:"status"`
		}
		if err := json.Unmarshal(a.(core.PatchAction).GetPatch(), &patch); err != nil {
			return true, nil, err
		}
		for _, task := range patch.Status.Tasks {
			if len(task.ReplicaStatus) > 0 {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	return func() { failing = false }
}

func TestStatusTooLargeIsReported(t *testing.T) {
	cases := []struct {
		name string
		err  error
	}{
		{"etcd's refusal passed on", apierrors.NewInternalError(errors.New("etcdserver: request is too large"))},
		{"413 from the apiserver", apierrors.NewRequestEntityTooLargeError("the job would take 1600000 bytes in storage")},
		{"422 for a length", apierrors.NewInvalid(v1beta1.SchemeGroupVersion.WithKind(podbuilder.PyTorchKind).GroupKind(), "j",
			field.ErrorList{field.TooMany(field.NewPath("status", "tasks").Index(0).Child("replicaStatus"), 2000, 1000)})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A job with a status: it is written before the pods are made.
			job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).
				withStatus(v1beta1.TrainingJobStatus{Phase: v1beta1.JobPending}).obj()
			f := newFixture(t, job)
			stop := failStatusWrites(f, tc.err)

			if _, err := f.sync(job); err == nil || !isTooLarge(err) {
				t.Fatalf("sync: %v, want the status write's error so that the job is retried", err)
			}
			if got := f.createdPodNames(); len(got) != 0 {
				t.Fatalf("created %v though the status was not stored", got)
			}
			if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonStatusTooLarge) {
				t.Errorf("no %s event", ReasonStatusTooLarge)
			}
			assertCondition(t, f.status(job), v1beta1.ConditionReplicaFailure, metav1.ConditionTrue, ReasonStatusTooLarge)

			// Once the status fits again, the job goes on and says so.
			stop()
			f.observe()
			f.mustSync(job)
			if got := f.createdPodNames(); len(got) != 3 {
				t.Fatalf("created %v once the status fitted, want 3 pods", got)
			}
			st := f.status(job)
			assertCondition(t, st, v1beta1.ConditionReplicaFailure, metav1.ConditionFalse, ReasonStatusStored)
			if len(st.Tasks) != 2 {
				t.Errorf("status lists %d tasks, want 2", len(st.Tasks))
			}
		})
	}
}

// TestStatusTooLargeDropsProgramText: a status refused for its size because
// of what a replica's program wrote (its log tail) is stored without it, and
// the job goes on, rather than being refused on every reconcile.
func TestStatusTooLargeDropsProgramText(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withBackoffLimit(0).obj()
	f := newFixture(t, job)
	f.start(job)
	refused := 0
	logsPath := field.NewPath("status", "attempts").Index(0).Child("failedReplicas").Index(0).Child("logs")
	f.jobClient.PrependReactor("patch", "pytorchtrainingjobs", func(a core.Action) (bool, k8sruntime.Object, error) {
		if a.GetSubresource() != "status" || !strings.Contains(string(a.(core.PatchAction).GetPatch()), `"logs":"fake logs"`) {
			return false, nil, nil
		}
		refused++
		return true, nil, apierrors.NewInvalid(v1beta1.SchemeGroupVersion.WithKind(podbuilder.PyTorchKind).GroupKind(), "j",
			field.ErrorList{field.TooLong(logsPath, "", 4096)})
	})

	f.setPod("j-master-0", failed(3))
	f.mustSync(job)
	if refused == 0 {
		t.Fatal("no status write carried the failed replica's log tail; the test needs one to refuse")
	}
	st := f.status(job)
	assertPhase(t, st, v1beta1.JobFailed)
	if n := len(st.Attempts); n == 0 || len(st.Attempts[n-1].FailedReplicas) != 1 {
		t.Fatalf("attempts %+v, want the failed master in the last", st.Attempts)
	}
	fr := st.Attempts[len(st.Attempts)-1].FailedReplicas[0]
	if fr.Logs != "" || fr.LogError != droppedProgramText || ptr.Deref(fr.ExitCode, -1) != 3 {
		t.Errorf("failed replica %+v, want its exit code 3 kept and its log tail dropped (%q)", fr, droppedProgramText)
	}
	if hasEvent(f.events(), corev1.EventTypeWarning, ReasonStatusTooLarge) {
		t.Errorf("a %s event, though the status fitted without the log tail", ReasonStatusTooLarge)
	}
}

func TestDropProgramText(t *testing.T) {
	st := v1beta1.TrainingJobStatus{
		Attempts: []v1beta1.Attempt{{Number: 1, FailedReplicas: []v1beta1.FailedReplica{
			{Name: "j-worker-0", ExitCode: ptr.To[int32](1), Logs: "Traceback"}, {Name: "j-worker-1", LogError: "timed out"}}}},
		Stall: &v1beta1.StallStatus{Logs: []v1beta1.ReplicaLogTail{{Name: "j-worker-0", Lines: "step=3"}}},
		Tasks: []v1beta1.TaskStatus{{Type: "worker", ReplicaStatus: []v1beta1.ReplicaStatus{{Containers: []v1beta1.ContainerStatus{
			{Name: "pytorch", LastTermination: &v1beta1.ContainerTermination{ExitCode: 1, Reason: "Error", Message: "boom"}}}}}}},
	}
	if !dropProgramText(&st) {
		t.Fatal("dropProgramText found nothing to drop")
	}
	failed := st.Attempts[0].FailedReplicas
	if failed[0].Logs != "" || failed[0].LogError != droppedProgramText || ptr.Deref(failed[0].ExitCode, 0) != 1 {
		t.Errorf("failed replica 0: %+v, want its tail dropped and its exit code kept", failed[0])
	}
	if failed[1].LogError != "timed out" {
		t.Errorf("failed replica 1: %+v, want its read error kept: it had no tail", failed[1])
	}
	if l := st.Stall.Logs[0]; l.Lines != "" || l.Error != droppedProgramText {
		t.Errorf("stall log: %+v, want its lines dropped", l)
	}
	if term := st.Tasks[0].ReplicaStatus[0].Containers[0].LastTermination; term.Message != "" || term.ExitCode != 1 || term.Reason != "Error" {
		t.Errorf("termination %+v, want its message dropped, its exit code and reason kept", term)
	}
	if dropProgramText(&st) {
		t.Error("dropProgramText dropped something a second time")
	}
}

func TestIsTooLarge(t *testing.T) {
	gk := v1beta1.SchemeGroupVersion.WithKind(podbuilder.PyTorchKind).GroupKind()
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"etcd", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), true},
		{"gRPC client", errors.New("rpc error: code = ResourceExhausted desc = trying to send message larger than max (2000000 vs. 1572864)"), true},
		{"413", fmt.Errorf("updating status: %w", apierrors.NewRequestEntityTooLargeError("limit is 3145728")), true},
		{"422 too long", apierrors.NewInvalid(gk, "j", field.ErrorList{field.TooLong(field.NewPath("status"), "", 10)}), true},
		{"422 of another kind", apierrors.NewInvalid(gk, "j", field.ErrorList{field.Invalid(field.NewPath("status", "phase"), "x", "no")}), false},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "pytorchtrainingjobs"}, "j", errors.New("stale")), false},
		{"other", errors.New("connection refused"), false},
	}
	for _, tc := range cases {
		if got := isTooLarge(tc.err); got != tc.want {
			t.Errorf("%s: isTooLarge(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// countingAdapter counts how often the environment of a job is computed.
type countingAdapter struct {
	podbuilder.Adapter
	envCalls int
}

func (a *countingAdapter) Env(t *podbuilder.Topology) (podbuilder.ReplicaEnv, error) {
	a.envCalls++
	return a.Adapter.Env(t)
}

// TestEnvironmentComputedOncePerReconcile guards against building TF_CONFIG's
// cluster, which lists every replica, once per pod.
func TestEnvironmentComputedOncePerReconcile(t *testing.T) {
	job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 50).withReplicas("ps", 2).obj()
	f := newFixture(t, job)
	counting := &countingAdapter{Adapter: f.c.kinds[podbuilder.TensorFlowKind].Adapter}
	f.c.kinds[podbuilder.TensorFlowKind].Adapter = counting
	f.mustSync(job)
	if got := len(f.createdPods()); got != 53 {
		t.Fatalf("created %d pods, want 53", got)
	}
	if counting.envCalls != 1 {
		t.Errorf("the environment was computed %d times for one reconcile, want once", counting.envCalls)
	}
}

// TestEnvRefusesJobOverLimit keeps the adapters, which podbuilder.Preview also
// calls, from building an environment for what an over-limit job claims.
func TestEnvRefusesJobOverLimit(t *testing.T) {
	for _, a := range []podbuilder.Adapter{podbuilder.TensorFlow, podbuilder.PyTorch} {
		var job v1beta1.TrainingJob
		if a.Kind() == podbuilder.TensorFlowKind {
			job = newTFJob("j").withReplicas("worker", math.MaxInt32).obj()
		} else {
			job = newPyTorchJob("j").withReplicas("worker", math.MaxInt32).obj()
		}
		var err error
		allocated := allocatedBytes(func() { _, err = a.Env(podbuilder.NewTopology(a, job, "")) })
		if err == nil || allocated > 1<<20 {
			t.Errorf("%s: Env of a job of 2^31-1 replicas: error %v after allocating %d bytes, want an error at once", a.Kind(), err, allocated)
		}
	}
}

// atCapJobs are a job of each kind with batch.MaxTotalReplicas replicas;
// the TensorFlow one has the most TF_CONFIG, which lists every replica.
func atCapJobs() []v1beta1.TrainingJob {
	return []v1beta1.TrainingJob{
		newTFJob("tf").withReplicas("chief", 1).withReplicas("ps", 1).withReplicas("worker", batch.MaxTotalReplicas-2).obj(),
		newPyTorchJob("pt").withReplicas("master", 1).withReplicas("worker", batch.MaxTotalReplicas-1).obj(),
	}
}

// maxAllocatedAtCap bounds what the first reconcile of a job at the cap,
// which creates all of its pods, allocates, fake clients included. It is
// about twice what it takes (44 MiB for TensorFlow, of which TF_CONFIG, 1000
// pods each naming 1000 replicas, is some 30 MB); building the cluster per
// pod took 163 MiB.
const maxAllocatedAtCap = 96 << 20

// TestReconcileAtCapIsBounded creates every pod of a job at the cap in one
// reconcile and bounds the bytes it allocates.
func TestReconcileAtCapIsBounded(t *testing.T) {
	for _, job := range atCapJobs() {
		t.Run(keyOf(job).Kind, func(t *testing.T) {
			f := newQuietFixture(t, job)
			var err error
			allocated := allocatedBytes(func() { _, err = f.sync(job) })
			if err != nil {
				t.Fatal(err)
			}
			if got := len(f.createdPods()); got != batch.MaxTotalReplicas {
				t.Fatalf("created %d pods, want %d", got, batch.MaxTotalReplicas)
			}
			t.Logf("first reconcile of %d replicas allocated %.1f MiB", batch.MaxTotalReplicas, float64(allocated)/(1<<20))
			if allocated > maxAllocatedAtCap {
				t.Errorf("allocated %d bytes, over the bound of %d", allocated, maxAllocatedAtCap)
			}
		})
	}
}

// BenchmarkReconcileAtCap measures the first reconcile of a job at the
// replica cap (creating its 1000 pods and writing its status) on fake
// clients, per kind; B/op is what one such reconcile allocates.
func BenchmarkReconcileAtCap(b *testing.B) {
	for _, job := range atCapJobs() {
		b.Run(keyOf(job).Kind, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				f := newQuietFixture(b, job)
				b.StartTimer()
				if _, err := f.sync(job); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestLegacyDeadlineDoesNotOverflow runs a job stored before
// activeDeadlineSeconds was bounded, with the largest int64: multiplied
// into a duration it wrapped around and failed the job at once.
func TestLegacyDeadlineDoesNotOverflow(t *testing.T) {
	job := newTFJob("j").withReplicas("worker", 1).withDeadline(math.MaxInt64).obj()
	f := newFixture(t, job)
	requeue := f.step(job)
	if st := f.status(job); st.Phase.IsFinished() {
		t.Fatalf("the job finished at once: phase %s, conditions %+v", st.Phase, st.Conditions)
	}
	if want := time.Duration(batch.MaxActiveDeadlineSeconds) * time.Second; requeue != want {
		t.Errorf("requeued after %v, want the bounded deadline %v", requeue, want)
	}
}
