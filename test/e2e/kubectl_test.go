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
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestKubectlAPIResources: discovery through the aggregator shows both kinds
// with their short names, category and verbs.
func TestKubectlAPIResources(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "discovery")
	out := f.MustKubectl("api-resources", "--api-group=batch.tensorstack.dev", "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	header := strings.Fields(lines[0])
	want := []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"}
	if !slices.Equal(header, want) {
		t.Fatalf("api-resources header %q, want %q\n%s", header, want, out)
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		fields := strings.Fields(l)
		rows[fields[0]] = fields
	}
	// Every kind of the table, with its names as the table gives them.
	for _, k := range batch.Kinds {
		tc := struct{ resource, short, kind string }{k.Resource, k.ShortName, k.Kind}
		row, ok := rows[tc.resource]
		if !ok {
			t.Errorf("api-resources does not list %s:\n%s", tc.resource, out)
			continue
		}
		if len(row) != len(want) {
			t.Errorf("row of %s has %d columns, want %d: %q", tc.resource, len(row), len(want), row)
			continue
		}
		if row[1] != tc.short || row[2] != "batch.tensorstack.dev/v1beta1" || row[3] != "true" || row[4] != tc.kind {
			t.Errorf("row of %s = %q, want short name %s, batch.tensorstack.dev/v1beta1, namespaced, kind %s", tc.resource, row, tc.short, tc.kind)
		}
		verbs := strings.Split(row[5], ",")
		for _, v := range []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"} {
			if !slices.Contains(verbs, v) {
				t.Errorf("verbs of %s = %q, missing %s", tc.resource, verbs, v)
			}
		}
		if !slices.Contains(strings.Split(row[6], ","), "trainingjobs") {
			t.Errorf("categories of %s = %q, want trainingjobs", tc.resource, row[6])
		}
	}
	// And the runtimes the jobs may be made from, which are no jobs: no
	// short name, no category, so their rows have two fields fewer.
	for resource, namespaced := range map[string]string{"trainingruntimes": "true", "clustertrainingruntimes": "false"} {
		if row, ok := rows[resource]; !ok || len(row) != len(want)-2 || row[1] != "batch.tensorstack.dev/v1beta1" || row[2] != namespaced {
			t.Errorf("api-resources lists %s as %q, want batch.tensorstack.dev/v1beta1 and namespaced %s", resource, row, namespaced)
		}
	}
	// And the searches: a short name, no category.
	if row, ok := rows["tuningjobs"]; !ok || len(row) != len(want)-1 || row[1] != "tune" || row[2] != "batch.tensorstack.dev/v1beta1" ||
		row[3] != "true" || row[4] != "TuningJob" {
		t.Errorf("api-resources lists tuningjobs as %q, want short name tune, batch.tensorstack.dev/v1beta1, namespaced, kind TuningJob", row)
	}
	// And the records of deleted jobs: a short name, no category, and only
	// the verbs of a reader and of whoever cleans them up.
	if row, ok := rows["trainingjobrecords"]; !ok || len(row) != len(want)-1 || row[1] != "tjr" || row[2] != "batch.tensorstack.dev/v1beta1" ||
		row[3] != "true" || row[4] != "TrainingJobRecord" || row[5] != "delete,deletecollection,get,list,watch" {
		t.Errorf("api-resources lists trainingjobrecords as %q, want short name tjr, batch.tensorstack.dev/v1beta1, namespaced, "+
			"kind TrainingJobRecord, verbs delete,deletecollection,get,list,watch", row)
	}
	if want := len(batch.Kinds) + 4; len(rows) != want {
		t.Errorf("api-resources lists %d resources of the group, want %d:\n%s", len(rows), want, out)
	}
}

// TestKubectlExplain: the OpenAPI schema the server publishes documents the
// fields, through the short name.
func TestKubectlExplain(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "explain")
	out := f.MustKubectl("explain", "tj.spec.replicaSpecs")
	for _, s := range []string{"KIND:       TensorFlowTrainingJob", "FIELD: replicaSpecs", "template", "type", "replicas", "restartPolicy"} {
		if !strings.Contains(out, s) {
			t.Errorf("kubectl explain tj.spec.replicaSpecs does not mention %q:\n%s", s, out)
		}
	}
	out = f.MustKubectl("explain", "pj.spec.torchrunConfig")
	for _, s := range []string{"KIND:       PyTorchTrainingJob", "procPerNode", "rdzvBackend", "maxRestarts"} {
		if !strings.Contains(out, s) {
			t.Errorf("kubectl explain pj.spec.torchrunConfig does not mention %q:\n%s", s, out)
		}
	}
	// A referenced core type is resolved too.
	// Every field of a progress report, the inlined ones too.
	for _, res := range []string{"pj", "tj"} {
		out = f.MustKubectl("explain", res+".status.progress")
		for _, s := range []string{"percent", "step", "totalSteps", "epoch", "totalEpochs", "remainingSeconds", "metrics",
			"message", "estimatedFinishTime", "reporter", "reportTime", "coalescedReports"} {
			if !strings.Contains(out, "  "+s+"\t") {
				t.Errorf("kubectl explain %s.status.progress does not document %s:\n%s", res, s, out)
			}
		}
	}
	// The checkpoint contract, the stall policy and the accounting.
	for path, fields := range map[string][]string{
		"pj.spec.runPolicy":            {"checkpoint", "progressDeadlineSeconds", "stallPolicy"},
		"tj.spec.runPolicy.checkpoint": {"volumeName", "intervalSeconds", "stopGraceSeconds"},
		"pj.status.checkpoint.latest":  {"path", "step", "epoch", "sizeBytes", "reporter", "reportTime"},
		"pj.status.accounting":         {"queuedSeconds", "startingSeconds", "runningSeconds", "interruptions", "lostReplicaSeconds", "recent"},
		"tj.status.stall":              {"reporter", "step", "logs"},
	} {
		out = f.MustKubectl("explain", path)
		for _, s := range fields {
			if !strings.Contains(out, "  "+s+"\t") {
				t.Errorf("kubectl explain %s does not document %s:\n%s", path, s, out)
			}
		}
	}
	out = f.MustKubectl("explain", "tj.spec.replicaSpecs.template.spec.containers.image")
	if !strings.Contains(out, "FIELD: image") {
		t.Errorf("kubectl explain cannot follow the pod template:\n%s", out)
	}
}

// TestKubectlGetColumns: kubectl get prints the server's table, with the
// wide columns only under -o wide, and the category lists both kinds.
func TestKubectlGetColumns(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "columns")
	tf := f.Create(framework.NewTFJob("columns").WithReplicas("chief", 1).WithReplicas("worker", 2))
	pt := f.Create(framework.NewPyTorchJob("torch").WithReplicas("master", 1).WithReplicas("worker", 1))
	f.WaitForJob(tf, "3 running replicas", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return job.JobStatus().Phase == v1beta1.JobRunning && job.JobStatus().Aggregate.Running == 3, nil
	})
	f.WaitForPhase(pt, v1beta1.JobRunning)

	table := parseTable(t, f.MustKubectl("get", "tj"))
	if want := []string{"NAME", "PHASE", "READY", "RESTARTS", "PROGRESS", "AGE"}; !slices.Equal(table.header, want) {
		t.Fatalf("kubectl get tj columns %q, want %q", table.header, want)
	}
	row := table.row(t, "columns")
	if row["PHASE"] != "Running" || row["READY"] != "3/3" || row["RESTARTS"] != "0" {
		t.Errorf("kubectl get tj row %v, want Running 3/3 with 0 restarts", row)
	}

	table = parseTable(t, f.MustKubectl("get", "tj", "-o", "wide"))
	if want := []string{"NAME", "PHASE", "READY", "RESTARTS", "PROGRESS", "AGE", "MODE", "REPLICAS", "DURATION", "ETA", "METRIC"}; !slices.Equal(table.header, want) {
		t.Fatalf("kubectl get tj -o wide columns %q, want %q", table.header, want)
	}
	row = table.row(t, "columns")
	if row["MODE"] != "Immediate" || row["REPLICAS"] != "chief:1,worker:2" || row["DURATION"] == "" || row["DURATION"] == "<none>" {
		t.Errorf("kubectl get tj -o wide row %v, want mode Immediate, replicas chief:1,worker:2 and a duration", row)
	}

	out := f.MustKubectl("get", "trainingjobs", "-o", "name")
	names := strings.Fields(out)
	slices.Sort(names)
	want := []string{"pytorchtrainingjob.batch.tensorstack.dev/torch", "tensorflowtrainingjob.batch.tensorstack.dev/columns"}
	if !slices.Equal(names, want) {
		t.Errorf("kubectl get trainingjobs -o name = %q, want %q", names, want)
	}
	// The plain table output of the category prints both kinds' tables.
	out = f.MustKubectl("get", "trainingjobs")
	for _, s := range want {
		if !strings.Contains(out, s) {
			t.Errorf("kubectl get trainingjobs does not list %s:\n%s", s, out)
		}
	}
}

// table is kubectl's column output.
type table struct {
	header []string
	rows   []map[string]string
	raw    string
}

// parseTable splits kubectl's table output into columns at the header's
// column starts, where kubectl aligns every cell; an empty cell is "".
func parseTable(t *testing.T, out string) table {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 {
		t.Fatalf("empty table")
	}
	tb := table{header: strings.Fields(lines[0]), raw: out}
	starts := make([]int, 0, len(tb.header))
	for i, from := 0, 0; i < len(tb.header); i++ {
		at := strings.Index(lines[0][from:], tb.header[i]) + from
		starts = append(starts, at)
		from = at + len(tb.header[i])
	}
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, h := range tb.header {
			begin, end := min(starts[i], len(l)), len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			row[h] = strings.TrimSpace(l[begin:end])
		}
		tb.rows = append(tb.rows, row)
	}
	return tb
}

func (tb table) row(t *testing.T, name string) map[string]string {
	t.Helper()
	for _, r := range tb.rows {
		if r["NAME"] == name {
			return r
		}
	}
	t.Fatalf("no row %s in:\n%s", name, tb.raw)
	return nil
}

// TestKubectlServerSideApply: server-side apply records the manager's
// fields, another manager changing one of them conflicts, and
// --force-conflicts takes the field over.
func TestKubectlServerSideApply(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ssa")
	b := framework.NewTFJob("applied").WithReplicas("worker", 1).BackoffLimit(2)
	ref := f.Ref(framework.KindTF, "applied")
	file := f.WriteFile("job.yaml", b.Manifest(f.Namespace))

	out := f.MustKubectl("apply", "--server-side", "-f", file)
	if !strings.Contains(out, "tensorflowtrainingjob.batch.tensorstack.dev/applied serverside-applied") {
		t.Errorf("kubectl apply --server-side printed %q", out)
	}
	job := f.MustGetJob(ref)
	if !hasManager(job.GetManagedFields(), "kubectl", metav1.ManagedFieldsOperationApply) {
		t.Fatalf("managedFields %+v have no Apply entry of manager kubectl", job.GetManagedFields())
	}
	// Applying the same manifest again is a no-op success.
	f.MustKubectl("apply", "--server-side", "-f", file)

	other := f.WriteFile("other.yaml", b.BackoffLimit(5).Manifest(f.Namespace))
	r := f.KubectlNS("apply", "--server-side", "--field-manager=other", "-f", other)
	if r.Err == nil {
		t.Fatalf("a second manager changing backoffLimit did not conflict: %s", r)
	}
	if !strings.Contains(strings.ToLower(r.Stderr), "conflict") || !strings.Contains(r.Stderr, "backoffLimit") {
		t.Errorf("the conflict error does not name the conflict and the field:\n%s", r.Stderr)
	}
	if got := *f.MustGetJob(ref).CommonSpec().RunPolicy.BackoffLimit; got != 2 {
		t.Errorf("backoffLimit = %d after the refused apply, want 2", got)
	}

	f.MustKubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", other)
	job = f.MustGetJob(ref)
	if got := *job.CommonSpec().RunPolicy.BackoffLimit; got != 5 {
		t.Errorf("backoffLimit = %d after --force-conflicts, want 5", got)
	}
	if !hasManager(job.GetManagedFields(), "other", metav1.ManagedFieldsOperationApply) {
		t.Errorf("managedFields %+v have no Apply entry of manager other", job.GetManagedFields())
	}
}

func hasManager(entries []metav1.ManagedFieldsEntry, manager string, op metav1.ManagedFieldsOperationType) bool {
	for _, e := range entries {
		if e.Manager == manager && e.Operation == op {
			return true
		}
	}
	return false
}

// TestKubectlPatchAndEdit: a merge patch and kubectl edit change the spec
// and bump the generation.
func TestKubectlPatchAndEdit(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "patch")
	ref := f.Create(framework.NewTFJob("patched").WithReplicas("worker", 1).BackoffLimit(2))
	gen := f.MustGetJob(ref).GetGeneration()

	f.MustKubectl("patch", ref.KubectlName(), "--type=merge", "-p", `{"spec":{"runPolicy":{"backoffLimit":7,"cleanUpPolicy":"none"}}}`)
	job := f.MustGetJob(ref)
	if got := *job.CommonSpec().RunPolicy.BackoffLimit; got != 7 {
		t.Errorf("backoffLimit = %d after the merge patch, want 7", got)
	}
	if got := job.CommonSpec().RunPolicy.CleanUpPolicy; got != v1beta1.CleanUpPolicyNone {
		t.Errorf("cleanUpPolicy = %q after patching it to none, want the canonical None", got)
	}
	if job.GetGeneration() <= gen {
		t.Errorf("generation %d after the patch, was %d", job.GetGeneration(), gen)
	}

	// kubectl edit with an editor that rewrites the field in place.
	editor := f.WriteFile("editor.sh", "#!/bin/sh\nsed -i 's/backoffLimit: 7/backoffLimit: 9/' \"$1\"\n")
	r := f.KubectlEnv([]string{"KUBE_EDITOR=sh " + editor}, "edit", ref.KubectlName())
	if r.Err != nil {
		t.Fatalf("kubectl edit: %s", r)
	}
	if got := *f.MustGetJob(ref).CommonSpec().RunPolicy.BackoffLimit; got != 9 {
		t.Errorf("backoffLimit = %d after kubectl edit, want 9\n%s", got, r)
	}

	// A patch the server refuses: replica types are fixed.
	r = f.KubectlNS("patch", ref.KubectlName(), "--type=json", "-p", `[{"op":"replace","path":"/spec/replicaSpecs/0/type","value":"ps"}]`)
	if r.Err == nil || !strings.Contains(r.Stderr, "replica types") {
		t.Errorf("changing a replica type was not refused with an explanation: %s", r)
	}
}

// TestKubectlPatchOneReplicaType: kubectl patch's default strategic merge
// changes one replicaSpecs entry, found by its type, and keeps the others.
func TestKubectlPatchOneReplicaType(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "patch-type")
	ref := f.Create(framework.NewTFJob("patched").WithReplicas("chief", 1).WithReplicas("worker", 1).Paused())
	f.MustKubectl("patch", ref.KubectlName(), "-p", `{"spec":{"replicaSpecs":[{"type":"worker","replicas":3}]}}`)
	specs := f.MustGetJob(ref).CommonSpec().ReplicaSpecs
	if len(specs) != 2 || specs[0].Type != v1beta1.ReplicaTypeChief || *specs[0].Replicas != 1 ||
		specs[1].Type != v1beta1.ReplicaTypeWorker || *specs[1].Replicas != 3 || len(specs[1].Template.Spec.Containers) != 1 {
		t.Errorf("after patching the worker entry: %+v; want chief 1 and worker 3 with its template", specs)
	}
}

// TestKubectlWait: kubectl wait returns once the job has Completed.
func TestKubectlWait(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "wait")
	ref := f.Create(framework.NewTFJob("waited").WithReplicas("worker", 1).ExitCode(0).RunFor("2s"))
	out := f.MustKubectl("wait", "--for=condition=Completed", ref.KubectlName(), "--timeout=60s")
	if !strings.Contains(out, "condition met") {
		t.Errorf("kubectl wait printed %q", out)
	}
	job := f.MustGetJob(ref)
	if job.JobStatus().Phase != v1beta1.JobSucceeded {
		t.Errorf("phase %s after kubectl wait for Completed, want Succeeded", job.JobStatus().Phase)
	}
	out = f.MustKubectl("wait", "--for=jsonpath={.status.phase}=Succeeded", ref.KubectlName(), "--timeout=30s")
	if !strings.Contains(out, "condition met") {
		t.Errorf("kubectl wait --for=jsonpath printed %q", out)
	}
}

// TestKubectlWatch: kubectl get -w prints the job's phase changes as they
// happen. The job starts paused, so that its first row is printed before
// anything happens, and is then resumed.
func TestKubectlWatch(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "watch")
	ref := f.Create(framework.NewTFJob("watched").WithReplicas("worker", 1).ExitCode(0).RunFor("2s").Paused())
	f.WaitForPhase(ref, v1beta1.JobPaused)
	w := f.StartKubectl(framework.Timeout, "get", "tj", "-w")
	f.Eventually(30*time.Second, "kubectl get tj -w to print the paused job", func(context.Context) (bool, error) {
		if exited, err := w.Exited(); exited {
			return false, framework.Stop("kubectl exited: %v\n%s", err, w.Stderr())
		}
		return watchedPhases(w.Stdout(), "watched")[v1beta1.JobPaused], nil
	})
	f.MustAction(ref, "resume", "")
	f.WaitForPhase(ref, v1beta1.JobSucceeded)
	f.Eventually(30*time.Second, "kubectl get tj -w to print the Succeeded row", func(context.Context) (bool, error) {
		return watchedPhases(w.Stdout(), "watched")[v1beta1.JobSucceeded], nil
	})
	w.Stop()
	if phases := watchedPhases(w.Stdout(), "watched"); !phases[v1beta1.JobRunning] {
		t.Errorf("kubectl get tj -w did not print the Running phase:\n%s", w.Stdout())
	}
	if hdr := strings.Fields(strings.SplitN(w.Stdout(), "\n", 2)[0]); !slices.Equal(hdr, []string{"NAME", "PHASE", "READY", "RESTARTS", "PROGRESS", "AGE"}) {
		t.Errorf("kubectl get tj -w header %q", hdr)
	}
}

// watchedPhases returns the phases of the job's rows in watch output.
func watchedPhases(out, name string) map[v1beta1.JobPhase]bool {
	seen := map[v1beta1.JobPhase]bool{}
	for _, l := range strings.Split(out, "\n") {
		fields := strings.Fields(l)
		if len(fields) >= 2 && fields[0] == name {
			seen[v1beta1.JobPhase(fields[1])] = true
		}
	}
	return seen
}

// TestKubectlSelectors: label selectors and the status.phase field selector.
func TestKubectlSelectors(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "selectors")
	a := f.Create(framework.NewTFJob("team-a-done").Label("team", "a").WithReplicas("worker", 1).ExitCode(0).RunFor("1s"))
	bj := f.Create(framework.NewTFJob("team-b-done").Label("team", "b").WithReplicas("worker", 1).ExitCode(0).RunFor("1s"))
	c := f.Create(framework.NewTFJob("team-a-running").Label("team", "a").WithReplicas("worker", 1))
	p := f.Create(framework.NewPyTorchJob("team-a-torch").Label("team", "a").WithReplicas("worker", 1).ExitCode(0).RunFor("1s"))
	f.WaitForPhase(a, v1beta1.JobSucceeded)
	f.WaitForPhase(bj, v1beta1.JobSucceeded)
	f.WaitForPhase(c, v1beta1.JobRunning)
	f.WaitForPhase(p, v1beta1.JobSucceeded)

	names := func(args ...string) []string {
		t.Helper()
		out := f.MustKubectl(append(args, "-o", "name")...)
		n := strings.Fields(out)
		slices.Sort(n)
		return n
	}
	check := func(got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	tj := func(n string) string { return "tensorflowtrainingjob.batch.tensorstack.dev/" + n }
	pj := func(n string) string { return "pytorchtrainingjob.batch.tensorstack.dev/" + n }

	check(names("get", "tj", "-l", "team=a"), tj("team-a-done"), tj("team-a-running"))
	check(names("get", "tj", "-l", "team!=a"), tj("team-b-done"))
	check(names("get", "tj", "--field-selector", "status.phase=Succeeded"), tj("team-a-done"), tj("team-b-done"))
	check(names("get", "tj", "--field-selector", "status.phase!=Succeeded"), tj("team-a-running"))
	check(names("get", "tj", "-l", "team=a", "--field-selector", "status.phase=Succeeded"), tj("team-a-done"))
	check(names("get", "tj", "--field-selector", "metadata.name=team-b-done"), tj("team-b-done"))
	check(names("get", "pj", "--field-selector", "status.phase=Succeeded"), pj("team-a-torch"))
	check(names("get", "trainingjobs", "-l", "team=a", "--field-selector", "status.phase=Succeeded"), pj("team-a-torch"), tj("team-a-done"))

	// An unsupported field is refused with the supported ones named.
	r := f.KubectlNS("get", "tj", "--field-selector", "spec.runMode=x")
	if r.Err == nil {
		t.Errorf("an unsupported field selector was accepted: %s", r)
	}
	// And the clientset sees the same thing.
	list, err := f.Training.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).List(f.Context(),
		metav1.ListOptions{LabelSelector: "team=a", FieldSelector: "status.phase=Running"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "team-a-running" {
		t.Errorf("clientset list team=a, status.phase=Running = %v", itemNames(list.Items))
	}
}

func itemNames(items []v1beta1.TensorFlowTrainingJob) []string {
	var n []string
	for _, i := range items {
		n = append(n, fmt.Sprintf("%s(%s)", i.Name, i.Status.Phase))
	}
	return n
}
