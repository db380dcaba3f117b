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
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// elasticTrainingSteps is how many steps of about 0.3 s the elastic jobs
// train: enough that a group re-formed after a scale, which takes new pods
// started and a rendezvous (7 s on an idle machine, over 20 s while the
// install test loads it), still has steps to train.
const elasticTrainingSteps = 150

// elasticJob is an elastic torchrun job of 1 to 3 workers, expected of them
// at first, that trains for elasticTrainingSteps steps
// (artifacts/examples/scripts/pytorch_elastic.py).
func elasticJob(name string, expected int) *framework.JobBuilder {
	return framework.NewPyTorchJob(name).WithReplicas("worker", 1).
		Torchrun(v1beta1.TorchrunConfig{ProcPerNode: "1", MaxRestarts: ptr.To[int32](10),
			ExtraOptions: []string{"--rdzv-conf=last_call_timeout=1", "--monitor-interval=0.5"}}).
		Elastic(1, 3, int32(expected)).GracePeriod(5).
		Image(framework.TrainingImage).Command("python3", "pytorch_elastic.py").
		Env("STEPS", strconv.Itoa(elasticTrainingSteps)).Env("STEP_SECONDS", "0.3").Requests("200m", "256Mi").MemoryLimit("1Gi")
}

var elasticStep = regexp.MustCompile(`rank=\d+ world=(\d+) step=(\d+) loss=[0-9.]+ at=([0-9.]+)`)

// loggedStep is one training step as a pod logged it.
type loggedStep struct {
	world, step int
	at          time.Time
}

// elasticSteps reads a pod's log: the steps it trained, each with the world
// size and the time it logged it; nil when the log cannot be read yet.
func elasticSteps(f *framework.Framework, pod string) []loggedStep {
	var out []loggedStep
	data, err := f.Kube.CoreV1().Pods(f.Namespace).GetLogs(pod, &corev1.PodLogOptions{}).DoRaw(f.Context())
	if err != nil {
		return nil
	}
	for _, m := range elasticStep.FindAllStringSubmatch(string(data), -1) {
		world, _ := strconv.Atoi(m[1])
		step, _ := strconv.Atoi(m[2])
		at, _ := unixTime(m[3])
		out = append(out, loggedStep{world: world, step: step, at: at})
	}
	return out
}

// lastStep is the last step a pod logged in a group of the given size; 0
// when none.
func lastStep(steps []loggedStep, world int) loggedStep {
	var last loggedStep
	for _, s := range steps {
		if s.world == world {
			last = s
		}
	}
	return last
}

// firstStep is the first step a pod logged in a group of the given size
// after the given time. A group of that size before it does not count: an
// elastic job's first worker may train alone for a moment before the others
// have started and join it.
func firstStep(steps []loggedStep, world int, after time.Time) (loggedStep, bool) {
	for _, s := range steps {
		if s.world == world && s.at.After(after) {
			return s, true
		}
	}
	return loggedStep{}, false
}

// TestRealNodeElastic: an elastic torchrun job of one worker, scaled to
// three mid-run, goes on training in a group of three from the step it had
// reached; another, of three, scaled to one, goes on alone. Both succeed
// without a restart counted against backoffLimit.
func TestRealNodeElastic(t *testing.T) {
	f := onRealNode(t, "real-elastic")
	for _, tc := range []struct {
		name     string
		from, to int
	}{{"grow", 1, 3}, {"shrink", 3, 1}} {
		applyJob(f, elasticJob(tc.name, tc.from))
		ref := f.Ref(framework.KindPyTorch, tc.name)
		var before loggedStep
		f.Eventually(realNodeTimeout, fmt.Sprintf("%s: %d workers training", tc.name, tc.from), func(context.Context) (bool, error) {
			for i := range tc.from {
				if lastStep(elasticSteps(f, fmt.Sprintf("%s-worker-%d", tc.name, i)), tc.from).step < 5 {
					return false, nil
				}
			}
			return true, nil
		})
		f.MustKubectl("scale", "pj/"+tc.name, fmt.Sprintf("--replicas=%d", tc.to))
		scaled := time.Now()
		before = lastStep(elasticSteps(f, tc.name+"-worker-0"), tc.from)

		var resumed loggedStep
		f.Eventually(realNodeTimeout, fmt.Sprintf("%s: every worker training in a group of %d", tc.name, tc.to), func(context.Context) (bool, error) {
			for i := range tc.to {
				first, ok := firstStep(elasticSteps(f, fmt.Sprintf("%s-worker-%d", tc.name, i)), tc.to, scaled)
				if !ok {
					return false, nil
				}
				if i == 0 {
					resumed = first
				}
			}
			return true, nil
		})
		t.Logf("%s: scaled from %d to %d; worker-0 trained step %d in a group of %d %s after kubectl scale returned",
			tc.name, tc.from, tc.to, resumed.step, tc.to, resumed.at.Sub(scaled).Round(100*time.Millisecond))
		if resumed.step <= before.step-2 || resumed.step < 5 {
			t.Errorf("%s: worker-0 trained step %d before scaling and step %d after: want training to go on from where it was, not from zero",
				tc.name, before.step, resumed.step)
		}
		waitSucceeded(f, ref)
		job := f.MustGetJob(ref)
		if st := job.JobStatus(); st.BackoffCount != 0 {
			t.Errorf("%s: backoffCount %d, want 0: scaling is not a failure", tc.name, st.BackoffCount)
		}
		for i := range tc.to {
			pod := fmt.Sprintf("%s-worker-%d", tc.name, i)
			if last := lastStep(elasticSteps(f, pod), tc.to); last.step != elasticTrainingSteps {
				t.Errorf("%s: %s's last step in a group of %d is %d, want %d", tc.name, pod, tc.to, last.step, elasticTrainingSteps)
			}
		}
		if n := len(f.Pods(ref)); n != tc.to {
			t.Errorf("%s: %d pods after scaling to %d", tc.name, n, tc.to)
		}
		checkOnRealNode(t, f.Pods(ref))
	}
}
