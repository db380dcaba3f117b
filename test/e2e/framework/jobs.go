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

package framework

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
)

// Kind is a job kind of the batch.tensorstack.dev group.
type Kind string

// The job kinds.
const (
	KindTF      Kind = "TensorFlowTrainingJob"
	KindPyTorch Kind = "PyTorchTrainingJob"
	KindXGBoost Kind = "XGBoostTrainingJob"
	KindGeneric Kind = "GenericJob"
	KindMPI     Kind = "MPIJob"
)

// LeadReplicaType is the type of the one replica that leads a job of the
// kind, beside its workers: an MPI job's launcher, else master (which the
// other kinds but TensorFlow take).
func (k Kind) LeadReplicaType() string {
	if k == KindMPI {
		return "launcher"
	}
	return "master"
}

// info is what pkg/jobclient knows of the kind: its names and its client.
func (k Kind) info() *jobclient.Kind {
	kind, ok := jobclient.ByKind(string(k))
	if !ok {
		panic(fmt.Sprintf("%q is not a training job kind", string(k)))
	}
	return kind
}

// Resource is the kind's resource name.
func (k Kind) Resource() string { return k.info().Resource }

// Short is the kind's short name for kubectl.
func (k Kind) Short() string { return k.info().ShortName }

// ContainerName is the name of the kind's training container; a generic
// job, whose training container is each replica's first, names it "main".
func (k Kind) ContainerName() string {
	if name := k.info().TrainingContainer; name != "" {
		return name
	}
	return "main"
}

// JobRef names a job.
type JobRef struct {
	Kind      Kind
	Namespace string
	Name      string
}

func (r JobRef) String() string { return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name) }

// KubectlName is the job as kubectl arguments name it: tj/NAME or pj/NAME.
func (r JobRef) KubectlName() string { return r.Kind.Short() + "/" + r.Name }

// ActionPath is the path of an action subresource (pause, resume, debug).
func (r JobRef) ActionPath(action string) string {
	return fmt.Sprintf("/apis/%s/namespaces/%s/%s/%s/%s",
		v1beta1.SchemeGroupVersion.String(), r.Namespace, r.Kind.Resource(), r.Name, action)
}

// Ref names a job of this test's namespace.
func (f *Framework) Ref(k Kind, name string) JobRef {
	return JobRef{Kind: k, Namespace: f.Namespace, Name: name}
}

// Create creates the built job in the test's namespace.
func (f *Framework) Create(b *JobBuilder) JobRef {
	f.T.Helper()
	ref := f.Ref(b.Kind(), b.Name())
	if err := f.CreateJob(f.Context(), b.Build(f.Namespace)); err != nil {
		f.T.Fatalf("creating %s: %v", ref, err)
	}
	return ref
}

// CreateJob creates a job object through the clientset.
func (c *Clients) CreateJob(ctx context.Context, job v1beta1.TrainingJob) error {
	kind, err := jobclient.Of(job)
	if err != nil {
		return err
	}
	_, err = kind.Client(c.Training, job.GetNamespace()).Create(ctx, job, metav1.CreateOptions{})
	return err
}

// GetJob reads a job through the clientset.
func (c *Clients) GetJob(ctx context.Context, ref JobRef) (v1beta1.TrainingJob, error) {
	return ref.Kind.info().Client(c.Training, ref.Namespace).Get(ctx, ref.Name)
}

// DeleteJob deletes a job through the clientset, in the background.
func (c *Clients) DeleteJob(ctx context.Context, ref JobRef) error {
	bg := metav1.DeletePropagationBackground
	return ref.Kind.info().Client(c.Training, ref.Namespace).Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
}

// MustGetJob reads a job and fails the test if it cannot.
func (f *Framework) MustGetJob(ref JobRef) v1beta1.TrainingJob {
	f.T.Helper()
	job, err := f.GetJob(f.Context(), ref)
	if err != nil {
		f.T.Fatalf("getting %s: %v", ref, err)
	}
	return job
}

// JobSelector selects what the controller created for a job.
func JobSelector(ref JobRef) string {
	return labels.Set{v1beta1.LabelJobName: ref.Name, v1beta1.LabelJobKind: string(ref.Kind)}.String()
}

// ListPods returns the job's pods (by the controller's labels), sorted by
// name.
func (c *Clients) ListPods(ctx context.Context, ref JobRef) ([]corev1.Pod, error) {
	list, err := c.Kube.CoreV1().Pods(ref.Namespace).List(ctx, metav1.ListOptions{LabelSelector: JobSelector(ref)})
	if err != nil {
		return nil, err
	}
	pods := list.Items
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	return pods, nil
}

// Pods returns the job's pods and fails the test if it cannot list them.
func (f *Framework) Pods(ref JobRef) []corev1.Pod {
	f.T.Helper()
	pods, err := f.ListPods(f.Context(), ref)
	if err != nil {
		f.T.Fatalf("listing pods of %s: %v", ref, err)
	}
	return pods
}

// JobEvents lists the events recorded on the job.
func (f *Framework) JobEvents(ctx context.Context, ref JobRef) ([]corev1.Event, error) {
	list, err := f.Kube.CoreV1().Events(ref.Namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": ref.Name, "involvedObject.kind": string(ref.Kind)}.String(),
	})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ActionBody is the request body of an action subresource.
func ActionBody(action string) string {
	kind := map[string]string{"pause": "PauseRequest", "resume": "ResumeRequest", "debug": "DebugRequest"}[action]
	return fmt.Sprintf(`{"kind":%q,"apiVersion":%q}`, kind, v1beta1.SchemeGroupVersion.String())
}

// Action posts an action (pause, resume, debug) with body through
// kubectl create --raw, with extra kubectl flags such as --as.
func (f *Framework) Action(ref JobRef, action, body string, flags ...string) KubectlResult {
	f.T.Helper()
	if body == "" {
		body = ActionBody(action)
	}
	file := f.WriteFile(action+".json", body)
	args := append(append([]string(nil), flags...), "create", "--raw", ref.ActionPath(action), "-f", file)
	return f.Kubectl(args...)
}

// MustAction is Action that fails the test unless kubectl exits 0.
func (f *Framework) MustAction(ref JobRef, action, body string) {
	f.T.Helper()
	if r := f.Action(ref, action, body); r.Err != nil {
		f.T.Fatalf("%s action on %s: %s", action, ref, r)
	}
}

// Condition returns the job's condition of type typ, or nil.
func Condition(job v1beta1.TrainingJob, typ string) *metav1.Condition {
	for i, c := range job.JobStatus().Conditions {
		if c.Type == typ {
			return &job.JobStatus().Conditions[i]
		}
	}
	return nil
}

// HasCondition says whether the job has condition typ with status (and
// reason, when reason is not empty).
func HasCondition(job v1beta1.TrainingJob, typ string, status metav1.ConditionStatus, reason string) bool {
	c := Condition(job, typ)
	return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
}

// EnvOf returns the value of an environment variable of a container, and
// whether it is set.
func EnvOf(c *corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// ContainerEnv is a container's environment as the kubelet gives it when
// it starts: a variable from a ConfigMap (the job's cluster ConfigMap)
// read from the API, and $(NAME) references to variables defined before it
// expanded. Variables from other sources (the downward API) are left out.
func (f *Framework) ContainerEnv(pod *corev1.Pod, c *corev1.Container) map[string]string {
	f.T.Helper()
	env := map[string]string{}
	configMaps := map[string]*corev1.ConfigMap{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := configMaps[ref.Name]
			if !ok {
				var err error
				if cm, err = f.Kube.CoreV1().ConfigMaps(pod.Namespace).Get(f.Context(), ref.Name, metav1.GetOptions{}); err != nil {
					f.T.Fatalf("pod %s: %s: %v", pod.Name, e.Name, err)
				}
				configMaps[ref.Name] = cm
			}
			env[e.Name] = cm.Data[ref.Key]
		case e.ValueFrom == nil:
			env[e.Name] = envReference.ReplaceAllStringFunc(e.Value, func(ref string) string {
				if v, ok := env[ref[2:len(ref)-1]]; ok {
					return v
				}
				return ref
			})
		}
	}
	return env
}

// envReference is $(NAME) in a variable's value.
var envReference = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TrainingContainer returns the pod's container named like the kind's
// training container, else the first.
func TrainingContainer(k Kind, pod *corev1.Pod) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == k.ContainerName() {
			return &pod.Spec.Containers[i]
		}
	}
	return &pod.Spec.Containers[0]
}

// UpdateJob reads the job, lets mutate change it and writes it back,
// retrying on conflicts with the controller's status writes.
func (f *Framework) UpdateJob(ref JobRef, mutate func(job v1beta1.TrainingJob)) v1beta1.TrainingJob {
	f.T.Helper()
	var out v1beta1.TrainingJob
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ctx := f.Context()
		job, err := f.GetJob(ctx, ref)
		if err != nil {
			return err
		}
		mutate(job)
		out, err = ref.Kind.info().Client(f.Training, ref.Namespace).Update(ctx, job, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		f.T.Fatalf("updating %s: %v", ref, err)
	}
	return out
}
