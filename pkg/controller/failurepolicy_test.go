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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func withFailurePolicy(job v1beta1.TrainingJob, rules ...v1beta1.FailurePolicyRule) v1beta1.TrainingJob {
	job.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: rules}
	return job
}

func oomKilled(p *corev1.Pod) {
	failed(137)(p)
	for i := range p.Status.ContainerStatuses {
		p.Status.ContainerStatuses[i].State.Terminated.Reason = "OOMKilled"
	}
}

// TestFailurePolicyActions: the first matching rule decides, before the
// restart policy; each action does what it says.
func TestFailurePolicyActions(t *testing.T) {
	in := func(codes ...int32) *v1beta1.FailurePolicyOnExitCodes {
		return &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: codes}
	}
	cases := []struct {
		name        string
		rules       []v1beta1.FailurePolicyRule
		pod         func(*corev1.Pod)
		wantPhase   v1beta1.JobPhase
		wantReason  string // of the Failed condition
		wantBackoff int32
		wantDeleted []string
	}{{
		name:       "FailJob on an exit code beats OnFailure",
		rules:      []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob, OnExitCodes: in(42)}},
		pod:        failed(42),
		wantPhase:  v1beta1.JobFailed,
		wantReason: ReasonPodFailurePolicy,
		// Clean-up policy Unfinished: the running pods go.
		wantDeleted: []string{"j-chief-0", "j-worker-0"},
	}, {
		name:        "no rule matches: the restart policy decides",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob, OnExitCodes: in(42)}},
		pod:         failed(1),
		wantPhase:   v1beta1.JobRunning,
		wantBackoff: 1,
		wantDeleted: []string{"j-worker-1"},
	}, {
		name:        "Ignore replaces without counting",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionIgnore, OnReasons: []string{"OOMKilled"}}},
		pod:         oomKilled,
		wantPhase:   v1beta1.JobRunning,
		wantDeleted: []string{"j-worker-1"},
	}, {
		name:        "RestartJob deletes every pod, counted once",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob, ReplicaTypes: []v1beta1.ReplicaType{"worker"}}},
		pod:         failed(1),
		wantPhase:   v1beta1.JobRunning,
		wantBackoff: 1,
		wantDeleted: []string{"j-chief-0", "j-worker-0", "j-worker-1"},
	}, {
		name:        "a rule for other replica types does not match",
		rules:       []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob, ReplicaTypes: []v1beta1.ReplicaType{"chief"}}},
		pod:         failed(1),
		wantPhase:   v1beta1.JobRunning,
		wantBackoff: 1,
		wantDeleted: []string{"j-worker-1"},
	}, {
		name: "pod condition: a disruption that fails the job",
		rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionFailJob,
			OnPodConditions: []v1beta1.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget}}}},
		pod:         disruptedByPreemption,
		wantPhase:   v1beta1.JobFailed,
		wantReason:  ReasonPodFailurePolicy,
		wantDeleted: []string{"j-chief-0", "j-worker-0"},
	}, {
		name: "first match wins",
		rules: []v1beta1.FailurePolicyRule{
			{Action: v1beta1.FailurePolicyActionIgnore, OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{
				Operator: v1beta1.FailurePolicyOnExitCodesOpNotIn, Values: []int32{1}}},
			{Action: v1beta1.FailurePolicyActionFailJob},
		},
		pod:         failed(3),
		wantPhase:   v1beta1.JobRunning,
		wantDeleted: []string{"j-worker-1"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := withFailurePolicy(newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).
				withRestartPolicy("worker", v1beta1.RestartPolicyOnFailure).obj(), tc.rules...)
			f := newFixture(t, job)
			f.start(job)
			f.setPod("j-worker-1", tc.pod)
			f.mustSync(job)
			deleted := f.deletedPodNames()
			st := f.status(job)
			events := f.events()
			assertPhase(t, st, tc.wantPhase)
			if tc.wantReason != "" {
				assertCondition(t, st, v1beta1.ConditionFailed, metav1.ConditionTrue, tc.wantReason)
				if !hasEvent(events, corev1.EventTypeWarning, tc.wantReason) {
					t.Errorf("no %s event: %v", tc.wantReason, events)
				}
			}
			if st.BackoffCount != tc.wantBackoff {
				t.Errorf("backoffCount %d, want %d", st.BackoffCount, tc.wantBackoff)
			}
			if !equalStrings(deleted, tc.wantDeleted) {
				t.Errorf("deleted %v, want %v", deleted, tc.wantDeleted)
			}
		})
	}
}

// TestRestartJob: after RestartJob every replica gets a new pod, all after
// the failed replica's backoff, and a second failure in the same restart
// is not counted again.
func TestRestartJob(t *testing.T) {
	job := withFailurePolicy(newPyTorchJob("p").withReplicas("master", 1).withReplicas("worker", 2).obj(),
		v1beta1.FailurePolicyRule{Action: v1beta1.FailurePolicyActionRestartJob})
	f := newFixture(t, job)
	f.start(job)
	old := map[string]string{}
	for _, n := range f.podNames() {
		old[n] = string(f.pod(n).UID)
	}
	f.setPod("p-worker-0", failed(1))
	f.setPod("p-worker-1", failed(1))
	f.step(job)
	st := f.status(job)
	if st.BackoffCount != 1 {
		t.Fatalf("backoffCount %d, want 1 for one job restart", st.BackoffCount)
	}
	if !hasEvent(f.events(), corev1.EventTypeWarning, ReasonRestartingJob) {
		t.Errorf("no RestartingJob event")
	}
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v before the backoff passed", got)
	}
	f.clock.Step(DefaultRestartBackoffBase)
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"p-master-0", "p-worker-0", "p-worker-1"}) {
		t.Fatalf("created %v, want every replica", got)
	}
	f.observe()
	for n, uid := range old {
		if p := f.pod(n); p == nil || string(p.UID) == uid {
			t.Errorf("pod %s was not recreated", n)
		}
	}
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "+"
		}
		out += n
	}
	return out
}

// TestRestartJobWaitsForEveryOldPod: a whole-job restart creates no new pod
// while an old one still terminates, so that new ranks never meet old ones.
func TestRestartJobWaitsForEveryOldPod(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 1).obj()
	job.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{{Action: v1beta1.FailurePolicyActionRestartJob}}}
	f := newFixture(t, job)
	f.gracefulDeletes()
	f.start(job)
	f.setPod("j-worker-0", failed(137))
	f.mustSync(job)
	if got := f.deletedPodNames(); len(got) != 2 {
		t.Fatalf("deleted %v, want both pods", got)
	}
	f.observe()
	f.removePod("j-worker-0")
	f.clock.Step(time.Minute) // past any backoff
	f.mustSync(job)
	if got := f.createdPodNames(); len(got) != 0 {
		t.Fatalf("created %v while the old master still terminates", got)
	}
	f.observe()
	if rs := f.status(job).Tasks[1].ReplicaStatus[0]; rs.Reason != ReasonRestartingJob {
		t.Errorf("waiting worker's reason %q, want %s", rs.Reason, ReasonRestartingJob)
	}
	f.removePod("j-master-0")
	f.mustSync(job)
	if got := f.createdPodNames(); !equalStrings(got, []string{"j-master-0", "j-worker-0"}) {
		t.Errorf("created %v, want both replicas once every old pod is gone", got)
	}
}
