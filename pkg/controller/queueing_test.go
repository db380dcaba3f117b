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
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/kueue"
)

// The tests of queueing that fails closed: every way past a queue that
// was once open leaves the job waiting, with no pod.

// newGatedKueueFixture is a fixture whose controller decides with a real
// kueue.Gate whether Kueue is usable, from *answer, each time the test
// calls checkQueueing. kubeObjs go to the fake Kubernetes clientset
// (namespaces), kueueObjs to Kueue's.
func newGatedKueueFixture(t *testing.T, answer *kueue.Availability, management kueue.Management,
	kueueObjs []runtime.Object, objs ...runtime.Object) *fixture {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	return newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(1000), false, func(f *fixture, o *Options) {
		f.kueueClient = kueuefake.NewSimpleClientset(kueueObjs...) //nolint:staticcheck // merge patches, as the controller sends
		assignUIDs(f.kueueClient)
		o.Queueing = kueue.NewGate(kueue.GateConfig{
			Probe:    func(context.Context) kueue.Availability { return *answer },
			NewQueue: func() *kueue.Queue { return kueue.New(f.kueueClient, 0) },
		})
		o.KueueManagement = management
	}, objs...)
}

// checkQueueing has the Gate ask again, until Kueue's caches are filled.
func (f *fixture) checkQueueing() {
	f.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.c.queueing.Check(f.ctx)
		if _, a := f.c.queueing.Current(); a.Reason != kueue.ReasonSyncing {
			f.observeKueue()
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatal("Kueue's caches never filled")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var (
	checkFailed  = kueue.Availability{Reason: kueue.ReasonCheckFailed, Message: "discovering the API groups: a timeout"}
	notServed    = kueue.Availability{Reason: kueue.ReasonNotServed, Message: "the cluster does not serve kueue.x-k8s.io/v1beta2 workloads"}
	notInstalled = kueue.Availability{Reason: kueue.ReasonNotInstalled, Message: "the cluster serves no version of Kueue's API"}
)

func labelledJob(name, queue string) *jobBuilder {
	b := gpuJob(name)
	b.obj().SetLabels(map[string]string{kueue.LabelQueueName: queue})
	return b
}

func (f *fixture) workloadNames() []string {
	f.t.Helper()
	list, err := f.kueueClient.KueueV1beta2().Workloads("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, wl := range list.Items {
		out = append(out, wl.Name+"@"+string(wl.Spec.QueueName))
	}
	return out
}

// TestQueuedJobWaitsWhileKueueCannotBeUsed: a job that names a queue
// creates no pod while Kueue is not served or may not be used; it waits,
// saying why in its condition, an event and the series, and is queued as
// soon as Kueue can be used.
func TestQueuedJobWaitsWhileKueueCannotBeUsed(t *testing.T) {
	for name, answer := range map[string]kueue.Availability{
		"not served": notServed,
		"forbidden":  {Reason: kueue.ReasonForbidden, Message: "this controller may not create workloads.kueue.x-k8s.io"},
	} {
		t.Run(name, func(t *testing.T) {
			answer := answer
			job := labelledJob("p", "user-queue").obj()
			f := newGatedKueueFixture(t, &answer, kueue.Management{}, nil, job)
			RegisterMetrics()
			before := counterValue(t, heldJobs.WithLabelValues("PyTorchTrainingJob", v1beta1.ReasonQueueingUnavailable))
			f.checkQueueing()
			f.step(job)
			f.step(job)
			if pods := f.podNames(); len(pods) != 0 {
				t.Fatalf("created %v while Kueue cannot be used", pods)
			}
			st := f.status(job)
			assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonQueueingUnavailable)
			if c := condition(st, v1beta1.ConditionQueued); !strings.Contains(c.Message, answer.Message) {
				t.Errorf("Queued message %q does not say why (%s)", c.Message, answer.Message)
			}
			if !hasEvent(f.events(), corev1.EventTypeWarning, v1beta1.ReasonQueueingUnavailable) {
				t.Errorf("no %s event", v1beta1.ReasonQueueingUnavailable)
			}
			if n := counterValue(t, heldJobs.WithLabelValues("PyTorchTrainingJob", v1beta1.ReasonQueueingUnavailable)) - before; n != 1 {
				t.Errorf("%s rose by %v, want 1 (one job, reconciled twice)", "queue_held_jobs_total", n)
			}

			answer = kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
			f.checkQueueing()
			f.step(job)
			if got := f.workloadNames(); len(got) != 1 || got[0] != "pj-p@user-queue" {
				t.Fatalf("Workloads %v once Kueue can be used, want pj-p in user-queue", got)
			}
			f.step(job)
			assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonWaitingForAdmission)
			if pods := f.podNames(); len(pods) != 0 {
				t.Fatalf("created %v before admission", pods)
			}
		})
	}
}

// TestAdmittedJobKeepsRunningWhenKueueGoesAway: the quota an admission
// gave is not taken back because Kueue cannot be read for a while: the
// running job keeps its pods.
func TestAdmittedJobKeepsRunningWhenKueueGoesAway(t *testing.T) {
	answer := kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
	job := labelledJob("p", "user-queue").obj()
	f := newGatedKueueFixture(t, &answer, kueue.Management{}, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.checkQueueing()
	f.step(job)
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.step(job)
	f.step(job)
	if n := len(f.podNames()); n != 4 {
		t.Fatalf("%d pods once admitted, want 4", n)
	}
	answer = notServed
	f.checkQueueing()
	f.step(job)
	if n := len(f.podNames()); n != 4 || len(f.deletedPodNames()) != 0 {
		t.Fatalf("%d pods, deleted %v after Kueue went away; want the admitted job's 4 kept", n, f.deletedPodNames())
	}
	assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionFalse, v1beta1.ReasonAdmitted)
}

// TestRemovingTheQueueNameKeepsTheJobWaiting: a waiting job whose queue
// label is removed stays in its queue and creates no pod; its condition
// says why. Named again, it waits as before.
func TestRemovingTheQueueNameKeepsTheJobWaiting(t *testing.T) {
	answer := kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
	job := labelledJob("p", "user-queue").obj()
	f := newGatedKueueFixture(t, &answer, kueue.Management{}, []runtime.Object{resourceFlavor("gpu-a", nil)}, job)
	f.checkQueueing()
	f.step(job)
	f.step(job)
	assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonWaitingForAdmission)

	unlabelled := f.job(job).DeepCopyObject().(v1beta1.TrainingJob)
	unlabelled.SetLabels(nil)
	f.updateJob(unlabelled)
	f.step(unlabelled)
	f.step(unlabelled)
	if pods := f.podNames(); len(pods) != 0 {
		t.Fatalf("created %v once the queue label was removed", pods)
	}
	st := f.status(unlabelled)
	assertCondition(t, st, v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonQueueNameRemoved)
	if c := condition(st, v1beta1.ConditionQueued); !strings.Contains(c.Message, "user-queue") {
		t.Errorf("Queued message %q does not name the queue it still waits in", c.Message)
	}
	if got := f.workloadNames(); len(got) != 1 || got[0] != "pj-p@user-queue" {
		t.Errorf("Workloads %v, want pj-p kept in user-queue", got)
	}

	// Admitted in the queue it waits in, it runs: the quota is granted.
	f.setWorkload("pj-p", admit("gpu-a", "master", "worker"))
	f.step(unlabelled)
	f.step(unlabelled)
	if n := len(f.podNames()); n != 4 {
		t.Fatalf("%d pods once its Workload was admitted, want 4", n)
	}
}

// TestDefaultLocalQueue: a new job that names no queue, in a namespace with
// a LocalQueue named default, is queued there (Kueue's LocalQueueDefaulting).
func TestDefaultLocalQueue(t *testing.T) {
	selector, err := labels.Parse(kueue.DefaultManagedJobsNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	management := kueue.Management{NamespaceSelector: selector}
	answer := kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
	defaultQueue := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "full"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{corev1.LabelMetadataName: "ns"}}}
	job := gpuJob("p").obj()
	f := newGatedKueueFixture(t, &answer, management, []runtime.Object{defaultQueue}, ns, job)
	f.checkQueueing()
	f.step(job)
	f.step(job)
	if pods := f.podNames(); len(pods) != 0 {
		t.Fatalf("created %v for a job that Kueue puts in the default LocalQueue", pods)
	}
	if got := f.workloadNames(); len(got) != 1 || got[0] != "pj-p@default" {
		t.Fatalf("Workloads %v, want pj-p in the default LocalQueue", got)
	}
	assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonWaitingForAdmission)
}

// TestDefaultLocalQueueLeavesOthersAlone: in a namespace Kueue does not
// manage, a job that names no queue runs; one that started before the
// default LocalQueue existed keeps running.
func TestDefaultLocalQueueLeavesOthersAlone(t *testing.T) {
	answer := kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
	cases := map[string]struct {
		selector string
		started  bool
	}{
		"a namespace Kueue does not manage": {"team=vision", false},
		"a job that started unqueued":       {kueue.DefaultManagedJobsNamespaceSelector, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			selector, err := labels.Parse(tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			b := gpuJob("p")
			if tc.started {
				b.obj().JobStatus().StartTime = &metav1.Time{Time: testStart}
				b.obj().JobStatus().Phase = v1beta1.JobRunning
			}
			job := b.obj()
			defaultQueue := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns"}}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{corev1.LabelMetadataName: "ns"}}}
			f := newGatedKueueFixture(t, &answer, kueue.Management{NamespaceSelector: selector}, []runtime.Object{defaultQueue}, ns, job)
			f.checkQueueing()
			f.step(job)
			if n := len(f.podNames()); n != 4 {
				t.Fatalf("created %d pods, want 4: Kueue leaves this job alone", n)
			}
			if got := f.workloadNames(); len(got) != 0 {
				t.Errorf("Workloads %v, want none", got)
			}
		})
	}
}

// TestManageJobsWithoutQueueName: with Kueue's manageJobsWithoutQueueName,
// a job that names no queue in a selected namespace waits until it names
// one, even while Kueue cannot be used; elsewhere it runs.
func TestManageJobsWithoutQueueName(t *testing.T) {
	selector, err := labels.Parse("team=vision")
	if err != nil {
		t.Fatal(err)
	}
	available := kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
	for name, tc := range map[string]struct {
		nsLabels   map[string]string
		answer     kueue.Availability
		wantPods   int
		wantReason string
	}{
		"selected namespace": {map[string]string{"team": "vision"}, available, 0, v1beta1.ReasonQueueNameRequired},
		// A default LocalQueue, which the controller cannot see now, would
		// take the job: naming a queue is not what it waits for.
		"selected namespace, Kueue not served":    {map[string]string{"team": "vision"}, notServed, 0, v1beta1.ReasonQueueingUnavailable},
		"selected namespace, Kueue not installed": {map[string]string{"team": "vision"}, notInstalled, 0, v1beta1.ReasonQueueNameRequired},
		"other namespace":                         {map[string]string{"team": "nlp"}, available, 4, ""},
	} {
		t.Run(name, func(t *testing.T) {
			answer := tc.answer
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: tc.nsLabels}}
			job := gpuJob("p").obj()
			f := newGatedKueueFixture(t, &answer, kueue.Management{ManageJobsWithoutQueueName: true, NamespaceSelector: selector}, nil, ns, job)
			f.checkQueueing()
			f.step(job)
			f.step(job)
			if n := len(f.podNames()); n != tc.wantPods {
				t.Fatalf("created %d pods, want %d", n, tc.wantPods)
			}
			if tc.wantReason != "" {
				assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, tc.wantReason)
				if !hasEvent(f.events(), corev1.EventTypeWarning, tc.wantReason) {
					t.Errorf("no %s event", tc.wantReason)
				}
			}
		})
	}
}

// TestUnnamedJobWhileKueueCannotBeUsed: a job that names no queue, in a
// namespace where Kueue would put it in a default LocalQueue, waits while
// Kueue is installed but cannot be used (the controller cannot tell whether
// the namespace has one), and is queued in it once Kueue can be used; it
// runs at once where Kueue is not installed, or would leave it alone.
func TestUnnamedJobWhileKueueCannotBeUsed(t *testing.T) {
	kueueDefault, err := labels.Parse(kueue.DefaultManagedJobsNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	forbidden := kueue.Availability{Reason: kueue.ReasonForbidden, Message: "this controller may not list workloads"}
	for name, tc := range map[string]struct {
		namespace string
		answer    *kueue.Availability // nil: the Gate has not checked yet
		wantPods  int
	}{
		"Kueue's v1beta2 not served": {"team-a", &notServed, 0},
		"Kueue forbidden":            {"team-a", &forbidden, 0},
		"the check failing":          {"team-a", &checkFailed, 0},
		"before the first check":     {"team-a", nil, 0},
		"Kueue not installed":        {"team-a", &notInstalled, 4},
		"a namespace Kueue leaves":   {"kube-system", &notServed, 4},
	} {
		t.Run(name, func(t *testing.T) {
			answer := kueue.Availability{}
			if tc.answer != nil {
				answer = *tc.answer
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{corev1.LabelMetadataName: tc.namespace}}}
			// The default LocalQueue has no quota: a job in it never runs.
			defaultQueue := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: kueue.DefaultLocalQueue, Namespace: "ns"}}
			job := gpuJob("p").obj()
			f := newGatedKueueFixture(t, &answer, kueue.Management{NamespaceSelector: kueueDefault},
				[]runtime.Object{defaultQueue}, ns, job)
			if tc.answer != nil {
				f.checkQueueing()
			}
			f.step(job)
			f.step(job)
			if n := len(f.podNames()); n != tc.wantPods {
				t.Fatalf("created %d pods, want %d", n, tc.wantPods)
			}
			if tc.wantPods != 0 {
				return
			}
			assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonQueueingUnavailable)
			if !hasEvent(f.events(), corev1.EventTypeWarning, v1beta1.ReasonQueueingUnavailable) {
				t.Errorf("no %s event", v1beta1.ReasonQueueingUnavailable)
			}

			// Kueue can be used again: the job is queued in the default
			// LocalQueue, and still has no pod.
			answer = kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
			f.checkQueueing()
			f.expectWaitingInDefaultQueue(job)
		})
	}
}

// TestUnnamedJobRunsOnceKueueLeavesIt: a job that names no queue waits
// while Kueue cannot be used; once it can, and the namespace has no default
// LocalQueue, the job runs, and is no longer said to be queued. So it does
// when the next check finds no Kueue at all.
func TestUnnamedJobRunsOnceKueueLeavesIt(t *testing.T) {
	for name, then := range map[string]kueue.Availability{
		"Kueue usable, no default LocalQueue": {Usable: true, Reason: kueue.ReasonAvailable},
		"no Kueue at all":                     notInstalled,
	} {
		t.Run(name, func(t *testing.T) { testUnnamedJobRunsOnceKueueLeavesIt(t, then) })
	}
}

func testUnnamedJobRunsOnceKueueLeavesIt(t *testing.T, then kueue.Availability) {
	kueueDefault, err := labels.Parse(kueue.DefaultManagedJobsNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	answer := checkFailed
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{corev1.LabelMetadataName: "ns"}}}
	job := gpuJob("p").obj()
	f := newGatedKueueFixture(t, &answer, kueue.Management{NamespaceSelector: kueueDefault}, nil, ns, job)
	f.checkQueueing()
	f.step(job)
	f.step(job)
	if n := len(f.podNames()); n != 0 {
		t.Fatalf("created %d pods while Kueue could not be used", n)
	}
	assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonQueueingUnavailable)

	answer = then
	f.checkQueueing()
	f.step(job)
	f.step(job)
	if n := len(f.podNames()); n != 4 {
		t.Fatalf("created %d pods, want 4: Kueue leaves a job that names no queue alone here", n)
	}
	if c := meta.FindStatusCondition(f.status(job).Conditions, v1beta1.ConditionQueued); c != nil {
		t.Errorf("condition Queued = %s/%s (%s), want none: the job was never queued", c.Status, c.Reason, c.Message)
	}
	if got := f.workloadNames(); len(got) != 0 {
		t.Errorf("Workloads %v, want none", got)
	}
}

// TestUnnamedJobWhileKueueForbidden: while the controller lacks Kueue's
// rights, which bring the right to read namespaces, a job that names no
// queue waits without asking for its namespace (the API would refuse).
func TestUnnamedJobWhileKueueForbidden(t *testing.T) {
	kueueDefault, err := labels.Parse(kueue.DefaultManagedJobsNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	answer := kueue.Availability{Reason: kueue.ReasonForbidden, Message: "this controller may not list workloads"}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{corev1.LabelMetadataName: "ns"}}}
	job := gpuJob("p").obj()
	f := newGatedKueueFixture(t, &answer, kueue.Management{NamespaceSelector: kueueDefault}, nil, ns, job)
	f.checkQueueing()
	for range 2 {
		f.mustSync(job)
		for _, a := range f.kubeClient.Actions() {
			if a.GetResource().Resource == "namespaces" {
				t.Errorf("the controller asked for %s %s without the rights to", a.GetVerb(), a.GetResource().Resource)
			}
		}
		f.observe()
	}
	if n := len(f.podNames()); n != 0 {
		t.Fatalf("created %d pods", n)
	}
	assertCondition(t, f.status(job), v1beta1.ConditionQueued, metav1.ConditionTrue, v1beta1.ReasonQueueingUnavailable)
}

// TestDefaultLocalQueueNotYetCached: a default LocalQueue made a moment ago,
// which the controller's cache does not hold yet, takes a job that names
// no queue: on a cache miss the controller asks the API.
func TestDefaultLocalQueueNotYetCached(t *testing.T) {
	kueueDefault, err := labels.Parse(kueue.DefaultManagedJobsNamespaceSelector)
	if err != nil {
		t.Fatal(err)
	}
	answer := kueue.Availability{Usable: true, Reason: kueue.ReasonAvailable}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: map[string]string{corev1.LabelMetadataName: "ns"}}}
	job := gpuJob("p").obj()
	f := newGatedKueueFixture(t, &answer, kueue.Management{NamespaceSelector: kueueDefault}, nil, ns, job)
	// The cache sees the LocalQueues that exist when it starts, and no
	// change after.
	f.kueueClient.PrependWatchReactor("localqueues", func(core.Action) (bool, watch.Interface, error) {
		return true, watch.NewFake(), nil
	})
	f.checkQueueing()
	defaultQueue := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: kueue.DefaultLocalQueue, Namespace: "ns"}}
	if _, err := f.kueueClient.KueueV1beta2().LocalQueues("ns").Create(f.ctx, defaultQueue, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	q, _ := f.c.queueing.Current()
	if _, cached, _ := q.LocalQueues().GetIndexer().GetByKey("ns/" + kueue.DefaultLocalQueue); cached {
		t.Fatal("the cache holds the new LocalQueue: the test would not see a cache miss")
	}
	f.expectWaitingInDefaultQueue(job)
}

// expectWaitingInDefaultQueue reconciles the job twice and checks that it
// waits, with no pod, in the default LocalQueue (which has no quota).
func (f *fixture) expectWaitingInDefaultQueue(job v1beta1.TrainingJob) {
	f.t.Helper()
	f.step(job)
	f.step(job)
	if n := len(f.podNames()); n != 0 {
		f.t.Fatalf("created %d pods: the job ran, unqueued or past its queue", n)
	}
	if names := f.workloadNames(); len(names) != 1 || names[0] != "pj-p@"+kueue.DefaultLocalQueue {
		f.t.Fatalf("Workloads %v (name@queue), want the job's in queue %s", names, kueue.DefaultLocalQueue)
	}
}
