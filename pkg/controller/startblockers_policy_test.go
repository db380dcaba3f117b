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
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// mountFailed has the fixture's event cache hold a kubelet FailedMount
// event about the pod, reported at the given time.
func (f *fixture) mountFailed(pod string, at time.Time, message string) {
	f.t.Helper()
	p := f.pod(pod)
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: pod + ".mount"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name,
			UID: p.UID},
		Reason:        ReasonFailedMount,
		Type:          corev1.EventTypeWarning,
		Message:       message,
		LastTimestamp: metav1.NewTime(at),
	}
	if err := f.c.mountFailures.informer.GetIndexer().Add(e); err != nil {
		f.t.Fatal(err)
	}
}

// mounting is a pod on a node whose container the kubelet has not created.
func mounting(p *corev1.Pod) {
	p.Spec.NodeName = "node-1"
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}
}

// A volume the kubelet cannot mount leaves the pod's status at
// ContainerCreating; the job's Running condition takes the reason and the
// message from the kubelet's event while it is recent.
func TestRunningConditionNamesAVolumeThatCannotBeMounted(t *testing.T) {
	const message = `MountVolume.SetUp failed for volume "creds" : secret "wandb" not found`
	for _, tc := range []struct {
		name       string
		age        time.Duration
		wantReason string
	}{
		{"a recent failure", 10 * time.Second, ReasonFailedMount},
		{"a failure long ago, since mounted", mountFailureWindow + time.Second, "Pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := newPyTorchJob("j").withReplicas("master", 1).obj()
			f := newFixture(t, job)
			f.step(job)
			f.setPod("j-master-0", mounting)
			f.clock.Step(time.Minute)
			f.mountFailed("j-master-0", f.clock.Now().Add(-tc.age), message)
			f.step(job)
			st := f.status(job)
			assertCondition(t, st, v1beta1.ConditionRunning, metav1.ConditionFalse, tc.wantReason)
			named := strings.Contains(condition(st, v1beta1.ConditionRunning).Message, `replica master-0: `+message)
			if named != (tc.wantReason == ReasonFailedMount) {
				t.Errorf("Running condition message %q: naming the event's message is %v, want %v",
					condition(st, v1beta1.ConditionRunning).Message, named, !named)
			}
		})
	}
}

// The kubelet's event about one of the job's pods queues the job.
func TestMountFailureQueuesTheJob(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).obj()
	f := newFixture(t, job)
	f.step(job)
	for f.c.queue.Len() > 0 {
		key, _ := f.c.queue.Get()
		f.c.queue.Done(key)
	}
	f.c.enqueueStuckPod(f.pod("j-master-0").Namespace, "j-master-0")
	f.c.enqueueStuckPod(f.pod("j-master-0").Namespace, "not-a-replica")
	if f.c.queue.Len() != 1 {
		t.Fatalf("queue holds %d jobs after the event, want the pod's job", f.c.queue.Len())
	}
	if key, _ := f.c.queue.Get(); key != keyOf(job) {
		t.Errorf("queued %v, want %v", key, keyOf(job))
	}
}

// runPolicy.startTimeoutSeconds fails a job whose replica stays pending,
// with the reason the pod gives or StartTimeoutExceeded, counted from the
// pod's creation; a replica that started is never affected.
func TestStartTimeout(t *testing.T) {
	imagePull := func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: p.Spec.Containers[0].Name,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull",
				Message: `Container image "tf:404" is not present with pull policy of Never`}}}}
	}
	for _, tc := range []struct {
		name        string
		pod         func(*corev1.Pod)
		wantReason  string
		wantMessage string
	}{
		{"an image that is not there", imagePull, "ErrImageNeverPull",
			`replica worker-1 did not start within startTimeoutSeconds (30s): container tensorflow: ErrImageNeverPull: Container image "tf:404" is not present`},
		{"a pod that gives no reason", mounting, ReasonStartTimeoutExceeded,
			"replica worker-1 did not start within startTimeoutSeconds (30s): its pod is still pending"},
		{"a pod that started", running, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := newTFJob("j").withReplicas("worker", 2).obj()
			job.CommonSpec().RunPolicy.StartTimeoutSeconds = ptr.To[int64](30)
			f := newFixture(t, job)
			f.step(job)
			created := f.clock.Now()
			f.setPod("j-worker-0", running)
			f.setPod("j-worker-1", func(p *corev1.Pod) {
				p.CreationTimestamp = metav1.NewTime(created)
				tc.pod(p)
			})
			f.clock.Step(20 * time.Second)
			if requeue := f.step(job); tc.wantReason != "" && requeue != 10*time.Second {
				t.Errorf("requeue after %v, want the 10s left of the timeout", requeue)
			}
			if phase := f.status(job).Phase; phase.IsFinished() {
				t.Fatalf("the job is %s before its timeout", phase)
			}
			f.clock.Step(10 * time.Second)
			f.mustSync(job)
			deleted := f.deletedPodNames()
			f.observe()
			st := f.status(job)
			if tc.wantReason == "" {
				if st.Phase.IsFinished() {
					t.Fatalf("a job whose replicas started is %s", st.Phase)
				}
				return
			}
			if st.Phase != v1beta1.JobFailed {
				t.Fatalf("phase %s after the timeout, want Failed", st.Phase)
			}
			assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, tc.wantReason)
			if msg := condition(st, v1beta1.ConditionFailed).Message; !strings.Contains(msg, tc.wantMessage) {
				t.Errorf("Failed condition message %q, want it to contain %q", msg, tc.wantMessage)
			}
			if !slices.Contains(deleted, "j-worker-1") {
				t.Errorf("deleted %v, want the pending pod deleted (cleanUpPolicy Unfinished)", deleted)
			}
		})
	}
}

// TestStartTimeoutPolicy: a replica whose pod has been pending for
// startTimeoutSeconds fails the job, with why it could not start.
func TestStartTimeoutPolicy(t *testing.T) {
	now := time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)
	pending := func(name string, age time.Duration) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))}}
		p.Status.Phase = corev1.PodPending
		return p
	}
	running := pending("j-worker-0", time.Hour)
	running.Status.Phase = corev1.PodRunning
	noBlocker := func(*corev1.Pod) (string, string) { return "", "" }
	imagePull := func(*corev1.Pod) (string, string) { return "ErrImagePull", "container pytorch: image not found" }
	minute := ptr.To[int64](60)
	cases := map[string]struct {
		limit    *int64
		replicas []startingReplica
		blocker  func(*corev1.Pod) (string, string)
		want     startTimeout
	}{
		"no timeout: nothing": {
			replicas: []startingReplica{{"master-0", pending("j-master-0", time.Hour)}},
		},
		"a pod pending less than the timeout: come back when it is due": {
			limit:    minute,
			replicas: []startingReplica{{"master-0", pending("j-master-0", 20*time.Second)}, {"worker-0", running}},
			want:     startTimeout{comeBack: now.Add(40 * time.Second)},
		},
		"the earliest due pod sets when to come back": {
			limit: minute,
			replicas: []startingReplica{{"master-0", pending("j-master-0", 10*time.Second)},
				{"worker-0", pending("j-worker-0", 50*time.Second)}},
			want: startTimeout{comeBack: now.Add(10 * time.Second)},
		},
		"a pod pending past it, only on its way: StartTimeoutExceeded": {
			limit: minute, blocker: noBlocker,
			replicas: []startingReplica{{"master-0", pending("j-master-0", 61*time.Second)}},
			want: startTimeout{reason: ReasonStartTimeoutExceeded,
				message: "replica master-0 did not start within startTimeoutSeconds (60s): its pod is still pending"},
		},
		"a pod pending past it, blocked: the blocker's reason": {
			limit: minute, blocker: imagePull,
			replicas: []startingReplica{{"master-0", pending("j-master-0", 2*time.Minute)}},
			want: startTimeout{reason: "ErrImagePull",
				message: "replica master-0 did not start within startTimeoutSeconds (60s): container pytorch: image not found"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := decideStartTimeout(tc.limit, tc.replicas, now, tc.blocker)
			if got.reason != tc.want.reason || got.message != tc.want.message || !got.comeBack.Equal(tc.want.comeBack) {
				t.Errorf("decideStartTimeout = %+v, want %+v", got, tc.want)
			}
		})
	}
}
