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
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(testNow.Add(-d)) }

// runningPyTorchJob has a restarted worker, a failed one and one not yet created.
func runningPyTorchJob() *v1beta1.PyTorchTrainingJob {
	job := ptJob("resnet", replicas("master", 1, "pytorch"), replicas("worker", 3, "pytorch"))
	job.Spec.RunPolicy.BackoffLimit = ptr.To[int32](5)
	job.Status = v1beta1.TrainingJobStatus{
		Phase:        v1beta1.JobRunning,
		BackoffCount: 2,
		StartTime:    ptr.To(ago(90 * time.Minute)),
		Conditions: []metav1.Condition{
			{Type: "Initialized", Status: metav1.ConditionTrue, Reason: "PodsCreated", Message: "All pods were created.", LastTransitionTime: ago(2 * time.Hour)},
			{Type: "Running", Status: metav1.ConditionTrue, Reason: "PodsRunning", LastTransitionTime: ago(80 * time.Minute)},
			{Type: "ReplicaFailure", Status: metav1.ConditionFalse, Reason: "Recovered", Message: "worker-1 was replaced.", LastTransitionTime: ago(5 * time.Minute)},
		},
		Tasks: []v1beta1.TaskStatus{
			{Type: "master", ReplicaStatus: []v1beta1.ReplicaStatus{
				{Name: "resnet-master-0", UID: "0a1b2c3d-4e5f-6789-abcd-ef0123456789", Phase: v1beta1.ReplicaRunning,
					Containers: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Running"}}},
			}},
			{Type: "worker", RestartCount: 2, ReplicaStatus: []v1beta1.ReplicaStatus{
				{Name: "resnet-worker-0", UID: "11111111-2222", Phase: v1beta1.ReplicaSucceeded,
					Containers: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Terminated"}}},
				{Name: "resnet-worker-1", UID: "22222222-3333", Phase: v1beta1.ReplicaDeleted,
					Reason: "BackOff", RestartAt: ptr.To(ago(-15 * time.Second)), RestartCount: 1,
					Containers: []v1beta1.ContainerStatus{
						{Name: "pytorch", State: "Terminated", ExitCode: 137, Reason: "OOMKilled", LastTermination: &v1beta1.ContainerTermination{
							ExitCode: 137, Reason: "OOMKilled", Message: "killed at step 1200"}},
						{Name: "sidecar", State: "Terminated", ExitCode: 1}}},
				{Name: "resnet-worker-2", Phase: v1beta1.ReplicaPending,
					Containers: []v1beta1.ContainerStatus{{Name: "pytorch", State: "Waiting", Reason: "ImagePullBackOff"}}},
			}},
		},
	}
	return job
}

func jobEvent(name, kind string, uid string, reason, message string, last time.Duration, count int32) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%s.%s.%d", name, uid, kind, last), Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "default", UID: types.UID(uid)},
		Type:           corev1.EventTypeNormal, Reason: reason, Message: message,
		Source:         corev1.EventSource{Component: "training-controller"},
		FirstTimestamp: ago(last + time.Duration(count-1)*time.Minute), LastTimestamp: ago(last), Count: count,
	}
}

func TestStatusOfAJob(t *testing.T) {
	objects := []runtime.Object{
		runningPyTorchJob(),
		jobEvent("resnet", "PyTorchTrainingJob", "uid-resnet", "RestartedReplica", "Replaced pod resnet-worker-1", 5*time.Minute, 2),
		jobEvent("resnet", "PyTorchTrainingJob", "uid-resnet", "CreatedPod", "Created pod resnet-master-0", 2*time.Hour, 1),
		jobEvent("resnet", "PyTorchTrainingJob", "uid-old", "CreatedPod", "an event of a deleted job of that name", time.Hour, 1),
		jobEvent("resnet", "TensorFlowTrainingJob", "uid-resnet", "CreatedPod", "an event of another kind", time.Hour, 1),
	}
	f := newFixture(t, objects...)
	out := f.mustRun("status", "resnet")
	want := `Job:         pj/resnet
Kind:        PyTorchTrainingJob
Namespace:   default
Phase:       Running
Mode:        Immediate
Age:         120m
Duration:    90m
Backoff:     2/5
Conditions:
  TYPE             STATUS   REASON        AGE    MESSAGE
  Initialized      True     PodsCreated   120m   All pods were created.
  Running          True     PodsRunning   80m    -
  ReplicaFailure   False    Recovered     5m     worker-1 was replaced.
Replicas:
  REPLICA    POD               PHASE                                EXIT CODE               POD UID    RESTARTS   LAST FAILURE
  master-0   resnet-master-0   Running                              -                       0a1b2c3d   0          -
  worker-0   resnet-worker-0   Succeeded                            0                       11111111   2          -
  worker-1   resnet-worker-1   Deleted (BackOff, restarts in 15s)   pytorch:137,sidecar:1   22222222   2          pytorch: OOMKilled (exit 137): killed at step 1200
  worker-2   resnet-worker-2   Pending (ImagePullBackOff)           -                       -          2          -
Events:
  TYPE     REASON             AGE               FROM                  MESSAGE
  Normal   CreatedPod         120m              training-controller   Created pod resnet-master-0
  Normal   RestartedReplica   5m (x2 over 6m)   training-controller   Replaced pod resnet-worker-1
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	for _, action := range f.kube.Actions() {
		if list, ok := action.(clienttesting.ListActionImpl); ok && list.Resource.Resource == "events" {
			if got, want := list.ListOptions.FieldSelector, "involvedObject.kind=PyTorchTrainingJob,involvedObject.name=resnet"; got != want {
				t.Errorf("events listed with field selector %q; want %q", got, want)
			}
		}
	}
}

// TestStatusOfAJobThatRestartsInPlace: the backoff line says so, with the
// attempt the pods run.
func TestStatusOfAJobThatRestartsInPlace(t *testing.T) {
	job := runningPyTorchJob()
	job.Spec.RunPolicy.RestartStrategy = v1beta1.RestartStrategyInPlace
	job.Status.AttemptCount = 3
	f := newFixture(t, job)
	out := f.mustRun("status", "resnet")
	if !strings.Contains(out, "Backoff:     2/5, restarts in place (attempt 3)\n") {
		t.Errorf("no in-place backoff line:\n%s", out)
	}

	// On nodes that cannot, the job says it recreates its pods.
	job.Status.Conditions = append(job.Status.Conditions, metav1.Condition{Type: v1beta1.ConditionRestartedInPlace,
		Status: metav1.ConditionFalse, Reason: v1beta1.ReasonNoNodeRestartsInPlace})
	out = newFixture(t, job).mustRun("status", "resnet")
	if !strings.Contains(out, "Backoff:     2/5, recreates its pods: no node they may run on restarts them in place\n") {
		t.Errorf("no backoff line saying the pods are recreated:\n%s", out)
	}
}

func TestStatusOfANewPausedJob(t *testing.T) {
	job := tfJob("mnist", replicas("chief", 1, "tensorflow"), replicas("worker", 2, "tensorflow"))
	job.Namespace = "team"
	job.Spec.RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
	job.Status.Tensorboard = &v1beta1.DependentStatus{Dependent: &corev1.ObjectReference{Name: "mnist-tensorboard"}, Reason: "Creating"}
	f := newFixture(t, job)
	out := f.mustRun("status", "tj/mnist", "-n", "team")
	want := `Job:           tj/mnist
Kind:          TensorFlowTrainingJob
Namespace:     team
Phase:         Pending
Mode:          Pause
Age:           120m
Duration:      -
Backoff:       0/3
TensorBoard:   mnist-tensorboard not ready (Creating)
Conditions:
  <none>
Replicas:
  REPLICA    POD   PHASE   EXIT CODE   POD UID   RESTARTS   LAST FAILURE
  chief-0    -     -       -           -         0          -
  worker-0   -     -       -           -         0          -
  worker-1   -     -       -           -         0          -
Events:
  <none>
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
}

func TestStatusShowsTheLatestEvents(t *testing.T) {
	objects := []runtime.Object{runningPyTorchJob()}
	for i := range 15 {
		objects = append(objects, jobEvent("resnet", "PyTorchTrainingJob", "uid-resnet", fmt.Sprintf("Reason%02d", i), "m", time.Duration(30-i)*time.Minute, 1))
	}
	f := newFixture(t, objects...)
	out := f.mustRun("status", "pj/resnet")
	_, events, _ := strings.Cut(out, "Events:\n")
	var reasons []string
	for _, line := range strings.Split(strings.TrimSpace(events), "\n")[1:] {
		reasons = append(reasons, strings.Fields(line)[1])
	}
	want := []string{"Reason05", "Reason06", "Reason07", "Reason08", "Reason09", "Reason10", "Reason11", "Reason12", "Reason13", "Reason14"}
	if !cmp.Equal(reasons, want) {
		t.Errorf("events shown %v; want the latest 10, newest last: %v", reasons, want)
	}
}

func TestStatusWatch(t *testing.T) {
	job := runningPyTorchJob()
	job.ResourceVersion = "1"
	f := newFixture(t, job)
	first, second := watch.NewFake(), watch.NewFake()
	watchers := []*watch.FakeWatcher{first, second}
	var watches []clienttesting.WatchActionImpl
	f.training.PrependWatchReactor("pytorchtrainingjobs", func(action clienttesting.Action) (bool, watch.Interface, error) {
		watches = append(watches, action.(clienttesting.WatchActionImpl))
		w := watchers[0]
		watchers = watchers[1:]
		return true, w, nil
	})

	go func() {
		// A change, then the server ends the watch.
		changed := job.DeepCopy()
		changed.ResourceVersion = "2"
		changed.Status.BackoffCount = 3
		first.Modify(changed)
		first.Stop()
		// The next watch starts too late: the job is read again.
		finished := changed.DeepCopy()
		finished.ResourceVersion = "9"
		finished.Status.Phase = v1beta1.JobSucceeded
		_ = f.training.Tracker().Update(v1beta1.SchemeGroupVersion.WithResource("pytorchtrainingjobs"), finished, "default")
		second.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
	}()
	out := f.mustRun("status", "resnet", "--watch")

	var phases, backoffs []string
	for _, line := range strings.Split(out, "\n") {
		if phase, ok := strings.CutPrefix(line, "Phase:"); ok {
			phases = append(phases, strings.TrimSpace(phase))
		}
		if backoff, ok := strings.CutPrefix(line, "Backoff:"); ok {
			backoffs = append(backoffs, strings.TrimSpace(backoff))
		}
	}
	if want := []string{"Running", "Running", "Succeeded"}; !cmp.Equal(phases, want) {
		t.Errorf("phases shown %v; want %v\n%s", phases, want, out)
	}
	if want := []string{"2/5", "3/5", "3/5"}; !cmp.Equal(backoffs, want) {
		t.Errorf("backoffs shown %v; want %v", backoffs, want)
	}
	if len(watches) != 2 {
		t.Fatalf("%d watches; want 2", len(watches))
	}
	for i, wantVersion := range []string{"1", "2"} {
		opts := watches[i].WatchRestrictions
		if opts.ResourceVersion != wantVersion || opts.Fields.String() != "metadata.name=resnet" {
			t.Errorf("watch %d from version %q with fields %q; want version %s of metadata.name=resnet", i, opts.ResourceVersion, opts.Fields, wantVersion)
		}
	}
}

func TestStatusWatchEndsWhenTheJobIsDeleted(t *testing.T) {
	job := runningPyTorchJob()
	f := newFixture(t, job)
	w := watch.NewFake()
	f.training.PrependWatchReactor("pytorchtrainingjobs", func(clienttesting.Action) (bool, watch.Interface, error) { return true, w, nil })
	go w.Delete(job)
	out := f.mustRun("status", "pj/resnet", "-w")
	if !strings.HasSuffix(out, "\npj/resnet was deleted\n") {
		t.Errorf("output ends %q; want it to say the job was deleted", out[max(0, len(out)-60):])
	}
}

func TestStatusOfAFinishedJobDoesNotWatch(t *testing.T) {
	job := runningPyTorchJob()
	job.Status.Phase = v1beta1.JobFailed
	f := newFixture(t, job)
	f.mustRun("status", "pj/resnet", "--watch")
	for _, action := range f.training.Actions() {
		if action.GetVerb() == "watch" {
			t.Errorf("watched a finished job")
		}
	}
}

func TestStatusListsJobs(t *testing.T) {
	running := runningPyTorchJob()
	running.Status.Aggregate = v1beta1.Aggregate{Running: 2, Succeeded: 1, Failed: 1}
	other := tfJob("mnist", replicas("worker", 2, "tensorflow"))
	other.Namespace = "team"
	other.CreationTimestamp = ago(3 * 24 * time.Hour)
	f := newFixture(t, running, other, tfJob("bert", replicas("chief", 1, "tensorflow")), ptJob("bert", replicas("master", 1, "pytorch")))

	out := f.mustRun("status")
	want := `NAME     KIND                    PHASE     READY   RESTARTS   AGE
bert     TensorFlowTrainingJob   Pending   0/1     0          120m
bert     PyTorchTrainingJob      Pending   0/1     0          120m
resnet   PyTorchTrainingJob      Running   3/4     2          120m
`
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}

	out = f.mustRun("status", "-A")
	want = `NAMESPACE   NAME     KIND                    PHASE     READY   RESTARTS   AGE
default     bert     TensorFlowTrainingJob   Pending   0/1     0          120m
default     bert     PyTorchTrainingJob      Pending   0/1     0          120m
default     resnet   PyTorchTrainingJob      Running   3/4     2          120m
team        mnist    TensorFlowTrainingJob   Pending   0/2     0          3d
`
	if out != want {
		t.Errorf("-A output:\n%s\nwant:\n%s", out, want)
	}

	if out := f.mustRun("status", "-n", "empty"); out != "" || f.errOut.String() != "No training jobs found in empty namespace.\n" {
		t.Errorf("empty namespace: stdout %q, stderr %q", out, f.errOut.String())
	}
}

func TestStatusErrors(t *testing.T) {
	f := newFixture(t, runningPyTorchJob())
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"status", "--watch"}, "--watch needs a JOB"},
		{[]string{"status", "resnet", "-A"}, "a JOB is in one namespace: use -n instead of --all-namespaces"},
		{[]string{"status", "tj/resnet"}, `getting tj/resnet in namespace "default": tensorflowtrainingjobs.batch.tensorstack.dev "resnet" not found`},
		{[]string{"status", "jobs/resnet"}, `"jobs" is not a training job kind in "jobs/resnet"`},
	} {
		err := f.run(tc.args...)
		if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v; want %q", tc.args, err, tc.wantErr)
		}
	}
}
