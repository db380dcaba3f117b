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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// The ways past a Kueue quota that queueing fails closed against, each
// tried on the local stack's Kueue: every test holds a job that tries one,
// records every pod of its namespace while it holds, and requires none.
//
// hack/test-e2e.sh runs the controller with --manage-jobs-without-queue-name
// and --managed-jobs-namespace-selector=e2e.tensorstack.dev/kueue-managed=true,
// as an admin sets them to match Kueue's Configuration, so that only the
// namespaces these tests label are managed; and with a 2 s
// --queueing-recheck-period.

// managedNamespaceLabel puts a namespace under Kueue's management of jobs
// that name no queue, on the e2e stack.
const managedNamespaceLabel = "e2e.tensorstack.dev/kueue-managed"

// holdPeriod is how long a bypass must create no pod: several rechecks of
// the queueing system, and several reconciles of the job.
const holdPeriod = 15 * time.Second

// assertNoPodsFor records every pod of the test's namespace for d and
// fails the test if there was one.
func assertNoPodsFor(t *testing.T, f *framework.Framework, d time.Duration, why string) {
	t.Helper()
	history, err := framework.WatchPodHistory(f.Context(), f.Kube, f.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer history.Stop()
	time.Sleep(d)
	if n := history.Count(); n != 0 {
		t.Fatalf("%d pods created in %s while %s: %v", n, d, why, history.Names())
	}
}

// waitQueued waits until the job waits with the reason, and returns its
// Queued condition's message.
func waitQueued(f *framework.Framework, ref framework.JobRef, reason string) string {
	f.T.Helper()
	job := f.WaitForJob(ref, "Queued=True "+reason, framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return queuedReason(job) == reason, nil
	})
	return framework.Condition(job, v1beta1.ConditionQueued).Message
}

// hasWarning says whether the job has a Warning event with the reason.
func hasWarning(f *framework.Framework, ref framework.JobRef, reason string) bool {
	f.T.Helper()
	events, err := f.JobEvents(f.Context(), ref)
	if err != nil {
		f.T.Fatal(err)
	}
	for _, ev := range events {
		if ev.Type == "Warning" && ev.Reason == reason {
			return true
		}
	}
	return false
}

// TestKueueRemovedLabelKeepsWaiting: removing the queue label from a job
// waiting in a queue with no room does not release it.
func TestKueueRemovedLabelKeepsWaiting(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-unlabel")
	needsKueue(t, f)
	queue := f.NewKueueQueue(nil, 0, "full")
	ref := f.Create(fourGPUJob("waits", queue).ExitCode(0).RunFor("5s"))
	waitQueued(f, ref, v1beta1.ReasonWaitingForAdmission)

	f.MustKubectl("label", ref.KubectlName(), "-n", f.Namespace, "kueue.x-k8s.io/queue-name-")
	message := waitQueued(f, ref, v1beta1.ReasonQueueNameRemoved)
	if !strings.Contains(message, queue) {
		t.Errorf("Queued message %q does not name the queue the job still waits in", message)
	}
	assertNoPodsFor(t, f, holdPeriod, "the job's queue label was removed")
	if !hasWarning(f, ref, v1beta1.ReasonQueueNameRemoved) {
		t.Errorf("no Warning event %s", v1beta1.ReasonQueueNameRemoved)
	}
}

// TestKueueAdmittedJobKeepsItsQueue: the queue label of an admitted job
// cannot be removed or changed: kubectl gets a 422 naming the field, and
// the job runs on under its admission.
func TestKueueAdmittedJobKeepsItsQueue(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-keep")
	needsKueue(t, f)
	queue := f.NewKueueQueue(nil, 4, "lq")
	ref := f.Create(fourGPUJob("runs", queue).ExitCode(0).RunFor("60s"))
	f.WaitForRunningPods(ref, 4)
	f.WaitForJob(ref, "Queued=False Admitted", framework.Timeout, func(job v1beta1.TrainingJob) (bool, error) {
		return framework.HasCondition(job, v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted), nil
	})
	for _, args := range [][]string{
		{"label", ref.KubectlName(), "-n", f.Namespace, "kueue.x-k8s.io/queue-name-"},
		{"label", ref.KubectlName(), "-n", f.Namespace, "--overwrite", "kueue.x-k8s.io/queue-name=other"},
	} {
		res := f.Kubectl(args...)
		if res.Err == nil {
			t.Fatalf("kubectl %v succeeded on an admitted job", args)
		}
		if !strings.Contains(res.Stderr, "Forbidden") || !strings.Contains(res.Stderr, "metadata.labels[kueue.x-k8s.io/queue-name]") {
			t.Errorf("kubectl %v: %q; want a 422 naming metadata.labels[kueue.x-k8s.io/queue-name]", args, res.Stderr)
		}
	}
	if got := f.MustGetJob(ref).GetLabels()["kueue.x-k8s.io/queue-name"]; got != queue {
		t.Errorf("queue label %q, want %q kept", got, queue)
	}
}

// TestKueueDefaultLocalQueue: a job that names no queue, in a managed
// namespace with a LocalQueue named default, goes to that queue, as
// Kueue's own kinds do, and waits there: the queue has no room. The queue
// is made a moment before the job, maybe before the controller's cache
// holds it: the job is never told to name a queue.
func TestKueueDefaultLocalQueue(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-default")
	needsKueue(t, f)
	labelNamespace(f, managedNamespaceLabel, "true")
	f.NewKueueQueue(nil, 0, "default")
	ref := f.Create(framework.NewPyTorchJob("unnamed").WithReplicas("master", 1).WithReplicas("worker", 3).GPUs(1).
		ExitCode(0).RunFor("5s"))
	waitQueued(f, ref, v1beta1.ReasonWaitingForAdmission)
	assertNoPodsFor(t, f, holdPeriod, "the job waits in the namespace's default LocalQueue")
	wl, err := f.Workload(f.Context(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if wl.Spec.QueueName != "default" {
		t.Errorf("Workload in queue %q, want default", wl.Spec.QueueName)
	}
	if hasWarning(f, ref, v1beta1.ReasonQueueNameRequired) {
		t.Errorf("the job was told to name a queue (event %s) while its namespace had a default LocalQueue",
			v1beta1.ReasonQueueNameRequired)
	}
}

// TestKueueManagedNamespaceRequiresAQueue: with Kueue's
// manageJobsWithoutQueueName, a job that names no queue in a managed
// namespace waits until it names one; named, it runs under its admission.
func TestKueueManagedNamespaceRequiresAQueue(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-managed")
	needsKueue(t, f)
	labelNamespace(f, managedNamespaceLabel, "true")
	queue := f.NewKueueQueue(nil, 4, "lq")
	ref := f.Create(framework.NewPyTorchJob("unnamed").WithReplicas("master", 1).WithReplicas("worker", 3).GPUs(1).
		ExitCode(0).RunFor("5s"))
	message := waitQueued(f, ref, v1beta1.ReasonQueueNameRequired)
	if !strings.Contains(message, "manageJobsWithoutQueueName") {
		t.Errorf("Queued message %q does not say why", message)
	}
	assertNoPodsFor(t, f, holdPeriod, "the job names no queue in a managed namespace")
	if !hasWarning(f, ref, v1beta1.ReasonQueueNameRequired) {
		t.Errorf("no Warning event %s", v1beta1.ReasonQueueNameRequired)
	}
	f.MustKubectl("label", ref.KubectlName(), "-n", f.Namespace, "kueue.x-k8s.io/queue-name="+queue)
	checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
}

// TestKueueForeignPrebuiltWorkload: a job that names a Workload built for
// other pods (here: one worker where the job has three, admitted) does not
// take it and creates no pod.
func TestKueueForeignPrebuiltWorkload(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "kueue-foreign")
	needsKueue(t, f)
	queue := f.NewKueueQueue(nil, 8, "lq")
	ctx := f.Context()
	builder := fourGPUJob("borrower", queue).Annotate("kueue.x-k8s.io/prebuilt-workload-name", "foreign").
		ExitCode(0).RunFor("5s")
	job := builder.Build(f.Namespace)
	template := job.CommonSpec().ReplicaSpecs[0].Template
	foreign := &kueuev1beta2.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: f.Namespace,
			Labels: v1beta1.JobLabels(string(framework.KindPyTorch), "borrower")},
		Spec: kueuev1beta2.WorkloadSpec{QueueName: kueuev1beta2.LocalQueueName(queue), PodSets: []kueuev1beta2.PodSet{
			{Name: "master", Count: 1, Template: template},
			{Name: "worker", Count: 1, Template: template},
		}},
	}
	if _, err := f.Kueue().KueueV1beta2().Workloads(f.Namespace).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Eventually(framework.Timeout, "Kueue admits the foreign Workload", func(ctx context.Context) (bool, error) {
		wl, err := f.Kueue().KueueV1beta2().Workloads(f.Namespace).Get(ctx, "foreign", metav1.GetOptions{})
		return err == nil && wl.Status.Admission != nil, err
	})
	ref := f.Create(builder)
	message := waitQueued(f, ref, v1beta1.ReasonPrebuiltWorkloadMismatch)
	if !strings.Contains(message, "was not built for it") {
		t.Errorf("Queued message %q does not say how the pod sets differ", message)
	}
	assertNoPodsFor(t, f, holdPeriod, "the job names a Workload built for other pods")
	wl, err := f.Kueue().KueueV1beta2().Workloads(f.Namespace).Get(ctx, "foreign", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(wl.OwnerReferences) != 0 {
		t.Errorf("the foreign Workload got owners %+v", wl.OwnerReferences)
	}
}

// TestKueueUnservedWhileJobsWait runs alone (not parallel): it stops
// serving Kueue's v1beta2 Workloads, as a broken upgrade or removal would.
// A job that names a queue with room waits, saying why, with no pod; once
// the API is served again the job is admitted and runs, with no restart.
// So does a job that names no queue in a managed namespace: the controller
// cannot see the namespace's default LocalQueue (it has no room), and once
// it can, the job waits in it.
func TestKueueUnservedWhileJobsWait(t *testing.T) {
	f := framework.New(t, "kueue-unserved")
	needsKueue(t, f)
	queue := f.NewKueueQueue(nil, 4, "lq")
	labelNamespace(f, managedNamespaceLabel, "true")
	f.NewKueueQueueWithFlavor(&kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: f.Namespace + "-none"}}, 0, "default")
	kueueUsable := kueueUsableWaiter(f)
	setServed(t, f, "workloads.kueue.x-k8s.io", "v1beta2", false)
	kueueUsable(false, "NotServed")
	reserved := false
	t.Cleanup(func() {
		if !reserved {
			setServed(t, f, "workloads.kueue.x-k8s.io", "v1beta2", true)
		}
	})
	ref := f.Create(fourGPUJob("waits", queue).ExitCode(0).RunFor("5s"))
	unnamed := f.Create(framework.NewPyTorchJob("unnamed").WithReplicas("master", 1).GPUs(1).ExitCode(0).RunFor("5s"))
	message := waitQueued(f, ref, v1beta1.ReasonQueueingUnavailable)
	if !strings.Contains(message, "does not serve kueue.x-k8s.io/v1beta2") {
		t.Errorf("Queued message %q does not say why", message)
	}
	message = waitQueued(f, unnamed, v1beta1.ReasonQueueingUnavailable)
	if !strings.Contains(message, "does not serve kueue.x-k8s.io/v1beta2") {
		t.Errorf("the unnamed job's Queued message %q does not say why", message)
	}
	assertNoPodsFor(t, f, holdPeriod, "Kueue's Workloads are not served")
	for _, r := range []framework.JobRef{ref, unnamed} {
		if !hasWarning(f, r, v1beta1.ReasonQueueingUnavailable) {
			t.Errorf("%s: no Warning event %s", r.Name, v1beta1.ReasonQueueingUnavailable)
		}
	}
	setServed(t, f, "workloads.kueue.x-k8s.io", "v1beta2", true)
	reserved = true
	kueueUsable(true, "Available")
	checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
	waitQueued(f, unnamed, v1beta1.ReasonWaitingForAdmission)
	wl, err := f.Workload(f.Context(), unnamed)
	if err != nil {
		t.Fatal(err)
	}
	if wl.Spec.QueueName != "default" {
		t.Errorf("the unnamed job's Workload is in queue %q, want default", wl.Spec.QueueName)
	}
	if pods := f.Pods(unnamed); len(pods) != 0 {
		t.Errorf("the unnamed job has %d pods in a LocalQueue without room", len(pods))
	}
	// Not left waiting into the tests that run after this one alone.
	if err := f.DeleteJob(f.Context(), unnamed); err != nil {
		t.Error(err)
	}
}

// TestKueueRightsRevokedWhileJobsWait runs alone: it unbinds the
// controller's Kueue ClusterRole. A job that names a queue with room waits,
// saying why, with no pod; bound again, the job runs, with no restart.
func TestKueueRightsRevokedWhileJobsWait(t *testing.T) {
	f := framework.New(t, "kueue-revoked")
	needsKueue(t, f)
	const binding = "tensorstack:training-controller-manager:kueue"
	saved := f.MustKubectl("get", "clusterrolebinding", binding, "-o", "json")
	if !strings.Contains(saved, "training-controller-manager") {
		t.Skipf("the controller runs without a ServiceAccount's rights here: %s", saved)
	}
	var object map[string]any
	if err := json.Unmarshal([]byte(saved), &object); err != nil {
		t.Fatal(err)
	}
	meta := object["metadata"].(map[string]any)
	object["metadata"] = map[string]any{"name": meta["name"], "labels": meta["labels"]}
	restore, err := json.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	queue := f.NewKueueQueue(nil, 4, "lq")
	kueueUsable := kueueUsableWaiter(f)
	f.MustKubectl("delete", "clusterrolebinding", binding)
	restored := false
	restoreBinding := func() {
		if res := f.KubectlInput(string(restore), "apply", "-f", "-"); res.Err != nil {
			t.Errorf("restoring ClusterRoleBinding %s: %v", binding, res)
		}
		restored = true
	}
	t.Cleanup(func() {
		if !restored {
			restoreBinding()
		}
	})
	kueueUsable(false, "Forbidden")
	ref := f.Create(fourGPUJob("waits", queue).ExitCode(0).RunFor("5s"))
	message := waitQueued(f, ref, v1beta1.ReasonQueueingUnavailable)
	if !strings.Contains(message, "may not") {
		t.Errorf("Queued message %q does not say what the controller may not do", message)
	}
	assertNoPodsFor(t, f, holdPeriod, "the controller may not use Kueue")
	restoreBinding()
	kueueUsable(true, "Available")
	checkSucceeded(t, f.WaitForPhase(ref, v1beta1.JobSucceeded))
}

// kueueUsableWaiter returns a function that waits until the controller's
// series says that it can, or cannot, queue with Kueue, for the reason
// given: a job created before it noticed would be refused by the API it
// just lost, not held by the controller; and the series is what the alert
// reads.
func kueueUsableWaiter(f *framework.Framework) func(usable bool, reason string) {
	f.T.Helper()
	token := scraperToken(f, "kueue-scraper", true)
	return func(usable bool, reason string) { waitKueueUsable(f, token, usable, reason) }
}

func waitKueueUsable(f *framework.Framework, token string, usable bool, reason string) {
	f.T.Helper()
	url := controllerMetricsURL(f)
	want := 0.0
	if usable {
		want = 1
	}
	f.Eventually(framework.Timeout, fmt.Sprintf("training_controller_kueue_usable{reason=%q} %v", reason, want),
		func(ctx context.Context) (bool, error) {
			sc, err := fetchMetrics(ctx, url, token)
			if err != nil {
				return false, err
			}
			for _, s := range sc.Samples {
				if s.Name == "training_controller_kueue_usable" {
					return s.Labels["reason"] == reason && s.Value == want, nil
				}
			}
			return false, nil
		})
}

// labelNamespace sets a label on the test's namespace.
func labelNamespace(f *framework.Framework, key, value string) {
	f.T.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := f.Kube.CoreV1().Namespaces().Patch(f.Context(), f.Namespace, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

// setServed serves a version of a CRD, or stops serving it, and waits
// until discovery says so.
func setServed(t *testing.T, f *framework.Framework, crd, version string, served bool) {
	t.Helper()
	out := f.MustKubectl("get", "crd", crd, "-o", "jsonpath={.spec.versions[*].name}")
	index := -1
	for i, v := range strings.Fields(out) {
		if v == version {
			index = i
		}
	}
	if index < 0 {
		t.Fatalf("CRD %s has no version %s (%s)", crd, version, out)
	}
	patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/versions/%d/served","value":%t}]`, index, served)
	f.MustKubectl("patch", "crd", crd, "--type=json", "-p", patch)
	resource, group, _ := strings.Cut(crd, ".")
	f.Eventually(framework.Timeout, fmt.Sprintf("discovery shows %s %s/%s served=%t", resource, group, version, served),
		func(ctx context.Context) (bool, error) {
			list, err := f.Kube.Discovery().ServerResourcesForGroupVersion(group + "/" + version)
			found := false
			if err == nil {
				for _, r := range list.APIResources {
					found = found || r.Name == resource
				}
			}
			return found == served, nil
		})
}
