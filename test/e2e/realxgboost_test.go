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
	"regexp"
	"strconv"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/test/e2e/framework"
)

var (
	xgboostRoundLine  = regexp.MustCompile(`rank=(\d+) round=(\d+) train-logloss=([0-9.]+)`)
	xgboostJoinedLine = regexp.MustCompile(`rank=(\d+) world=(\d+) collective-rank=(\d+) joined`)
	xgboostDoneLine   = regexp.MustCompile(`rank=(\d+) done rounds=(\d+) train-logloss=([0-9.]+)`)
)

// TestRealNodeXGBoost: the XGBoost example trains for real. The master runs
// XGBoost's tracker; the three replicas join its collective at the address
// the controller gave them, each with the rank it was given, and train one
// model on three shards of generated data. Each round's metric is reduced
// over every shard, so every replica logs the same value at every round and
// the same final one; the metric falls. Rank 0 reports the rounds: the job's
// progress moved while it ran and ended at the last round.
func TestRealNodeXGBoost(t *testing.T) {
	f := onRealNode(t, "real-xgb")
	applyExample(f, "xgboost.yaml")
	ref := f.Ref(framework.KindXGBoost, "xgboost")
	const rounds = 30

	seen := followProgress(t, f, ref)
	p := seen.job.JobStatus().Progress
	if p == nil || ptr.Deref(p.Step, 0) != rounds || ptr.Deref(p.TotalSteps, 0) != rounds || ptr.Deref(p.Percent, 0) != 100 {
		t.Errorf("final status.progress %+v, want round %d of %d at 100%%", p, rounds, rounds)
	} else if p.Reporter != ref.Name+"-master-0" || len(p.Metrics) != 1 || p.Metrics[0].Name != "logloss" {
		t.Errorf("final report %+v, want the logloss reported by the master's pod %s-master-0", p, ref.Name)
	}
	var running []int32
	for _, s := range seen.samples {
		if s.percent > 0 && s.percent < 100 {
			running = append(running, s.percent)
		}
	}
	if len(running) < 2 || running[len(running)-1] <= running[0] {
		t.Errorf("progress while training: %v, want at least two stored reports, rising", running)
	}

	pods := waitPodsSucceeded(f, ref, 3)
	checkOnRealNode(t, pods)
	wantRank := map[string]int{ref.Name + "-master-0": 0, ref.Name + "-worker-0": 1, ref.Name + "-worker-1": 2}
	metrics := map[int][]string{} // rank -> the metric of each round, as logged
	final := map[int]string{}
	for _, pod := range pods {
		out := podLog(f, pod.Name)
		rank, ok := wantRank[pod.Name]
		if !ok {
			t.Errorf("pod %s is not one of the example's replicas", pod.Name)
			continue
		}
		joined := xgboostJoinedLine.FindStringSubmatch(out)
		if joined == nil || joined[1] != strconv.Itoa(rank) || joined[2] != "3" || joined[3] != joined[1] {
			t.Errorf("pod %s: joined %q, want rank %d of 3 in the collective too:\n%s", pod.Name, joined, rank, out)
		}
		for _, m := range xgboostRoundLine.FindAllStringSubmatch(out, -1) {
			if m[1] == strconv.Itoa(rank) {
				metrics[rank] = append(metrics[rank], m[3])
			}
		}
		if done := xgboostDoneLine.FindStringSubmatch(out); done != nil && done[1] == strconv.Itoa(rank) {
			final[rank] = done[3]
		}
	}
	for rank := range 3 {
		if len(metrics[rank]) != rounds || final[rank] == "" {
			t.Fatalf("rank %d logged %d rounds and final metric %q, want %d rounds and a final metric", rank,
				len(metrics[rank]), final[rank], rounds)
		}
	}
	for round := range rounds {
		if a, b, c := metrics[0][round], metrics[1][round], metrics[2][round]; a != b || a != c {
			t.Errorf("round %d: the ranks logged %s, %s and %s, want one value reduced over every shard", round+1, a, b, c)
		}
	}
	if final[0] != final[1] || final[0] != final[2] {
		t.Errorf("final metrics %v, want the same on every rank", final)
	}
	first, _ := strconv.ParseFloat(metrics[0][0], 64)
	last, _ := strconv.ParseFloat(final[0], 64)
	if last >= first/2 {
		t.Errorf("logloss %g after round 1 and %g after round %d, want it halved", first, last, rounds)
	}
	t.Logf("logloss %g after round 1, %g after round %d on all 3 ranks", first, last, rounds)

	r := f.KubectlTraining("logs", ref.KubectlName(), "--all-replicas")
	if r.Err != nil {
		t.Fatalf("kubectl training logs --all-replicas: %s", r)
	}
	for rank := range 3 {
		if want := "rank=" + strconv.Itoa(rank) + " done"; !strings.Contains(r.Stdout, want) {
			t.Errorf("kubectl training logs --all-replicas lacks %q:\n%s", want, r.Stdout)
		}
	}
}
