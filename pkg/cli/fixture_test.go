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

package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
	"tensorstack.dev/training/pkg/jobclient"
)

// testNow is the clock of every test: ages are measured from here.
var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// fixture runs the plugin's commands against fake clientsets.
type fixture struct {
	t        *testing.T
	training *fake.Clientset
	kube     *kubefake.Clientset
	logs     *logRecorder
	stdin    string
	out      bytes.Buffer
	errOut   bytes.Buffer
}

// newFixture serves the training jobs, runtimes and searches among objects
// from the training clientset and the rest (pods, events) from the
// Kubernetes one.
func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	t.Helper()
	var training, core []runtime.Object
	for _, obj := range objects {
		switch obj.(type) {
		case v1beta1.TrainingJob, *v1beta1.ClusterTrainingRuntime, *v1beta1.TrainingRuntime, *v1beta1.TuningJob, *v1beta1.TrainingJobRecord:
			training = append(training, obj)
		default:
			core = append(core, obj)
		}
	}
	f := &fixture{t: t, training: fake.NewSimpleClientset(training...), kube: kubefake.NewClientset(core...), logs: &logRecorder{}}
	serveActions(f.training)
	return f
}

// run runs `kubectl training args...`; output collects in f.out and f.errOut.
func (f *fixture) run(args ...string) error {
	f.t.Helper()
	f.out.Reset()
	f.errOut.Reset()
	f.training.ClearActions()
	f.kube.ClearActions()
	root := NewRootCommand(Config{
		Streams: genericiooptions.IOStreams{In: strings.NewReader(f.stdin), Out: &f.out, ErrOut: &f.errOut},
		NewFactory: func(flags *ConnectionFlags, _ genericiooptions.IOStreams) Factory {
			return &fakeFactory{flags: flags, training: f.training, kube: recordingKube{Interface: f.kube, logs: f.logs}}
		},
		Now: func() time.Time { return testNow },
	})
	root.SetArgs(args)
	return root.ExecuteContext(context.Background())
}

// mustRun runs a command that has to succeed.
func (f *fixture) mustRun(args ...string) string {
	f.t.Helper()
	if err := f.run(args...); err != nil {
		f.t.Fatalf("kubectl training %s: %v\nstderr: %s", strings.Join(args, " "), err, f.errOut.String())
	}
	return f.out.String()
}

// actionCreates are the action subresource POSTs the command sent.
func (f *fixture) actionCreates() []clienttesting.CreateActionImpl {
	var creates []clienttesting.CreateActionImpl
	for _, action := range f.training.Actions() {
		if create, ok := action.(clienttesting.CreateActionImpl); ok && create.Subresource != "" {
			creates = append(creates, create)
		}
	}
	return creates
}

// fakeFactory takes the namespace from -n, else "default", as a kubeconfig
// without a namespace would.
type fakeFactory struct {
	flags    *ConnectionFlags
	training versioned.Interface
	kube     kubernetes.Interface
}

func (f *fakeFactory) Namespace() (string, bool, error) {
	if ns := f.flags.overrides.Context.Namespace; ns != "" {
		return ns, true, nil
	}
	return metav1.NamespaceDefault, false, nil
}

func (f *fakeFactory) TrainingClient() (versioned.Interface, error) { return f.training, nil }
func (f *fakeFactory) KubeClient() (kubernetes.Interface, error)    { return f.kube, nil }

// serveActions answers the action subresources as the server does, since
// the fake clientset cannot: the job comes back with its run mode changed,
// and is stored unless the request is a dry run.
func serveActions(training *fake.Clientset) {
	for _, resource := range []string{v1beta1.TensorFlowTrainingJobResource, v1beta1.PyTorchTrainingJobResource} {
		training.PrependReactor("create", resource, func(action clienttesting.Action) (bool, runtime.Object, error) {
			create := action.(clienttesting.CreateActionImpl)
			if create.Subresource == "" {
				return false, nil, nil
			}
			stored, err := training.Tracker().Get(create.Resource, create.Namespace, create.Name)
			if err != nil {
				return true, nil, err
			}
			job := stored.DeepCopyObject().(v1beta1.TrainingJob)
			spec := job.CommonSpec()
			if spec.RunMode == nil {
				spec.RunMode = &v1beta1.RunMode{}
			}
			switch create.Subresource {
			case "pause":
				spec.RunMode.Debug = nil
				spec.RunMode.Pause = &v1beta1.PauseMode{Enabled: true}
			case "resume":
				spec.RunMode = nil
			case "debug":
				spec.RunMode.Pause = nil
				spec.RunMode.Debug = &v1beta1.DebugMode{Enabled: true, ReplicaSpecs: create.Object.(*v1beta1.DebugRequest).ReplicaSpecs}
			}
			if len(create.CreateOptions.DryRun) == 0 {
				if err := training.Tracker().Update(create.Resource, job, create.Namespace); err != nil {
					return true, nil, err
				}
			}
			return true, job, nil
		})
	}
}

// logRecorder notes the logs asked for; the fake pod client does not.
type logRecorder struct {
	mu       sync.Mutex
	requests []logRequest
}

type logRequest struct {
	pod  string
	opts corev1.PodLogOptions
}

func (r *logRecorder) record(pod string, opts *corev1.PodLogOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests = append(r.requests, logRequest{pod: pod, opts: *opts})
}

func (r *logRecorder) taken() []logRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	requests := r.requests
	r.requests = nil
	return requests
}

type recordingKube struct {
	kubernetes.Interface
	logs *logRecorder
}

func (k recordingKube) CoreV1() typedcorev1.CoreV1Interface {
	return recordingCore{CoreV1Interface: k.Interface.CoreV1(), logs: k.logs}
}

// IsWatchListSemanticsUnSupported tells informers, as the fake clientset
// does, that it cannot stream a list through a watch.
func (k recordingKube) IsWatchListSemanticsUnSupported() bool { return true }

type recordingCore struct {
	typedcorev1.CoreV1Interface
	logs *logRecorder
}

func (c recordingCore) Pods(namespace string) typedcorev1.PodInterface {
	return recordingPods{PodInterface: c.CoreV1Interface.Pods(namespace), logs: c.logs}
}

type recordingPods struct {
	typedcorev1.PodInterface
	logs *logRecorder
}

func (p recordingPods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	p.logs.record(name, opts)
	return p.PodInterface.GetLogs(name, opts)
}

// replicas is a replica spec of count pods running containers.
func replicas(t v1beta1.ReplicaType, count int32, containers ...string) v1beta1.ReplicaSpec {
	spec := v1beta1.ReplicaSpec{Type: t, Replicas: ptr.To(count)}
	for _, name := range containers {
		spec.Template.Spec.Containers = append(spec.Template.Spec.Containers, corev1.Container{Name: name, Image: "trainer"})
	}
	return spec
}

func tfJob(name string, specs ...v1beta1.ReplicaSpec) *v1beta1.TensorFlowTrainingJob {
	job := &v1beta1.TensorFlowTrainingJob{ObjectMeta: jobMeta(name)}
	job.Spec.ReplicaSpecs = specs
	return job
}

func ptJob(name string, specs ...v1beta1.ReplicaSpec) *v1beta1.PyTorchTrainingJob {
	job := &v1beta1.PyTorchTrainingJob{ObjectMeta: jobMeta(name)}
	job.Spec.ReplicaSpecs = specs
	return job
}

func jobMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID("uid-" + name),
		CreationTimestamp: metav1.NewTime(testNow.Add(-2 * time.Hour)),
	}
}

// replicaPod is a pod the controller would have created for a job.
func replicaPod(job, kind string, t v1beta1.ReplicaType, index string, containers ...string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: job + "-" + string(t) + "-" + index, Namespace: metav1.NamespaceDefault,
		Labels: map[string]string{
			v1beta1.LabelJobName: job, v1beta1.LabelJobKind: kind,
			v1beta1.LabelReplicaType: string(t), v1beta1.LabelReplicaIndex: index,
		},
	}}
	for _, name := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: name})
	}
	return pod
}

// The kinds as the plugin's messages name them, built here from the table
// of kinds so that a new kind needs no edit to the tests that read them.

// orList joins items as the messages do: "a, b, c or d".
func orList(items ...string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// everyKind is every kind's name: "TensorFlowTrainingJob, ... or MPIJob".
func everyKind() string {
	var names []string
	for _, k := range jobclient.Kinds {
		names = append(names, k.Name)
	}
	return orList(names...)
}

// everyKindRef is the references the plugin takes, with their resources:
// "tj/NAME (tensorflowtrainingjobs), ... or mj/NAME (mpijobs)".
func everyKindRef() string {
	var refs []string
	for _, k := range jobclient.Kinds {
		refs = append(refs, k.ShortName+"/NAME ("+k.Resource+")")
	}
	return orList(refs...)
}

// everyShortRef is "tj/NAME, ..., mj/NAME or NAME".
func everyShortRef() string {
	var refs []string
	for _, k := range jobclient.Kinds {
		refs = append(refs, k.ShortName+"/NAME")
	}
	return orList(append(refs, "NAME")...)
}
