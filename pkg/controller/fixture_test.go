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
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/controller/gang"
	jobfake "tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
	jobinformers "tensorstack.dev/training/pkg/generated/informers/externalversions"
	"tensorstack.dev/training/pkg/jobclient"
	"tensorstack.dev/training/pkg/podbuilder"
)

// testStart is when every test's clock starts.
var testStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// ---------------------------------------------------------------------------
// Job builders.

type jobBuilder struct {
	job v1beta1.TrainingJob
}

func newTFJob(name string) *jobBuilder {
	return &jobBuilder{job: &v1beta1.TensorFlowTrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: podbuilder.TensorFlowKind},
		ObjectMeta: jobMeta(name),
	}}
}

func newPyTorchJob(name string) *jobBuilder {
	return &jobBuilder{job: &v1beta1.PyTorchTrainingJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: podbuilder.PyTorchKind},
		ObjectMeta: jobMeta(name),
	}}
}

func newGenericJob(name string) *jobBuilder {
	return &jobBuilder{job: &v1beta1.GenericJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: podbuilder.GenericKind},
		ObjectMeta: jobMeta(name),
	}}
}

// newMPIJob is an Open MPI job of a launcher and two workers.
func newMPIJob(name string) *jobBuilder {
	job := &v1beta1.MPIJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: podbuilder.MPIKind},
		ObjectMeta: jobMeta(name),
	}
	job.Spec.SlotsPerWorker = ptr.To(int32(1))
	job.Spec.MPIImplementation = v1beta1.MPIImplementationOpenMPI
	job.Spec.SSHAuthMountPath = "/root/.ssh"
	b := &jobBuilder{job: job}
	return b.withReplicas(v1beta1.ReplicaTypeLauncher, 1).withReplicas(v1beta1.ReplicaTypeWorker, 2)
}

func jobMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Generation: 1, ResourceVersion: "1",
		CreationTimestamp: metav1.NewTime(testStart),
	}
}

func (b *jobBuilder) spec() *v1beta1.TrainingJobSpec { return b.job.CommonSpec() }

func (b *jobBuilder) containerName() string {
	if _, ok := b.job.(*v1beta1.PyTorchTrainingJob); ok {
		return v1beta1.PyTorchContainerName
	}
	return v1beta1.TensorFlowContainerName
}

// withReplicas adds a replica type whose training container runs
// `python train.py --epochs=3`.
func (b *jobBuilder) withReplicas(typ v1beta1.ReplicaType, n int32) *jobBuilder {
	b.spec().ReplicaSpecs = append(b.spec().ReplicaSpecs, v1beta1.ReplicaSpec{
		Type:     typ,
		Replicas: ptr.To(n),
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "train"}},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				Containers: []corev1.Container{{
					Name:    b.containerName(),
					Image:   "trainer:1",
					Command: []string{"python", "train.py"},
					Args:    []string{"--epochs=3"},
					Env:     []corev1.EnvVar{{Name: "USER_VAR", Value: "kept"}},
				}},
			},
		},
	})
	return b
}

func (b *jobBuilder) replica(typ v1beta1.ReplicaType) *v1beta1.ReplicaSpec {
	for i := range b.spec().ReplicaSpecs {
		if b.spec().ReplicaSpecs[i].Type == typ {
			return &b.spec().ReplicaSpecs[i]
		}
	}
	panic("no replica type " + typ)
}

func (b *jobBuilder) withRestartPolicy(typ v1beta1.ReplicaType, p v1beta1.RestartPolicy) *jobBuilder {
	b.replica(typ).RestartPolicy = p
	return b
}

func (b *jobBuilder) withPort(typ v1beta1.ReplicaType, name string, port int32) *jobBuilder {
	c := &b.replica(typ).Template.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: name, ContainerPort: port})
	return b
}

func (b *jobBuilder) withInitContainer(typ v1beta1.ReplicaType) *jobBuilder {
	spec := &b.replica(typ).Template.Spec
	spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: "prepare", Image: "busybox"})
	return b
}

func (b *jobBuilder) withSidecar(typ v1beta1.ReplicaType) *jobBuilder {
	spec := &b.replica(typ).Template.Spec
	spec.Containers = append(spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1"})
	return b
}

func (b *jobBuilder) withBackoffLimit(n int32) *jobBuilder {
	b.spec().RunPolicy.BackoffLimit = ptr.To(n)
	return b
}

func (b *jobBuilder) withDeadline(seconds int64) *jobBuilder {
	b.spec().RunPolicy.ActiveDeadlineSeconds = ptr.To(seconds)
	return b
}

func (b *jobBuilder) withCleanUp(p v1beta1.CleanUpPolicy) *jobBuilder {
	b.spec().RunPolicy.CleanUpPolicy = p
	return b
}

func (b *jobBuilder) withTTL(seconds int32) *jobBuilder {
	b.spec().RunPolicy.TTLSecondsAfterFinished = ptr.To(seconds)
	return b
}

func (b *jobBuilder) paused(resume ...v1beta1.ResumeSpec) *jobBuilder {
	if b.spec().RunMode == nil {
		b.spec().RunMode = &v1beta1.RunMode{}
	}
	b.spec().RunMode.Pause = &v1beta1.PauseMode{Enabled: true, ResumeSpecs: resume}
	return b
}

func (b *jobBuilder) debug(specs ...v1beta1.ReplicaDebugSpec) *jobBuilder {
	if b.spec().RunMode == nil {
		b.spec().RunMode = &v1beta1.RunMode{}
	}
	b.spec().RunMode.Debug = &v1beta1.DebugMode{Enabled: true, ReplicaSpecs: specs}
	return b
}

func (b *jobBuilder) withTensorBoard(filesets ...string) *jobBuilder {
	b.spec().TensorboardSpec = &v1beta1.TensorBoardSpec{Image: "tensorboard:2", TrainingLogFilesets: filesets}
	return b
}

func (b *jobBuilder) withTorchrun(tc v1beta1.TorchrunConfig) *jobBuilder {
	b.job.(*v1beta1.PyTorchTrainingJob).Spec.TorchrunConfig = &tc
	return b
}

func (b *jobBuilder) withStatus(st v1beta1.TrainingJobStatus) *jobBuilder {
	*b.job.JobStatus() = st
	return b
}

// obj returns the job as the apiserver would serve it: defaulted.
func (b *jobBuilder) obj() v1beta1.TrainingJob {
	switch j := b.job.(type) {
	case *v1beta1.TensorFlowTrainingJob:
		v1beta1.SetObjectDefaults_TensorFlowTrainingJob(j)
	case *v1beta1.PyTorchTrainingJob:
		v1beta1.SetObjectDefaults_PyTorchTrainingJob(j)
	case *v1beta1.GenericJob:
		v1beta1.SetObjectDefaults_GenericJob(j)
	}
	return b.job
}

// raw returns the job without defaults, as a careless client could write it.
func (b *jobBuilder) raw() v1beta1.TrainingJob { return b.job }

// ---------------------------------------------------------------------------
// The fixture: a controller on fake clients, whose informer caches the test
// fills (observe) when it wants the controller to see the apiserver's state.

type fixture struct {
	t             testing.TB
	ctx           context.Context
	kubeClient    *kubefake.Clientset
	jobClient     *jobfake.Clientset
	kubeInformers informers.SharedInformerFactory
	jobInformers  jobinformers.SharedInformerFactory
	clock         *clocktesting.FakeClock
	recorder      *record.FakeRecorder
	c             *Controller
	logger        klog.Logger
	// dynamicClient and dynamicInformers serve coscheduling PodGroups in a
	// fixture with that gang backend (newGangFixture).
	dynamicClient    *dynamicfake.FakeDynamicClient
	dynamicInformers dynamicinformer.DynamicSharedInformerFactory
	// kueueClient serves Kueue's objects in a newKueueFixture.
	kueueClient *kueuefake.Clientset
	// gangScheduler is the gang backend of a newGangFixture.
	gangScheduler gang.Scheduler
	// graceful: deleted pods stay until the test lets the kubelet finish
	// (removePod); kubeletDone holds the pods it finished.
	graceful    bool
	kubeletDone map[string]bool
}

func newFixture(t testing.TB, objs ...runtime.Object) *fixture {
	t.Helper()
	logger, ctx := ktesting.NewTestContext(t)
	return newFixtureWithContext(t, ctx, logger, record.NewFakeRecorder(1000), false, nil, objs...)
}

// newQuietFixture logs through klog at its default verbosity, drops events
// and uses the plain fake Kubernetes clientset, whose object tracker does
// not run server-side-apply bookkeeping on every create: for benchmarks,
// which should measure the controller rather than the fake.
func newQuietFixture(t testing.TB, objs ...runtime.Object) *fixture {
	t.Helper()
	logger := klog.Background()
	return newFixtureWithContext(t, klog.NewContext(context.Background(), logger), logger, &record.FakeRecorder{}, true, nil, objs...)
}

// configure, when not nil, adjusts the fixture and the controller's options
// before the controller is built.
func newFixtureWithContext(t testing.TB, ctx context.Context, logger klog.Logger, recorder *record.FakeRecorder,
	plainFake bool, configure func(f *fixture, o *Options), objs ...runtime.Object) *fixture {
	t.Helper()
	var kubeObjs, jobObjs []runtime.Object
	for _, o := range objs {
		if _, ok := o.(v1beta1.TrainingJob); ok {
			jobObjs = append(jobObjs, o)
		} else {
			kubeObjs = append(kubeObjs, o)
		}
	}
	f := &fixture{
		t:          t,
		ctx:        ctx,
		logger:     logger,
		kubeClient: kubefake.NewClientset(kubeObjs...),
		jobClient:  jobfake.NewClientset(jobObjs...),
		clock:      clocktesting.NewFakeClock(testStart),
		recorder:   recorder,
	}
	if plainFake {
		f.kubeClient = kubefake.NewSimpleClientset(kubeObjs...) //nolint:staticcheck // see newQuietFixture
	}
	assignUIDs(f.kubeClient)
	f.finalizingDeletes()
	f.kubeInformers = NewKubeInformerFactory(f.kubeClient, 0)
	f.jobInformers = NewJobInformerFactory(f.jobClient, 0)
	opts := Options{Clock: f.clock, Recorder: f.recorder}
	if configure != nil {
		configure(f, &opts)
	}
	c, err := New(ctx, f.kubeClient, f.jobClient, f.kubeInformers, f.jobInformers, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.c = c
	f.observe()
	f.kubeClient.ClearActions()
	f.jobClient.ClearActions()
	return f
}

// assignUIDs has a fake client give every object it creates a UID, as the
// apiserver does.
func assignUIDs(client interface {
	PrependReactor(verb, resource string, reaction core.ReactionFunc)
}) {
	uids := 0
	client.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		if m, ok := a.(core.CreateAction).GetObject().(metav1.Object); ok && m.GetUID() == "" {
			uids++
			m.SetUID(types.UID(fmt.Sprintf("uid-%s-%d", m.GetName(), uids)))
		}
		return false, nil, nil
	})
}

// fixtureKind is what the fixture needs to know of a kind: its name, its
// resource and its informer.
type fixtureKind struct {
	kind     string
	resource string
}

func (k fixtureKind) gvr() schema.GroupVersionResource {
	return v1beta1.SchemeGroupVersion.WithResource(k.resource)
}

// informer is the kind's informer of the fixture's factory, the one the
// controller watches.
func (k fixtureKind) informer(f *fixture) cache.SharedIndexInformer {
	inf, err := f.jobInformers.ForResource(k.gvr())
	if err != nil {
		panic(err)
	}
	return inf.Informer()
}

// fixtureKinds are every kind, from the clients' table.
var fixtureKinds = func() []fixtureKind {
	kinds := make([]fixtureKind, len(jobclient.Kinds))
	for i, k := range jobclient.Kinds {
		kinds[i] = fixtureKind{kind: k.Name, resource: k.Resource}
	}
	return kinds
}()

func fixtureKindOf(job v1beta1.TrainingJob) fixtureKind {
	k, err := jobclient.Of(job)
	if err != nil {
		panic(fmt.Sprintf("the fixture has no kind for %T", job))
	}
	return fixtureKind{kind: k.Name, resource: k.Resource}
}

func keyOf(job v1beta1.TrainingJob) jobKey {
	return jobKey{Kind: fixtureKindOf(job).kind, Namespace: job.GetNamespace(), Name: job.GetName()}
}

// sync reconciles the job once.
//
// A reconcile that asks for log tails not read yet acts once they are: the
// sync waits for the reads and reconciles again, as their requeue would.
func (f *fixture) sync(job v1beta1.TrainingJob) (time.Duration, error) {
	f.t.Helper()
	key := keyOf(job)
	for {
		missed := f.c.logTails.missed()
		d, err := f.c.syncJob(f.ctx, key)
		if err != nil || f.c.logTails.missed() == missed {
			return d, err
		}
		f.c.logTails.wait(key)
	}
}

// mustSync reconciles the job once and fails the test on an error.
func (f *fixture) mustSync(job v1beta1.TrainingJob) time.Duration {
	f.t.Helper()
	d, err := f.sync(job)
	if err != nil {
		f.t.Fatalf("sync %s: %v", job.GetName(), err)
	}
	return d
}

// step syncs, then lets the caches catch up with the apiserver.
func (f *fixture) step(job v1beta1.TrainingJob) time.Duration {
	f.t.Helper()
	d := f.mustSync(job)
	f.observe()
	return d
}

func (f *fixture) indexer(obj runtime.Object) cache.Indexer {
	switch obj := obj.(type) {
	case *corev1.Pod:
		return f.kubeInformers.Core().V1().Pods().Informer().GetIndexer()
	case *corev1.Service:
		return f.kubeInformers.Core().V1().Services().Informer().GetIndexer()
	case *appsv1.Deployment:
		return f.kubeInformers.Apps().V1().Deployments().Informer().GetIndexer()
	case v1beta1.TrainingJob:
		return fixtureKindOf(obj).informer(f).GetIndexer()
	}
	f.t.Fatalf("no indexer for %T", obj)
	return nil
}

// observe copies the fake apiserver's objects into the informer caches and
// calls the controller's pod handlers for what changed, as informers would.
func (f *fixture) observe() {
	f.t.Helper()
	ctx := context.Background()
	// Pods, with the handlers that keep the expectations.
	pods, err := f.kubeClient.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithKind("Pod"), "")
	if err != nil {
		f.t.Fatal(err)
	}
	pods = f.removeFinalized(pods.(*corev1.PodList))
	podIndexer := f.kubeInformers.Core().V1().Pods().Informer().GetIndexer()
	live := map[string]bool{}
	for _, o := range pods.(*corev1.PodList).Items {
		p := o.DeepCopy()
		if _, ok := p.Labels[v1beta1.LabelJobName]; !ok {
			continue // the informer's label selector filters it out
		}
		key := p.Namespace + "/" + p.Name
		live[key] = true
		old, exists, _ := podIndexer.GetByKey(key)
		switch {
		case !exists:
			_ = podIndexer.Add(p)
			f.c.addPod(f.logger, p)
		case old.(*corev1.Pod).ResourceVersion != p.ResourceVersion || old.(*corev1.Pod).UID != p.UID:
			_ = podIndexer.Update(p)
			f.c.updatePod(f.logger, old, p)
		}
	}
	for _, o := range podIndexer.List() {
		p := o.(*corev1.Pod)
		if !live[p.Namespace+"/"+p.Name] {
			_ = podIndexer.Delete(p)
			f.c.deletePod(f.logger, p)
		}
	}
	// Services and deployments.
	svcs, _ := f.kubeClient.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	f.replaceAll(f.kubeInformers.Core().V1().Services().Informer().GetIndexer(), servicesOf(svcs.Items))
	deps, _ := f.kubeClient.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	f.replaceAll(f.kubeInformers.Apps().V1().Deployments().Informer().GetIndexer(), deploymentsOf(deps.Items))
	nodes, _ := f.kubeClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	var nodeObjs []any
	for i := range nodes.Items {
		n, _ := trimNode(&nodes.Items[i])
		nodeObjs = append(nodeObjs, n)
	}
	f.replaceAll(f.c.nodes.informer.GetIndexer(), nodeObjs)
	f.observeGang()
	f.observeKueue()
	// Jobs.
	for _, k := range fixtureKinds {
		list, err := meta.ExtractList(f.listJobs(k))
		if err != nil {
			f.t.Fatal(err)
		}
		var objs []any
		for _, o := range list {
			if job := o.(v1beta1.TrainingJob); f.selected(job) {
				objs = append(objs, f.cached(job))
			}
		}
		f.replaceAll(k.informer(f).GetIndexer(), objs)
	}
	// Listing is not what the tests are about.
	f.kubeClient.ClearActions()
	f.jobClient.ClearActions()
}

// selected says whether the job informers' field selector, which the fake
// clientset does not apply, selects the job.
func (f *fixture) selected(job v1beta1.TrainingJob) bool {
	selector, err := fields.ParseSelector(unfinishedJobs)
	if err != nil {
		f.t.Fatal(err)
	}
	return selector.Matches(fields.Set{v1beta1.FieldStatusPhase: string(job.JobStatus().Phase)})
}

// cached is a job as the controller's informers hold it: through their
// transform, as in the controller-manager.
func (f *fixture) cached(job v1beta1.TrainingJob) any {
	trimmed, err := trimForCache(job)
	if err != nil {
		f.t.Fatal(err)
	}
	return trimmed
}

func servicesOf(items []corev1.Service) []any {
	var out []any
	for i := range items {
		if _, ok := items[i].Labels[v1beta1.LabelJobName]; ok {
			out = append(out, &items[i])
		}
	}
	return out
}

func deploymentsOf(items []appsv1.Deployment) []any {
	var out []any
	for i := range items {
		if _, ok := items[i].Labels[v1beta1.LabelJobName]; ok {
			out = append(out, &items[i])
		}
	}
	return out
}

func (f *fixture) replaceAll(idx cache.Indexer, objs []any) {
	if err := idx.Replace(objs, ""); err != nil {
		f.t.Fatal(err)
	}
}

// job returns the job as the fake apiserver holds it.
func (f *fixture) job(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	f.t.Helper()
	o, err := f.jobClient.Tracker().Get(fixtureKindOf(job).gvr(), job.GetNamespace(), job.GetName())
	if err != nil {
		f.t.Fatalf("getting job %s: %v", job.GetName(), err)
	}
	return o.(v1beta1.TrainingJob)
}

// listJobs lists the kind's jobs in the fake apiserver.
func (f *fixture) listJobs(k fixtureKind) runtime.Object {
	f.t.Helper()
	gvk := v1beta1.SchemeGroupVersion.WithKind(k.kind)
	list, err := f.jobClient.Tracker().List(k.gvr(), gvk, "")
	if err != nil {
		f.t.Fatalf("listing %s: %v", k.resource, err)
	}
	return list
}

func (f *fixture) status(job v1beta1.TrainingJob) *v1beta1.TrainingJobStatus {
	f.t.Helper()
	return f.job(job).JobStatus()
}

// jobExists says whether the fake apiserver still has the job.
func (f *fixture) jobExists(job v1beta1.TrainingJob) bool {
	_, err := f.jobClient.Tracker().Get(fixtureKindOf(job).gvr(), job.GetNamespace(), job.GetName())
	return !apierrors.IsNotFound(err)
}

// updateJob stores a changed job in the fake apiserver and the cache, as a
// user's edit would arrive.
func (f *fixture) updateJob(job v1beta1.TrainingJob) {
	f.t.Helper()
	job.SetGeneration(job.GetGeneration() + 1)
	if err := f.jobClient.Tracker().Update(fixtureKindOf(job).gvr(), job, job.GetNamespace()); err != nil {
		f.t.Fatalf("updating job: %v", err)
	}
	f.observe()
}

// pod returns a pod from the fake apiserver, or nil.
func (f *fixture) pod(name string) *corev1.Pod {
	p, err := f.kubeClient.CoreV1().Pods("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return p
}

func (f *fixture) podNames() []string {
	list, _ := f.kubeClient.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	f.kubeClient.ClearActions()
	return names
}

// pause turns the job's pause on, as the pause action does, and returns
// the job as stored.
func (f *fixture) pause(job v1beta1.TrainingJob) v1beta1.TrainingJob {
	f.t.Helper()
	paused := f.job(job)
	paused.CommonSpec().RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}
	f.updateJob(paused)
	return paused
}

// setPod changes a pod in the fake apiserver and lets the cache see it.
func (f *fixture) setPod(name string, change func(p *corev1.Pod)) {
	f.t.Helper()
	p := f.pod(name)
	if p == nil {
		f.t.Fatalf("no pod %s", name)
	}
	change(p)
	p.ResourceVersion = fmt.Sprintf("%s-%d", p.ResourceVersion, time.Now().UnixNano())
	if err := f.kubeClient.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace); err != nil {
		f.t.Fatal(err)
	}
	f.observe()
}

func running(p *corev1.Pod) {
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
		})
	}
}

func succeeded(p *corev1.Pod) { terminated(0)(p) }

func failed(code int32) func(*corev1.Pod) { return terminated(code) }

func terminated(code int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodSucceeded
		if code != 0 {
			p.Status.Phase = corev1.PodFailed
		}
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
			})
		}
	}
}

func evicted(p *corev1.Pod) {
	p.Status.Phase = corev1.PodFailed
	p.Status.Reason = "Evicted"
}

func disruptedByPreemption(p *corev1.Pod) {
	failed(137)(p)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler",
	})
}

// setAll applies a change to every pod, then lets the cache see them.
func (f *fixture) setAll(change func(p *corev1.Pod)) {
	f.t.Helper()
	list, err := f.kubeClient.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	for i := range list.Items {
		p := &list.Items[i]
		change(p)
		p.ResourceVersion += "-set"
		if err := f.kubeClient.Tracker().Update(podsGVR, p, p.Namespace); err != nil {
			f.t.Fatal(err)
		}
	}
	f.observe()
}

// createdPods are the pods the controller created since the last observe.
func (f *fixture) createdPods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, a := range f.kubeClient.Actions() {
		if c, ok := a.(core.CreateAction); ok && a.GetResource().Resource == "pods" {
			out = append(out, c.GetObject().(*corev1.Pod))
		}
	}
	return out
}

func (f *fixture) createdPodNames() []string {
	var names []string
	for _, p := range f.createdPods() {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

func (f *fixture) deletedPodNames() []string {
	var names []string
	for _, a := range f.kubeClient.Actions() {
		if d, ok := a.(core.DeleteAction); ok && a.GetResource().Resource == "pods" {
			names = append(names, d.GetName())
		}
	}
	sort.Strings(names)
	return names
}

// statusUpdates counts status writes since the last observe.
func (f *fixture) statusUpdates() int {
	n := 0
	for _, a := range f.jobClient.Actions() {
		if a.GetVerb() == "patch" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// events drains the recorded events.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// hasEvent says whether one of the events has the type and reason.
func hasEvent(events []string, eventType, reason string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, eventType+" "+reason+" ") {
			return true
		}
	}
	return false
}

func condition(st *v1beta1.TrainingJobStatus, typ string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

// assertCondition checks a condition's status and reason.
func assertCondition(t testing.TB, st *v1beta1.TrainingJobStatus, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := condition(st, typ)
	if c == nil {
		t.Fatalf("condition %s missing; conditions: %+v", typ, st.Conditions)
	}
	if c.Status != status || c.Reason != reason {
		t.Fatalf("condition %s = %s/%s, want %s/%s (%s)", typ, c.Status, c.Reason, status, reason, c.Message)
	}
}

func assertPhase(t testing.TB, st *v1beta1.TrainingJobStatus, want v1beta1.JobPhase) {
	t.Helper()
	if st.Phase != want {
		t.Fatalf("phase = %q, want %q; conditions: %+v", st.Phase, want, st.Conditions)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// start creates the job's pods and lets them run.
func (f *fixture) start(job v1beta1.TrainingJob) {
	f.t.Helper()
	f.step(job)
	f.setAll(running)
	f.step(job)
	if st := f.status(job); st.Phase != v1beta1.JobRunning {
		f.t.Fatalf("job did not start: phase %q", st.Phase)
	}
	f.events()
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// finalizingDeletes makes pod deletes honour finalizers as the apiserver
// does: a pod with finalizers, or under gracefulDeletes, gets a
// deletionTimestamp and stays; removeFinalized removes it once its
// finalizers are gone (and, under gracefulDeletes, its kubelet finished).
func (f *fixture) finalizingDeletes() {
	f.kubeletDone = map[string]bool{}
	f.kubeClient.PrependReactor("delete", "pods", func(a core.Action) (bool, runtime.Object, error) {
		d := a.(core.DeleteAction)
		obj, err := f.kubeClient.Tracker().Get(podsGVR, d.GetNamespace(), d.GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		if pre := d.GetDeleteOptions().Preconditions; pre != nil && pre.UID != nil && *pre.UID != p.UID {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), p.Name, fmt.Errorf("UID precondition failed"))
		}
		if len(p.Finalizers) == 0 && !f.graceful {
			return false, nil, nil
		}
		if p.DeletionTimestamp == nil {
			now := metav1.NewTime(f.clock.Now())
			p.DeletionTimestamp = &now
			p.ResourceVersion += "-deleting"
			if err := f.kubeClient.Tracker().Update(podsGVR, p, p.Namespace); err != nil {
				return true, nil, err
			}
		}
		return true, nil, nil
	})
}

// removeFinalized removes the deleted pods nothing holds any more, and
// returns the rest.
func (f *fixture) removeFinalized(list *corev1.PodList) *corev1.PodList {
	out := &corev1.PodList{}
	for _, p := range list.Items {
		if p.DeletionTimestamp != nil && len(p.Finalizers) == 0 && (!f.graceful || f.kubeletDone[p.Name]) {
			if err := f.kubeClient.Tracker().Delete(podsGVR, p.Namespace, p.Name); err != nil {
				f.t.Fatalf("removing pod %s: %v", p.Name, err)
			}
			delete(f.kubeletDone, p.Name)
			continue
		}
		out.Items = append(out.Items, p)
	}
	return out
}

// gracefulDeletes makes pod deletes behave like a kubelet's graceful
// termination: the pod gets a deletionTimestamp and stays until the test
// lets the kubelet finish (removePod).
func (f *fixture) gracefulDeletes() {
	f.graceful = true
}

// removePod finishes a graceful deletion: the pod goes once no finalizer
// holds it.
func (f *fixture) removePod(name string) {
	f.t.Helper()
	if f.pod(name) == nil {
		f.t.Fatalf("removing pod %s: not found", name)
	}
	f.kubeletDone[name] = true
	f.observe()
}

// failNext makes the next calls of a verb on a resource fail.
func (f *fixture) failNext(verb, resource string, times int, err error) {
	f.kubeClient.PrependReactor(verb, resource, func(core.Action) (bool, runtime.Object, error) {
		if times <= 0 {
			return false, nil, nil
		}
		times--
		return true, nil, err
	})
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
