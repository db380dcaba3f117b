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

package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// violations groups failed assertions by kind, so that one broken rule
// over 120 jobs reads as one line with examples.
type violations struct {
	order []string
	by    map[string][]string
}

func (v *violations) add(kind, format string, args ...any) {
	if v.by == nil {
		v.by = map[string][]string{}
	}
	if _, ok := v.by[kind]; !ok {
		v.order = append(v.order, kind)
	}
	v.by[kind] = append(v.by[kind], fmt.Sprintf(format, args...))
}

func (v *violations) report(t *testing.T) {
	for _, kind := range v.order {
		items := v.by[kind]
		shown := items
		if len(shown) > 8 {
			shown = shown[:8]
		}
		more := ""
		if len(items) > len(shown) {
			more = fmt.Sprintf("\n    ... and %d more", len(items)-len(shown))
		}
		t.Errorf("%s: %d jobs/pods:\n    %s%s", kind, len(items), strings.Join(shown, "\n    "), more)
	}
}

// outcomes waits for every job to finish and checks its exact outcome and
// the history of each of its pods.
func (s *suite) outcomes(t *testing.T) {
	jobs := s.check.all()
	deadline := time.Now().Add(30 * time.Second)
	for _, j := range jobs {
		if end := s.created[j.ref.Name].Add(j.lasts + 60*time.Second); end.After(deadline) {
			deadline = end
		}
	}
	start := time.Now()
	var snap *snapshot
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		sn, err := s.check.read(ctx)
		cancel()
		if err == nil {
			snap = sn
			open := 0
			for _, j := range jobs {
				if job := sn.jobs[j.ref.Name]; job == nil || !job.JobStatus().Phase.IsFinished() {
					open++
				}
			}
			if open == 0 {
				break
			}
			if time.Now().After(deadline) {
				var names []string
				for _, j := range jobs {
					if job := sn.jobs[j.ref.Name]; job == nil || !job.JobStatus().Phase.IsFinished() {
						names = append(names, j.ref.Name)
					}
				}
				t.Errorf("%d jobs did not finish in time: %s", open, strings.Join(names, " "))
				for i, n := range names {
					if i == 3 {
						break
					}
					t.Logf("%s", s.f.DumpJob(framework.JobRef{Kind: jobByName(jobs, n).ref.Kind, Namespace: namespace, Name: n}))
				}
				break
			}
		} else if time.Now().After(deadline) {
			t.Fatalf("reading the namespace: %v", err)
		}
		time.Sleep(time.Second)
	}
	s.figs.add("wait for the last job after the disruptions", time.Since(start).Round(time.Second).String())
	r := s.check.waitCaughtUp(time.Now(), time.Minute)
	if r.err != nil {
		t.Errorf("at the end: %v", r.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if sn, err := s.check.read(ctx); err == nil {
		snap = sn
	}
	cancel()

	var v violations
	outcome := map[string]int{}
	for _, j := range jobs {
		job := snap.jobs[j.ref.Name]
		if job == nil {
			v.add("job missing", "%s", j.ref)
			continue
		}
		st := job.JobStatus()
		failed := framework.Condition(job, v1beta1.ConditionFailed)
		reason := ""
		if failed != nil && failed.Status == metav1.ConditionTrue {
			reason = failed.Reason
		}
		outcome[fmt.Sprintf("%s %s", st.Phase, reason)]++
		if st.Phase != j.wantPhase || reason != j.wantReason {
			v.add(fmt.Sprintf("class %s: wrong outcome", j.class), "%s: phase %s, Failed reason %q; want %s %q",
				j.ref.Name, st.Phase, reason, j.wantPhase, j.wantReason)
		}
		if st.BackoffCount != j.wantBackoff {
			v.add(fmt.Sprintf("class %s: wrong backoffCount", j.class), "%s: backoffCount %d, want %d",
				j.ref.Name, st.BackoffCount, j.wantBackoff)
		}
		s.checkPods(&v, j, snap)
	}
	s.checkCreates(t, &v)
	v.report(t)

	total := 0
	for _, n := range s.history.Names() {
		total += len(s.history.Incarnations(n))
	}
	s.figs.add("pods (UIDs) seen over the run", fmt.Sprint(total))
	s.figs.add("outcomes", countsString(outcome))
}

func jobByName(jobs []*chaosJob, name string) *chaosJob {
	for _, j := range jobs {
		if j.ref.Name == name {
			return j
		}
	}
	return nil
}

// checkPods checks the pods of j over the whole run: how many pods each
// replica had, that no replica that succeeded ran again, the outcome
// finalizer, and that no pod is left holding it.
func (s *suite) checkPods(v *violations, j *chaosJob, snap *snapshot) {
	for _, name := range j.pods {
		incs := s.history.Incarnations(name)
		if len(incs) != j.uids(name) {
			kind := fmt.Sprintf("class %s: pods per replica", j.class)
			if name == j.target {
				kind = fmt.Sprintf("class %s: pods of the replica whose pod the suite deleted", j.class)
			}
			v.add(kind, "%s: %d pods (%s), want %d", name, len(incs), describeIncarnations(incs), j.uids(name))
		}
		for i, inc := range incs {
			if inc.Reached(corev1.PodSucceeded) && i < len(incs)-1 {
				v.add("succeeded replica ran again", "%s: pod %s succeeded, then %d more pod(s) (%s)",
					name, inc.UID, len(incs)-1-i, describeIncarnations(incs[i+1:]))
				break
			}
		}
		for _, inc := range incs {
			if !slices.Contains(inc.Finalizers, v1beta1.ReplicaOutcomeFinalizer) {
				v.add("replica pod without the finalizer "+v1beta1.ReplicaOutcomeFinalizer, "%s (uid %s)", name, inc.UID)
				break
			}
		}
	}
	for _, p := range snap.pods[j.ref.Name] {
		if !slices.Contains(j.pods, p.Name) {
			v.add("unexpected pod", "%s of %s", p.Name, j.ref.Name)
		}
		if slices.Contains(p.Finalizers, v1beta1.ReplicaOutcomeFinalizer) {
			v.add("finished job's pod still holds the finalizer", "%s (%s)", p.Name, p.Status.Phase)
		}
	}
}

func describeIncarnations(incs []framework.PodIncarnation) string {
	parts := make([]string, 0, len(incs))
	for _, inc := range incs {
		ph := make([]string, 0, len(inc.Phases))
		for _, p := range inc.Phases {
			ph = append(ph, string(p))
		}
		d := ""
		if !inc.Deleted.IsZero() {
			d = ",deleted"
		}
		parts = append(parts, fmt.Sprintf("%s[%s%s]", string(inc.UID)[:8], strings.Join(ph, ">"), d))
	}
	return strings.Join(parts, " ")
}

// checkCreates compares the successful pod creates in the audit log with
// the pods the watch saw (a pod that lived only while a watch was down
// would show here), and records who created the pods.
func (s *suite) checkCreates(t *testing.T, v *violations) {
	events, err := readAudit()
	if err != nil {
		t.Errorf("reading the audit log: %v", err)
		return
	}
	// A create whose client went away (a controller-manager stopped or
	// killed mid-request) is logged with a 5xx and may still have made its
	// pod: in doubt.
	creates, inDoubt := map[string]int{}, map[string]int{}
	byActor := map[string]int{}
	for _, e := range events {
		if e.Verb != "create" || e.resource() != "pods" || e.ObjectRef.Namespace != namespace || e.ResponseStatus == nil {
			continue
		}
		switch code := e.ResponseStatus.Code; {
		case code == 201:
			creates[e.ObjectRef.Name]++
			byActor[e.actor()]++
		case code >= 500:
			inDoubt[e.ObjectRef.Name]++
		}
	}
	names := s.history.Names()
	for n := range creates {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, n := range names {
		seen := len(s.history.Incarnations(n))
		if seen < creates[n] || seen > creates[n]+inDoubt[n] {
			v.add("audit log and pod watch disagree", "%s: created %d times (%d more in doubt), %d pods seen", n, creates[n], inDoubt[n], seen)
		}
	}
	s.figs.add("pod creates by actor (audit log)", countsString(byActor))
}

// figures are the numbers the suite prints at the end.
type figures struct {
	rows [][2]string
}

func (f *figures) add(name, value string) { f.rows = append(f.rows, [2]string{name, value}) }

func (f *figures) print(t *testing.T) {
	width := 0
	for _, r := range f.rows {
		width = max(width, len(r[0]))
	}
	var b strings.Builder
	b.WriteString("chaos figures:\n")
	for _, r := range f.rows {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, r[0], r[1])
	}
	t.Log(b.String())
}
