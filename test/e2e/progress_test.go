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

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/e2e/framework"
)

// progressWriteInterval is the training-apiserver's default
// --progress-write-interval, which the local stack keeps.
const progressWriteInterval = 5 * time.Second

// tokenClient is a client of the job API that authenticates with a
// service-account token of the test namespace's default account, bound to
// the pod when one is named: real tokens from kube-apiserver's TokenRequest,
// sent through the aggregation layer as a pod would send them.
func tokenClient(t *testing.T, f *framework.Framework, pod *corev1.Pod) clientset.Interface {
	t.Helper()
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if pod != nil {
		request.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}
	}
	token, err := f.Kube.CoreV1().ServiceAccounts(f.Namespace).CreateToken(f.Context(), "default", request, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for the default service account: %v", err)
	}
	config := rest.AnonymousClientConfig(f.Config)
	config.BearerToken = token.Status.Token
	client, err := clientset.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func report(step, total int64, loss string) *v1beta1.ProgressReport {
	return &v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
		Step: &step, TotalSteps: &total, Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: loss}},
	}}
}

func runningPyTorchJob(f *framework.Framework, name string) (framework.JobRef, []corev1.Pod) {
	f.T.Helper()
	ref := f.Create(framework.NewPyTorchJob(name).WithReplicas("master", 1).WithReplicas("worker", 1).Forever("master").Forever("worker"))
	return ref, f.WaitForRunningPods(ref, 2)
}

// TestProgressReportedByTheJobsOwnPods: a token bound to a pod of job A may
// report A's progress without any RBAC grant, and may neither report B's
// nor change A; a token not bound to a pod is refused; a user whom RBAC
// allows may report too.
func TestProgressReportedByTheJobsOwnPods(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "progress-auth")
	a, podsOfA := runningPyTorchJob(f, "job-a")
	b, _ := runningPyTorchJob(f, "job-b")
	ctx := f.Context()
	podA := podsOfA[0]
	asPodOfA := tokenClient(t, f, &podA).BatchV1beta1().PyTorchTrainingJobs(f.Namespace)

	answer, err := asPodOfA.ReportProgress(ctx, a.Name, report(10, 100, "0.5"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod of job A reporting A's progress: %v", err)
	}
	if !answer.Status.Stored {
		t.Errorf("the first report was not stored at once: %+v", answer.Status)
	}
	job := f.WaitForJob(a, "the report in status.progress", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Progress != nil, nil
	})
	p := job.JobStatus().Progress
	if ptr.Deref(p.Step, 0) != 10 || ptr.Deref(p.Percent, 0) != 10 || p.Reporter != podA.Name || len(p.Metrics) != 1 || p.Metrics[0].Value != "0.5" {
		t.Errorf("status.progress = %+v, want step 10, percent 10, loss 0.5, reported by %s", p, podA.Name)
	}

	_, err = asPodOfA.ReportProgress(ctx, b.Name, report(20, 100, "0.4"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not to this job") || !strings.Contains(err.Error(), a.Name) {
		t.Errorf("a pod of job A reporting B's progress: %v, want 403 naming job A as the pod's", err)
	}
	_, err = asPodOfA.Patch(ctx, a.Name, types.MergePatchType, []byte(`{"spec":{"runPolicy":{"backoffLimit":9}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("a pod of job A changing A's spec: %v, want 403", err)
	}
	_, err = asPodOfA.UpdateStatus(ctx, job.(*v1beta1.PyTorchTrainingJob), metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("a pod of job A writing A's status: %v, want 403", err)
	}

	unbound := tokenClient(t, f, nil).BatchV1beta1().PyTorchTrainingJobs(f.Namespace)
	_, err = unbound.ReportProgress(ctx, a.Name, report(30, 100, "0.3"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("a token bound to no pod: %v, want 403", err)
	}

	// The test's own user is a cluster admin: RBAC grants it create on
	// pytorchtrainingjobs/progress.
	if _, err := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace).ReportProgress(ctx, b.Name,
		&v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{Percent: ptr.To[int32](50), Message: "by hand"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("an admin reporting B's progress: %v", err)
	}
	job = f.WaitForJob(b, "the admin's report", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Progress != nil, nil
	})
	if p := job.JobStatus().Progress; p.Reporter == "" || strings.HasPrefix(p.Reporter, "job-") || p.Message != "by hand" {
		t.Errorf("B's progress %+v, want the admin's user name as the reporter", p)
	}

	// Bad reports are refused with the field that is wrong.
	_, err = asPodOfA.ReportProgress(ctx, a.Name, report(200, 100, "NaN"), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "step") || !strings.Contains(err.Error(), "metrics[0].value") {
		t.Errorf("step beyond totalSteps and a NaN metric: %v, want 422 naming step and metrics[0].value", err)
	}
}

// TestProgressAfterTheJobFinished: a report for a finished job is refused
// with 409, whoever sends it.
func TestProgressAfterTheJobFinished(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "progress-finished")
	ref := f.Create(framework.NewPyTorchJob("done").WithReplicas("master", 1).ExitCode(0).RunFor("1s"))
	f.WaitForPhase(ref, v1beta1.JobSucceeded)
	pods := f.Pods(ref)
	if len(pods) != 1 {
		t.Fatalf("%d pods of the finished job, want its master's", len(pods))
	}
	_, err := tokenClient(t, f, &pods[0]).BatchV1beta1().PyTorchTrainingJobs(f.Namespace).ReportProgress(f.Context(), ref.Name, report(1, 1, "0.1"), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Succeeded") {
		t.Errorf("its own pod reporting a succeeded job: %v, want 409 saying it Succeeded", err)
	}
}

// TestProgressBurstIsCoalesced: a pod reporting every 100 ms costs one etcd
// write per write interval, and the write holds the latest report. The
// writes are counted as the job's watch events, one per write, that
// changed status.progress.
func TestProgressBurstIsCoalesced(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "progress-burst")
	ref, pods := runningPyTorchJob(f, "burst")
	ctx := f.Context()
	jobs := f.Training.BatchV1beta1().PyTorchTrainingJobs(f.Namespace)
	current, err := jobs.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := jobs.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + ref.Name, ResourceVersion: current.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	writes := make(chan *v1beta1.ProgressStatus, 100)
	go func() {
		defer close(writes)
		var last *metav1.MicroTime
		for event := range w.ResultChan() {
			job, ok := event.Object.(*v1beta1.PyTorchTrainingJob)
			if event.Type != watch.Modified || !ok || job.Status.Progress == nil {
				continue
			}
			if at := job.Status.Progress.ReportTime; last == nil || !at.Equal(last) {
				last = at
				writes <- job.Status.Progress
			}
		}
	}()

	const reports = 30
	client := tokenClient(t, f, &pods[0]).BatchV1beta1().PyTorchTrainingJobs(f.Namespace)
	start := time.Now()
	stored, replaced := 0, int64(0)
	for i := int64(1); i <= reports; i++ {
		answer, err := client.ReportProgress(ctx, ref.Name, report(i, 100, fmt.Sprintf("%d", 100-i)), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		switch {
		case answer.Status.Stored:
			stored++
		case answer.Status.StoreTime == nil:
			t.Errorf("report %d held back without a store time: %+v", i, answer.Status)
		case answer.Status.Replaced:
			replaced++
		}
		time.Sleep(100 * time.Millisecond)
	}
	burst := time.Since(start)

	// The last held report is written at the end of its interval.
	var got []*v1beta1.ProgressStatus
	deadline := time.After(2*progressWriteInterval + 10*time.Second)
	for len(got) == 0 || ptr.Deref(got[len(got)-1].Step, 0) != reports {
		select {
		case p, ok := <-writes:
			if !ok {
				t.Fatalf("the watch ended after %d writes", len(got))
			}
			got = append(got, p)
		case <-deadline:
			t.Fatalf("the last report (step %d) was not stored; writes: %d", reports, len(got))
		}
	}
	// One write at once, then at most one per interval the burst spanned.
	most := 1 + int(burst/progressWriteInterval) + 1
	t.Logf("%d reports in %s: %d progress writes, %d stored at once", reports, burst.Round(time.Millisecond), len(got), stored)
	if len(got) < 2 || len(got) > most {
		t.Errorf("%d reports in %s led to %d writes, want between 2 and %d", reports, burst, len(got), most)
	}
	last := got[len(got)-1]
	if want := int64(reports - len(got)); last.CoalescedReports != want || replaced != want || last.Metrics[0].Value != "70" {
		t.Errorf("last write: coalescedReports %d, answers saying replaced %d, loss %s; want %d reports never stored and the last report's loss 70",
			last.CoalescedReports, replaced, last.Metrics[0].Value, want)
	}
	// Nothing more is written for reports that stopped.
	select {
	case p := <-writes:
		t.Errorf("a write after the last report: %+v", p)
	case <-time.After(progressWriteInterval + time.Second):
	}
}

// TestCheckpointReportedByTheJobsOwnPods: a pod of job A reports A's
// checkpoints with its own token, which become A's latest checkpoint and
// the running pods' resume point; a pod of A reporting B's is refused with
// 403, a step below the latest from a pod older than it with 422, and a
// path outside the checkpoint volume with 422 naming the field.
func TestCheckpointReportedByTheJobsOwnPods(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "checkpoint-auth")
	newJob := func(name string) (framework.JobRef, []corev1.Pod) {
		ref := f.Create(framework.NewPyTorchJob(name).WithReplicas("master", 1).WithReplicas("worker", 1).
			Forever("master").Forever("worker").Checkpoints("/ckpt"))
		return ref, f.WaitForRunningPods(ref, 2)
	}
	a, podsOfA := newJob("job-a")
	b, _ := newJob("job-b")
	ctx := f.Context()
	podA := podsOfA[0]
	env := map[string]string{}
	for _, e := range podA.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	if env[v1beta1.EnvCheckpointDir] != "/ckpt" || env[v1beta1.EnvCheckpointRequestFile] == "" {
		t.Errorf("pod %s's environment %v lacks the checkpoint contract", podA.Name, env)
	}
	asPodOfA := tokenClient(t, f, &podA).BatchV1beta1().PyTorchTrainingJobs(f.Namespace)
	at := func(path string, step int64) *v1beta1.CheckpointReport {
		return &v1beta1.CheckpointReport{CheckpointValues: v1beta1.CheckpointValues{Path: path, Step: &step}}
	}
	answer, err := asPodOfA.ReportCheckpoint(ctx, a.Name, at("step-10.pt", 10), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a pod of job A reporting A's checkpoint: %v", err)
	}
	if answer.Path != "/ckpt/step-10.pt" {
		t.Errorf("answer path %q, want it absolute", answer.Path)
	}
	job := f.MustGetJob(a)
	if c := job.JobStatus().Checkpoint; c == nil || c.Latest == nil || c.Latest.Reporter != podA.Name {
		t.Errorf("status.checkpoint %+v, want the report by %s", c, podA.Name)
	}
	// The controller puts the new resume point on A's running pods.
	f.WaitForPods(a, "the resume point on every pod", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		for _, p := range pods {
			if p.Annotations[v1beta1.AnnotationResumeFrom] != "/ckpt/step-10.pt" || p.Annotations[v1beta1.AnnotationResumeStep] != "10" {
				return false, nil
			}
		}
		return len(pods) == 2, nil
	})

	_, err = asPodOfA.ReportCheckpoint(ctx, b.Name, at("step-10.pt", 10), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "checkpoint") || !strings.Contains(err.Error(), a.Name) {
		t.Errorf("a pod of job A reporting B's checkpoint: %v, want 403 naming job A as the pod's", err)
	}
	_, err = asPodOfA.ReportCheckpoint(ctx, a.Name, at("step-5.pt", 5), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "step") {
		t.Errorf("a step going back from a pod older than the latest checkpoint: %v, want 422 naming step", err)
	}
	_, err = asPodOfA.ReportCheckpoint(ctx, a.Name, at("/data/step-20.pt", 20), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "path") || !strings.Contains(err.Error(), "/ckpt") {
		t.Errorf("a path outside the checkpoint volume: %v, want 422 naming path and the directory", err)
	}
}
