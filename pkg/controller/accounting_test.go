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

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestAccountingStates(t *testing.T) {
	job := newPyTorchJob("j").withReplicas("master", 1).obj()
	f := newFixture(t, job)
	f.step(job)
	f.clock.Step(7 * time.Second)
	f.setAll(running)
	f.step(job)
	a := f.status(job).Accounting
	if a == nil || a.State != v1beta1.AccountingRunning || a.StartingSeconds != 7 {
		t.Fatalf("accounting %+v: want Running after 7s starting", a)
	}
	f.clock.Step(100 * time.Second)
	f.setAll(succeeded)
	f.step(job)
	a = f.status(job).Accounting
	if a.State != "" || a.StateSince != nil || a.RunningSeconds != 100 || a.StartingSeconds != 7 {
		t.Errorf("accounting %+v: want 100s running, 7s starting, no state once finished", a)
	}
}

// TestAccountingMetrics: a status write's additions to the accounting are
// added to the counters, per namespace and queue.
func TestAccountingMetrics(t *testing.T) {
	RegisterMetrics() // unregistered, the counters count nothing
	job := newPyTorchJob("acct").withReplicas("master", 1).obj()
	job.SetLabels(map[string]string{"kueue.x-k8s.io/queue-name": "team-q"})
	old := &v1beta1.Accounting{RunningSeconds: 10, Interruptions: 1, LostReplicaSeconds: 4,
		Recent: []v1beta1.Interruption{{Reason: StopPause}}}
	cur := &v1beta1.Accounting{RunningSeconds: 70, PausedSeconds: 5, Interruptions: 3, LostReplicaSeconds: 40,
		Recent: []v1beta1.Interruption{{Reason: StopPause}, {Reason: StopEvicted}, {Reason: StopStalled}}}
	ns := job.GetNamespace()
	before := map[string]float64{
		"running": counterValue(t, jobStateSeconds.WithLabelValues(ns, "team-q", "Running")),
		"evicted": counterValue(t, jobInterruptions.WithLabelValues(ns, "team-q", StopEvicted)),
		"pause":   counterValue(t, jobInterruptions.WithLabelValues(ns, "team-q", StopPause)),
		"lost":    counterValue(t, jobLostWork.WithLabelValues(ns, "team-q")),
	}
	observeAccounting(job, old, cur)
	got := map[string]float64{
		"running": counterValue(t, jobStateSeconds.WithLabelValues(ns, "team-q", "Running")) - before["running"],
		"evicted": counterValue(t, jobInterruptions.WithLabelValues(ns, "team-q", StopEvicted)) - before["evicted"],
		"pause":   counterValue(t, jobInterruptions.WithLabelValues(ns, "team-q", StopPause)) - before["pause"],
		"lost":    counterValue(t, jobLostWork.WithLabelValues(ns, "team-q")) - before["lost"],
	}
	want := map[string]float64{"running": 60, "evicted": 1, "pause": 0, "lost": 36}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s added %g, want %g", k, got[k], v)
		}
	}
}
