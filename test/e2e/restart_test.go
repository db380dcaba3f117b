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

// The tests in this file restart components of the shared control plane, so
// they do not call t.Parallel(): Go runs them one after another before any
// parallel test starts.

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// jobSnapshot is what must survive a restart of the training-apiserver.
type jobSnapshot struct {
	UID        types.UID
	Generation int64
	Labels     map[string]string
	Spec       v1beta1.TrainingJobSpec
	Phase      v1beta1.JobPhase
	Conditions []string
	Backoff    int32
	Started    bool
	Completed  bool
}

func snapshot(job v1beta1.TrainingJob) jobSnapshot {
	st := job.JobStatus()
	s := jobSnapshot{
		UID:        job.GetUID(),
		Generation: job.GetGeneration(),
		Labels:     job.GetLabels(),
		Spec:       *job.CommonSpec().DeepCopy(),
		Phase:      st.Phase,
		Backoff:    st.BackoffCount,
		Started:    st.StartTime != nil,
		Completed:  st.CompletionTime != nil,
	}
	for _, c := range st.Conditions {
		s.Conditions = append(s.Conditions, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return s
}

// TestTrainingApiserverRestart: jobs and their status live in the
// training-apiserver's etcd and survive its restart; the controller picks
// up where it was through the aggregator.
func TestTrainingApiserverRestart(t *testing.T) {
	f := framework.New(t, "api-restart")
	running := f.Create(framework.NewTFJob("running").WithReplicas("worker", 2).Label("e2e", "restart"))
	succeeded := f.Create(framework.NewTFJob("succeeded").WithReplicas("worker", 1).ExitCode(0).RunFor("1s").CleanUp(v1beta1.CleanUpPolicyNone))
	failed := f.Create(framework.NewTFJob("failed").WithReplicas("worker", 1).ExitCode(2).RunFor("1s"))
	paused := f.Create(framework.NewPyTorchJob("paused").WithReplicas("master", 1).WithReplicas("worker", 1).ExitCode(0).RunFor("2s").Paused())
	runningPods := f.WaitForRunningPods(running, 2)
	f.WaitForPhase(running, v1beta1.JobRunning)
	f.WaitForPhase(succeeded, v1beta1.JobSucceeded)
	f.WaitForPhase(failed, v1beta1.JobFailed)
	f.WaitForPhase(paused, v1beta1.JobPaused)

	refs := []framework.JobRef{running, succeeded, failed, paused}
	before := map[framework.JobRef]jobSnapshot{}
	for _, r := range refs {
		before[r] = snapshot(f.MustGetJob(r))
	}

	f.RestartComponent("training-apiserver")
	f.WaitForAPIServiceAvailable()

	for _, r := range refs {
		var job v1beta1.TrainingJob
		f.Eventually(framework.Timeout, "reading "+r.String()+" after the restart", func(ctx context.Context) (bool, error) {
			var err error
			job, err = f.GetJob(ctx, r)
			return err == nil, err
		})
		if diff := cmp.Diff(before[r], snapshot(job)); diff != "" {
			t.Errorf("%s changed across the restart (-before +after):\n%s", r, diff)
		}
	}
	// The running job's pods were left alone.
	if diff := cmp.Diff(podUIDs(runningPods), podUIDs(f.Pods(running))); diff != "" {
		t.Errorf("pods of %s changed across the restart (-before +after):\n%s", running, diff)
	}
	// Label and field selectors still work on the restarted server. A
	// discovery cache of its own: the shared one may have been written by
	// another test's kubectl while the server was down, without the
	// category trainingjobs, and kubectl keeps a category it cached.
	out := f.MustKubectl("--cache-dir", t.TempDir(), "get", "trainingjobs", "-l", "e2e=restart",
		"--field-selector", "status.phase=Running", "-o", "name")
	if strings.TrimSpace(out) != "tensorflowtrainingjob.batch.tensorstack.dev/running" {
		t.Errorf("selecting the running job after the restart printed %q", out)
	}

	// The controller still sees changes: resume the paused job, and run a
	// new one.
	f.MustAction(paused, "resume", "")
	fresh := f.Create(framework.NewPyTorchJob("after-restart").WithReplicas("worker", 2).ExitCode(0).RunFor("1s"))
	checkSucceeded(t, f.WaitForPhase(paused, v1beta1.JobSucceeded))
	checkSucceeded(t, f.WaitForPhase(fresh, v1beta1.JobSucceeded))
}

// TestControllerManagerRestart: restarting the training-controller-manager
// while jobs run creates no pod twice and every job still finishes.
func TestControllerManagerRestart(t *testing.T) {
	f := framework.New(t, "cm-restart")
	// Long enough to run across the restart even when the stack has just
	// started on a loaded machine; clean-up None keeps the pods for the
	// comparison at the end.
	builders := []*framework.JobBuilder{
		framework.NewTFJob("tf-chief").WithReplicas("chief", 1).WithReplicas("ps", 1).WithReplicas("worker", 2).
			ExitCode(0).RunFor("40s").ReplicaRunFor("chief", "45s").CleanUp(v1beta1.CleanUpPolicyNone),
		framework.NewTFJob("tf-workers").WithReplicas("worker", 3).ExitCode(0).RunFor("40s").CleanUp(v1beta1.CleanUpPolicyNone),
		framework.NewPyTorchJob("pt-master").WithReplicas("master", 1).WithReplicas("worker", 2).
			ExitCode(0).RunFor("40s").CleanUp(v1beta1.CleanUpPolicyNone),
	}
	want := map[string]int{"tf-chief": 4, "tf-workers": 3, "pt-master": 3}
	var refs []framework.JobRef
	for _, b := range builders {
		refs = append(refs, f.Create(b))
	}
	before := map[framework.JobRef]map[string]types.UID{}
	for _, r := range refs {
		before[r] = podUIDs(f.WaitForRunningPods(r, want[r.Name]))
	}

	f.RestartComponent("training-controller-manager")

	for _, r := range refs {
		pods := f.Pods(r)
		if diff := cmp.Diff(before[r], podUIDs(pods)); diff != "" {
			t.Errorf("pods of %s changed across the controller restart (-before +after):\n%s", r, diff)
		}
	}
	for _, r := range refs {
		job := f.WaitForPhase(r, v1beta1.JobSucceeded)
		checkSucceeded(t, job)
		if n := job.JobStatus().BackoffCount; n != 0 {
			t.Errorf("%s: backoffCount %d after a controller restart, want 0", r, n)
		}
		after := podUIDs(f.Pods(r))
		if !maps.Equal(before[r], after) {
			t.Errorf("%s: pods %v at the end, want the original %v", r, after, before[r])
		}
		created := createdPodEvents(t, f, r)
		for name, n := range created {
			if n != 1 {
				t.Errorf("%s: pod %s was created %d times", r, name, n)
			}
		}
		if len(created) != want[r.Name] {
			t.Errorf("%s: creation events for %d pods, want %d: %v", r, len(created), want[r.Name], created)
		}
	}
}

// createdPodEvents counts the controller's "Created pod" events of a job per
// pod name.
func createdPodEvents(t *testing.T, f *framework.Framework, ref framework.JobRef) map[string]int {
	t.Helper()
	list, err := f.Kube.CoreV1().Events(ref.Namespace).List(f.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": ref.Name, "reason": "SuccessfulCreate"}.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, e := range list.Items {
		if name, ok := strings.CutPrefix(e.Message, "Created pod "); ok {
			counts[name] += int(max(e.Count, 1))
		}
	}
	return counts
}
