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

package jobpods

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	install.Install(s)
	return s
}()

var (
	tfKind     = v1beta1.SchemeGroupVersion.WithKind("TensorFlowTrainingJob")
	tfResource = v1beta1.SchemeGroupVersion.WithResource(v1beta1.TensorFlowTrainingJobResource)
	alice      = &user.DefaultInfo{Name: "alice", Groups: []string{"team-vision"}}
)

// newTFJob returns the internal form of a defaulted TensorFlow job with a
// chief and the given number of workers, as admission sees it.
func newTFJob(t *testing.T, workers int32) *batch.TensorFlowTrainingJob {
	t.Helper()
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "tensorflow", Image: "tf:2"}}}}
	versioned := &v1beta1.TensorFlowTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: "vision", UID: "uid-1"},
		Spec: v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{ReplicaSpecs: []v1beta1.ReplicaSpec{
			{Type: v1beta1.ReplicaTypeChief, Template: template},
			{Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To(workers), Template: template},
		}}},
	}
	scheme.Default(versioned)
	internal := &batch.TensorFlowTrainingJob{}
	if err := scheme.Convert(versioned, internal, nil); err != nil {
		t.Fatal(err)
	}
	return internal
}

func attributes(job, old runtime.Object, op admission.Operation, subresource string) admission.Attributes {
	return admission.NewAttributesRecord(job, old, tfKind, "vision", "mnist", tfResource, subresource, op, nil, false, alice)
}

func objectInterfaces() admission.ObjectInterfaces {
	return admission.NewObjectInterfacesFromScheme(scheme)
}

// recordingAuthorizer answers allow or deny and remembers what it was asked.
type recordingAuthorizer struct {
	allow bool
	asked []authorizer.Attributes
}

func (r *recordingAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	r.asked = append(r.asked, a)
	if r.allow {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "no RBAC rule matched", nil
}

// withDebug returns the job in debug mode, its workers running command
// (nil: the default command).
func withDebug(job *batch.TensorFlowTrainingJob, command ...string) *batch.TensorFlowTrainingJob {
	debugged := job.DeepCopy()
	debugged.Spec.RunMode = &batch.RunMode{Debug: &batch.DebugMode{Enabled: true,
		ReplicaSpecs: []batch.ReplicaDebugSpec{{Type: batch.ReplicaTypeWorker, Command: command}}}}
	return debugged
}

// withAction returns a copy of the job after one of the run-mode actions,
// as the action subresources change it.
func withAction(job *batch.TensorFlowTrainingJob, action func(*batch.TrainingJobSpec)) *batch.TensorFlowTrainingJob {
	changed := job.DeepCopy()
	action(&changed.Spec.TrainingJobSpec)
	return changed
}

func TestAuthorization(t *testing.T) {
	job := newTFJob(t, 2)
	relabelled := job.DeepCopy()
	relabelled.Labels = map[string]string{"team": "vision"}
	paused := withAction(job, batch.Pause)
	debugCustom := withDebug(job, "python", "-c", "import os; os.system('id')")
	debugDefault := withDebug(job)
	skipInit := withDebug(job)
	skipInit.Spec.RunMode.Debug.ReplicaSpecs[0].SkipInitContainer = true
	debugExplicitSleep := withDebug(job, "sleep", "inf")
	editedWhileDebugging := debugDefault.DeepCopy()
	editedWhileDebugging.Spec.ReplicaSpecs[1].Template.Spec.Containers[0].Command = []string{"curl", "evil.example"}
	editedWhilePaused := paused.DeepCopy()
	editedWhilePaused.Spec.ReplicaSpecs[1].Template.Spec.Containers[0].Image = "tf:3"
	resized := newTFJob(t, 3)
	debugOtherCustom := withDebug(job, "bash")

	cases := []struct {
		name      string
		attrs     admission.Attributes
		allow     bool
		wantAsked bool
		wantErr   bool
	}{
		{"create by a user who may create pods", attributes(job, nil, admission.Create, ""), true, true, false},
		{"create by a user who may not", attributes(job, nil, admission.Create, ""), false, true, true},
		{"create in debug mode with a custom command", attributes(debugCustom, nil, admission.Create, ""), false, true, true},
		{"label edit", attributes(relabelled, job, admission.Update, ""), false, false, false},
		{"status write", attributes(debugCustom, job, admission.Update, "status"), false, false, false},
		{"pause", attributes(paused, job, admission.Update, ""), false, false, false},
		{"resume", attributes(job, paused, admission.Update, ""), false, false, false},
		{"pause of a job debugged with a custom command", attributes(withAction(debugCustom, batch.Pause), debugCustom, admission.Update, ""), false, false, false},
		{"resume of a job debugged with a custom command", attributes(withAction(debugCustom, batch.Resume), debugCustom, admission.Update, ""), false, false, false},
		{"resume of a job debugged with the default command", attributes(withAction(debugDefault, batch.Resume), debugDefault, admission.Update, ""), false, false, false},
		{"debug with the default command", attributes(debugDefault, job, admission.Update, ""), false, false, false},
		{"debug with the default command, init containers skipped", attributes(skipInit, job, admission.Update, ""), false, false, false},
		{"debug with sleep inf spelled out", attributes(debugExplicitSleep, job, admission.Update, ""), false, false, false},
		{"debug of a paused job with the default command", attributes(debugDefault, paused, admission.Update, ""), false, false, false},
		{"debug with the default command after a custom one", attributes(debugDefault, debugCustom, admission.Update, ""), false, false, false},
		{"debug with a custom command by a user who may not", attributes(debugCustom, job, admission.Update, ""), false, true, true},
		{"debug with a custom command by a user who may", attributes(debugCustom, job, admission.Update, ""), true, true, false},
		{"debug of a paused job with a custom command", attributes(debugCustom, paused, admission.Update, ""), false, true, true},
		{"another custom debug command", attributes(debugOtherCustom, debugCustom, admission.Update, ""), false, true, true},
		{"template edit while debugging", attributes(editedWhileDebugging, debugDefault, admission.Update, ""), false, true, true},
		{"template edit while paused", attributes(editedWhilePaused, paused, admission.Update, ""), false, true, true},
		{"replica count change", attributes(resized, job, admission.Update, ""), false, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			authz := &recordingAuthorizer{allow: tc.allow}
			plugin := &podAuthorization{Handler: admission.NewHandler(admission.Create, admission.Update), authorizer: authorizer.AuthorizerFunc(authz.Authorize)}
			err := plugin.Validate(context.Background(), tc.attrs, objectInterfaces())
			if (len(authz.asked) > 0) != tc.wantAsked {
				t.Errorf("authorizer asked %d times, want asked: %v", len(authz.asked), tc.wantAsked)
			}
			if len(authz.asked) > 0 {
				a := authz.asked[0]
				if a.GetUser().GetName() != "alice" || a.GetVerb() != "create" || a.GetResource() != "pods" ||
					a.GetAPIGroup() != "" || a.GetNamespace() != "vision" || !a.IsResourceRequest() {
					t.Errorf("asked %s %s %s/%s in %s, want alice create pods in vision",
						a.GetUser().GetName(), a.GetVerb(), a.GetAPIGroup(), a.GetResource(), a.GetNamespace())
				}
			}
			if !tc.wantErr {
				if err != nil {
					t.Errorf("unexpected error: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "alice" cannot create resource "pods"`) {
				t.Errorf("error = %v, want 403 naming the pods create permission", err)
			}
		})
	}
}

// warnings collects what admission adds as warnings.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

// validate runs the validation plugin on a fake client whose pod creates
// answer with answer(pod) and returns the error, the pods sent and the
// warnings.
func validate(t *testing.T, attrs admission.Attributes, answer func(*corev1.Pod) error) ([]*corev1.Pod, []string, error) {
	t.Helper()
	client := fake.NewClientset()
	var mu sync.Mutex
	var sent []*corev1.Pod
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create := action.(clienttesting.CreateActionImpl)
		pod := create.GetObject().(*corev1.Pod)
		if dryRun := create.GetCreateOptions().DryRun; len(dryRun) != 1 || dryRun[0] != metav1.DryRunAll {
			t.Errorf("pod %s created with dryRun %v, want [All]", pod.GenerateName, dryRun)
		}
		mu.Lock()
		sent = append(sent, pod)
		mu.Unlock()
		return true, pod, answer(pod)
	})
	plugin := &podValidation{Handler: admission.NewHandler(admission.Create, admission.Update), client: client}
	recorder := &warnings{}
	err := plugin.Validate(warning.WithWarningRecorder(context.Background(), recorder), attrs, objectInterfaces())
	return sent, recorder.list, err
}

// invalidPod is kube-apiserver's answer to a pod with one invalid field.
func invalidPod(podField, message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: `Pod "x" is invalid: ` + podField + ": " + message,
		Details: &metav1.StatusDetails{Kind: "Pod", Causes: []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldValueNotSupported, Field: podField, Message: message},
		}},
	}}
}

func TestValidation(t *testing.T) {
	job := newTFJob(t, 2)
	const dnsMessage = `Unsupported value: "Bogus": supported values: "ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"`

	t.Run("every replica type is dry-run as the controller builds it", func(t *testing.T) {
		sent, warned, err := validate(t, attributes(job, nil, admission.Create, ""), func(*corev1.Pod) error { return nil })
		if err != nil || len(warned) != 0 {
			t.Fatalf("error %v, warnings %v; want neither", err, warned)
		}
		if len(sent) != 2 {
			t.Fatalf("%d pods sent, want one per replica type (2)", len(sent))
		}
		byPrefix := map[string]*corev1.Pod{}
		for _, pod := range sent {
			byPrefix[pod.GenerateName] = pod
		}
		worker := byPrefix["mnist-worker-0-"]
		if worker == nil || byPrefix["mnist-chief-0-"] == nil {
			t.Fatalf("pods sent with generateName %v, want mnist-chief-0- and mnist-worker-0-", keys(byPrefix))
		}
		if worker.Namespace != "vision" || worker.Spec.Hostname != "worker-0" || worker.Spec.RestartPolicy != corev1.RestartPolicyNever ||
			worker.Labels[v1beta1.LabelReplicaType] != "worker" || len(worker.OwnerReferences) != 0 {
			t.Errorf("worker pod = %+v, want the controller's pod without owner references", worker.ObjectMeta)
		}
		if !hasEnv(worker.Spec.Containers[0], "TF_CONFIG") {
			t.Errorf("worker pod has no TF_CONFIG: %+v", worker.Spec.Containers[0].Env)
		}
	})

	t.Run("invalid fields point into the template", func(t *testing.T) {
		_, _, err := validate(t, attributes(job, nil, admission.Create, ""), func(pod *corev1.Pod) error {
			if strings.HasPrefix(pod.GenerateName, "mnist-worker") {
				return invalidPod("spec.dnsPolicy", dnsMessage)
			}
			return nil
		})
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
			t.Fatalf("error = %v, want 422", err)
		}
		causes := status.Status().Details.Causes
		if len(causes) != 1 || causes[0].Field != "spec.replicaSpecs[1].template.spec.dnsPolicy" || causes[0].Message != dnsMessage {
			t.Errorf("causes = %+v, want spec.replicaSpecs[1].template.spec.dnsPolicy with kube-apiserver's message", causes)
		}
		if !strings.Contains(err.Error(), dnsMessage) {
			t.Errorf("message %q lacks kube-apiserver's words", err)
		}
	})

	t.Run("a refusal without fields is a 403 with the cluster's message", func(t *testing.T) {
		const psa = `pods "x" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`
		_, _, err := validate(t, attributes(job, nil, admission.Create, ""), func(*corev1.Pod) error {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(`violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`))
		})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), psa) || !strings.Contains(err.Error(), "spec.replicaSpecs[0].template") {
			t.Errorf("error = %v, want 403 with PSA's message and the template's path", err)
		}
	})

	for _, tc := range []struct {
		name, warning string
		answer        error
	}{
		{"unreachable", "checked by the built-in rules only", errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")},
		{"server error", "checked by the built-in rules only", apierrors.NewInternalError(errors.New("etcd down"))},
		{"no right to dry-run", "grant it create on pods", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errors.New(`User "system:serviceaccount:tensorstack-system:training-apiserver" cannot create resource "pods" in API group "" in the namespace "vision"`))},
		{"quota full", "quota has no room", apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "",
			errors.New(`exceeded quota: gpus, requested: nvidia.com/gpu=1, used: nvidia.com/gpu=8, limited: nvidia.com/gpu=8`))},
	} {
		t.Run(tc.name+" gives a warning, not a refusal", func(t *testing.T) {
			_, warned, err := validate(t, attributes(job, nil, admission.Create, ""), func(*corev1.Pod) error { return tc.answer })
			if err != nil {
				t.Errorf("error = %v, want the job accepted", err)
			}
			if len(warned) != 2 || !strings.Contains(warned[0], tc.warning) {
				t.Errorf("warnings = %q, want one per replica type saying %q", warned, tc.warning)
			}
		})
	}

	t.Run("updates that keep the pods are not judged", func(t *testing.T) {
		relabelled := job.DeepCopy()
		relabelled.Labels = map[string]string{"team": "vision"}
		if sent, _, _ := validate(t, attributes(relabelled, job, admission.Update, ""), func(*corev1.Pod) error { return nil }); len(sent) != 0 {
			t.Errorf("a label edit sent %d dry runs", len(sent))
		}
		sent, _, _ := validate(t, attributes(withDebug(job), job, admission.Update, ""), func(*corev1.Pod) error { return nil })
		if len(sent) != 2 {
			t.Fatalf("the debug action sent %d dry runs, want 2", len(sent))
		}
		for _, pod := range sent {
			if strings.HasPrefix(pod.GenerateName, "mnist-worker") && strings.Join(pod.Spec.Containers[0].Command, " ") != "sleep inf" {
				t.Errorf("debug worker pod runs %v, want the debug command", pod.Spec.Containers[0].Command)
			}
		}
	})

	t.Run("a type without replicas has no pod to judge", func(t *testing.T) {
		if sent, _, _ := validate(t, attributes(newTFJob(t, 0), nil, admission.Create, ""), func(*corev1.Pod) error { return nil }); len(sent) != 1 {
			t.Errorf("%d dry runs for a job with a chief and no workers, want 1", len(sent))
		}
	})
}

func keys(m map[string]*corev1.Pod) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestPluginsShareOneRequestsPreviews: both plugins judge the same pods of
// one request, worked out once: the second finds the first's conversion and
// previews among the request's attributes, and a debugged job's extra
// previews do not write into the shared ones.
func TestPluginsShareOneRequestsPreviews(t *testing.T) {
	stored := newTFJob(t, 2)
	for _, tc := range []struct {
		name     string
		job, old runtime.Object
		op       admission.Operation
	}{
		{name: "create", job: newTFJob(t, 2), op: admission.Create},
		{name: "update to debug with a command", job: withDebug(stored, "bash"), old: stored, op: admission.Update},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := attributes(tc.job, tc.old, tc.op, "")
			unwritten, err := podsToAuthorize(a, objectInterfaces())
			if err != nil || len(unwritten) == 0 {
				t.Fatalf("podsToAuthorize = %d pods, %v; want the job's pods", len(unwritten), err)
			}
			first, ok := a.GetReinvocationContext().Value(requestJobsKey).(*requestJobs)
			if !ok {
				t.Fatalf("the request keeps %T under %q, want its *requestJobs", a.GetReinvocationContext().Value(requestJobsKey), requestJobsKey)
			}
			kept := append([]podbuilder.PodPreview(nil), first.run.previews...)
			job, judged, err := podsToJudge(a, objectInterfaces())
			if err != nil || len(judged) == 0 {
				t.Fatalf("podsToJudge = %d pods, %v; want the job's pods", len(judged), err)
			}
			if job != first.job || &judged[0] != &first.run.previews[0] {
				t.Errorf("podsToJudge converted or previewed the job anew; want the authorization plugin's results")
			}
			if !apiequality.Semantic.DeepEqual(kept, judged) {
				t.Errorf("the shared previews changed after podsToAuthorize: %v, want %v", judged, kept)
			}
			if want, err := podbuilder.Preview(first.job); err != nil || !apiequality.Semantic.DeepEqual(want, judged) {
				t.Errorf("shared previews %v, want podbuilder.Preview's %v (%v)", judged, want, err)
			}
		})
	}
}
