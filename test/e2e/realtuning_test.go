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
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// tuningExample is the search of docs/tuning.md.
const tuningExample = "../../artifacts/examples/tuning/pytorch-lr-search.yaml"

// realTuningTimeout bounds the example search on the real nodes: eight
// trials of a small PyTorch model, two at a time, some paused and resumed.
const realTuningTimeout = 15 * time.Minute

var (
	tuningResumed = regexp.MustCompile(`(?m)^resumed from step=(\d+) `)
	tuningStep    = regexp.MustCompile(`(?m)^step=(\d+) loss=`)
)

// TestRealNodeTuningSearch runs the example search on the real nodes:
// eight trials of a small PyTorch model (GenericJobs of the shipped
// generic runtime), two at a time, under asha with
// three rungs. It ends Succeeded; its best trial beats the median trial;
// asha paused trials at rungs and promoted at least one, which resumed
// from its checkpoint: its log says "resumed from step=N" and goes on at
// step N+1, not from step 1.
func TestRealNodeTuningSearch(t *testing.T) {
	f := onRealNode(t, "real-tune")
	manifest, err := os.ReadFile(tuningExample)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.KubectlInput(string(manifest), "apply", "-n", f.Namespace, "-f", "-"); r.Err != nil {
		t.Fatalf("kubectl apply: %s", r)
	}
	// A promoted trial's pod may be paused again at a later rung, and its
	// log goes with it: each promoted trial's log is kept as it runs.
	resumedLogs := map[string]string{}
	var search *v1beta1.TuningJob
	f.Eventually(realTuningTimeout, "the example search to end", func(ctx context.Context) (bool, error) {
		var err error
		if search, err = f.Training.BatchV1beta1().TuningJobs(f.Namespace).Get(ctx, "lr-search", metav1.GetOptions{}); err != nil {
			return false, err
		}
		for _, tr := range search.Status.Trials {
			if tr.Promotions == 0 || tr.State != v1beta1.TrialRunning {
				continue
			}
			data, err := f.Kube.CoreV1().Pods(f.Namespace).GetLogs(tr.Name+"-worker-0", &corev1.PodLogOptions{}).DoRaw(ctx)
			if err == nil && tuningResumed.Match(data) {
				resumedLogs[tr.Name] = string(data)
			}
		}
		if apimeta.IsStatusConditionTrue(search.Status.Conditions, "Failed") {
			return false, framework.Stop("the search failed: %+v\n%s", search.Status.Conditions, f.KubectlTraining("trials", "lr-search", "-o", "wide"))
		}
		return apimeta.IsStatusConditionTrue(search.Status.Conditions, "Succeeded"), nil
	})
	st := &search.Status
	trials := f.KubectlTraining("trials", "lr-search", "-o", "wide")
	if trials.Err != nil {
		t.Errorf("kubectl training trials: %s", trials)
	}
	t.Logf("trials:\n%s", trials.Stdout)
	if len(st.Trials) != 8 {
		t.Errorf("%d trials, want 8", len(st.Trials))
	}
	var values []float64
	for _, tr := range st.Trials {
		if v, err := strconv.ParseFloat(tr.Value, 64); err == nil && tr.Value != "" {
			values = append(values, v)
		}
	}
	sort.Float64s(values)
	best, err := strconv.ParseFloat(st.BestValue, 64)
	if err != nil || len(values) < 2 || best >= values[len(values)/2] {
		t.Errorf("best %q against the trials' values %v: want it below the median", st.BestValue, values)
	}

	events, err := f.Kube.CoreV1().Events(f.Namespace).List(f.Context(), metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": "lr-search"}.String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]int{}
	for _, e := range events.Items {
		reasons[e.Reason] += int(max(e.Count, 1))
	}
	if reasons["TrialPaused"] == 0 || reasons["TrialPromoted"] == 0 {
		t.Fatalf("events by reason %v: want trials paused at a rung and at least one promoted", reasons)
	}

	// Every promoted trial went on from its checkpoint: the promotion's
	// event says at which step, and the log of the pod it resumed in shows
	// that step, then the next.
	for _, e := range events.Items {
		if e.Reason == "TrialPromoted" && !strings.Contains(e.Message, "resumes from its checkpoint") {
			t.Errorf("promotion without a checkpoint: %s", e.Message)
		}
	}
	promoted := 0
	for _, tr := range st.Trials {
		if tr.Promotions == 0 {
			continue
		}
		promoted++
		log, ok := resumedLogs[tr.Name]
		if !ok {
			if tr.State == v1beta1.TrialSucceeded {
				log = podLog(f, tr.Name+"-worker-0")
			} else {
				t.Errorf("promoted trial %s: no log of it running after its promotion was caught", tr.Name)
				continue
			}
		}
		m := tuningResumed.FindStringSubmatch(log)
		if m == nil {
			t.Errorf("promoted trial %s never resumed from a checkpoint:\n%s", tr.Name, log)
			continue
		}
		resumed, _ := strconv.Atoi(m[1])
		after := tuningStep.FindStringSubmatch(log[strings.Index(log, m[0]):])
		if resumed < 1 || after == nil || after[1] != strconv.Itoa(resumed+1) {
			t.Errorf("trial %s resumed from step %d, then %v; want step %d next:\n%s", tr.Name, resumed, after, resumed+1, log)
		}
		t.Logf("trial %s resumed from its checkpoint at step %d and went on at step %s", tr.Name, resumed, after[1])
		ref := f.Ref(framework.KindGeneric, tr.Name)
		job := f.MustGetJob(ref)
		if a := job.JobStatus().Accounting; a == nil || len(a.Recent) == 0 {
			t.Errorf("trial %s: accounting %+v, want its interruptions", tr.Name, a)
		}
	}
	if promoted == 0 {
		t.Error("no trial has a promotion in its status")
	}
}
