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

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apiserver"
	applyv1beta1 "tensorstack.dev/training/pkg/generated/applyconfiguration/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/integration/framework"
)

// labelNoDebug marks a job that jobUpdateGuard refuses to switch into debug
// mode, as a site policy might for production jobs.
const labelNoDebug = "example.com/no-debug"

// annotationAdmitted is what jobUpdateGuard's mutating half stamps on every
// job update it sees.
const annotationAdmitted = "example.com/admitted"

// jobUpdateGuard is an admission chain of one plugin, standing in for a
// webhook or policy that guards updates of jobs: it records every UPDATE of
// a job, stamps an annotation on it, and refuses to switch on debug mode for
// jobs labelled labelNoDebug.
type jobUpdateGuard struct {
	mu      sync.Mutex
	updates []admission.Attributes
}

func (g *jobUpdateGuard) Handles(op admission.Operation) bool { return op == admission.Update }

func (g *jobUpdateGuard) guards(a admission.Attributes) bool {
	return a.GetResource().Group == v1beta1.GroupName && a.GetSubresource() == ""
}

func (g *jobUpdateGuard) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !g.guards(a) {
		return nil
	}
	accessor, err := meta.Accessor(a.GetObject())
	if err != nil {
		return err
	}
	annotations := accessor.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationAdmitted] = "true"
	accessor.SetAnnotations(annotations)
	return nil
}

func (g *jobUpdateGuard) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !g.guards(a) {
		return nil
	}
	g.mu.Lock()
	g.updates = append(g.updates, a)
	g.mu.Unlock()
	job, ok := a.GetObject().(batch.TrainingJob)
	old, oldOK := a.GetOldObject().(batch.TrainingJob)
	if !ok || !oldOK {
		return admission.NewForbidden(a, errors.New("the guard expects the job's old and new object"))
	}
	if job.GetLabels()[labelNoDebug] == "true" && debugOn(job) && !debugOn(old) {
		return admission.NewForbidden(a, errors.New("debug mode is not allowed for this job"))
	}
	return nil
}

func debugOn(job batch.TrainingJob) bool {
	mode := job.CommonSpec().RunMode
	return mode != nil && mode.Debug != nil && mode.Debug.Enabled
}

// last returns the latest update the guard judged, and forgets all.
func (g *jobUpdateGuard) last(t *testing.T) admission.Attributes {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.updates) == 0 {
		t.Fatal("admission saw no update of a job")
	}
	a := g.updates[len(g.updates)-1]
	g.updates = nil
	return a
}

// TestActionsRunUpdateAdmission: an action is judged by the admission chain
// as an UPDATE of the job, with the old and the new job, so a policy that
// guards job updates refuses a debug action, sees a dry run as one, and can
// mutate what an action writes.
func TestActionsRunUpdateAdmission(t *testing.T) {
	guard := &jobUpdateGuard{}
	s := framework.StartTestServerWith(t, "", func(c *apiserver.Config) {
		c.GenericConfig.AdmissionControl = guard
	})
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("admission")
	job := tensorflowKind(s).newJob("guarded")
	job.Labels = map[string]string{labelNoDebug: "true"}
	if _, err := client.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	_, err := client.Debug(ctx, "guarded", &v1beta1.DebugRequest{}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "debug mode is not allowed") {
		t.Fatalf("debug of a guarded job: %v, want 403 from the admission chain", err)
	}
	refused := guard.last(t)
	if refused.GetOperation() != admission.Update || refused.GetResource() != v1beta1.SchemeGroupVersion.WithResource(v1beta1.TensorFlowTrainingJobResource) ||
		refused.GetKind() != v1beta1.SchemeGroupVersion.WithKind("TensorFlowTrainingJob") ||
		refused.GetNamespace() != "admission" || refused.GetName() != "guarded" {
		t.Errorf("admission saw %s %s (kind %s) %s/%s, want UPDATE of tensorflowtrainingjobs admission/guarded",
			refused.GetOperation(), refused.GetResource(), refused.GetKind(), refused.GetNamespace(), refused.GetName())
	}
	stored, err := client.Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if stored.Spec.RunMode != nil || stored.Generation != 1 {
		t.Errorf("the refused debug action changed the job: runMode %+v, generation %d", stored.Spec.RunMode, stored.Generation)
	}

	dryRun, err := client.Pause(ctx, "guarded", &v1beta1.PauseRequest{}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("dry-run pause: %v", err)
	}
	if a := guard.last(t); !a.IsDryRun() {
		t.Errorf("admission was not told the pause was a dry run")
	}
	if dryRun.Annotations[annotationAdmitted] != "true" {
		t.Errorf("the dry-run pause's answer lacks the mutating admission's annotation: %v", dryRun.Annotations)
	}

	paused, err := client.Pause(ctx, "guarded", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	a := guard.last(t)
	if a.IsDryRun() || pauseOn(a.GetOldObject()) || !pauseOn(a.GetObject()) {
		t.Errorf("admission of the pause: dry run %v, old paused %v, new paused %v; want false, false, true",
			a.IsDryRun(), pauseOn(a.GetOldObject()), pauseOn(a.GetObject()))
	}
	if !pauseEnabled(paused) || paused.Annotations[annotationAdmitted] != "true" {
		t.Errorf("after pause: paused %v, annotations %v; want paused and the mutating admission's annotation stored",
			pauseEnabled(paused), paused.Annotations)
	}

	// Without the label the same chain lets debug through.
	other := tensorflowKind(s).newJob("free")
	if _, err := client.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Debug(ctx, "free", &v1beta1.DebugRequest{}, metav1.CreateOptions{}); err != nil {
		t.Errorf("debug of an unguarded job: %v", err)
	}
}

func pauseOn(obj any) bool {
	job, ok := obj.(batch.TrainingJob)
	if !ok {
		return false
	}
	mode := job.CommonSpec().RunMode
	return mode != nil && mode.Pause != nil && mode.Pause.Enabled
}

// TestActionsRecordManagedFields: an action records what it set under a
// manager named after it, so a later server-side apply that would undo the
// pause conflicts instead of silently resuming the job.
func TestActionsRecordManagedFields(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("managed")
	manifest := func() *applyv1beta1.TensorFlowTrainingJobApplyConfiguration {
		template := corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("tensorflow").WithImage("tf:2")))
		return applyv1beta1.TensorFlowTrainingJob("train", "managed").WithSpec(applyv1beta1.TensorFlowTrainingJobSpec().
			WithReplicaSpecs(applyv1beta1.ReplicaSpec().WithType(v1beta1.ReplicaTypeWorker).WithReplicas(2).WithTemplate(template)))
	}
	if _, err := client.Apply(ctx, manifest(), metav1.ApplyOptions{FieldManager: "deployer"}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	paused, err := client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("pause: %v", err)
	}
	entry := managedFieldsOf(paused.ManagedFields, "pause")
	if entry == nil {
		t.Fatalf("no managedFields entry of manager pause: %+v", paused.ManagedFields)
	}
	if entry.Operation != metav1.ManagedFieldsOperationUpdate || entry.Subresource != "pause" ||
		!strings.Contains(entry.FieldsV1.GetRawString(), `"f:pause":{".":{},"f:enabled":{}}`) {
		t.Errorf("pause's managedFields entry = %s %s %s, want Update, subresource pause, owning spec.runMode.pause.enabled",
			entry.Operation, entry.Subresource, entry.FieldsV1.GetRawString())
	}

	undo := manifest()
	undo.Spec.WithRunMode(applyv1beta1.RunMode().WithPause(applyv1beta1.PauseMode().WithEnabled(false)))
	_, err = client.Apply(ctx, undo, metav1.ApplyOptions{FieldManager: "deployer"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `conflict with "pause"`) ||
		!strings.Contains(err.Error(), ".spec.runMode.pause.enabled") {
		t.Fatalf("apply switching the pause off: %v, want a 409 conflict with manager pause on .spec.runMode.pause.enabled", err)
	}
	again, err := client.Apply(ctx, manifest(), metav1.ApplyOptions{FieldManager: "deployer"})
	if err != nil {
		t.Fatalf("re-apply of the unchanged manifest: %v", err)
	}
	if !pauseEnabled(again) {
		t.Errorf("re-applying a manifest that never mentioned runMode resumed the job")
	}

	// Resuming takes the field back: the pause entry no longer owns it.
	resumed, err := client.Resume(ctx, "train", &v1beta1.ResumeRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if entry := managedFieldsOf(resumed.ManagedFields, "pause"); entry != nil && strings.Contains(entry.FieldsV1.GetRawString(), "f:enabled") {
		t.Errorf("after resume the pause entry still owns enabled: %s", entry.FieldsV1.GetRawString())
	}

	// A field manager given with the action is used instead of its name.
	debugging, err := client.Debug(ctx, "train", &v1beta1.DebugRequest{}, metav1.CreateOptions{FieldManager: "support-bot"})
	if err != nil {
		t.Fatalf("debug: %v", err)
	}
	if entry := managedFieldsOf(debugging.ManagedFields, "support-bot"); entry == nil || entry.Subresource != "debug" {
		t.Errorf("debug with fieldManager support-bot: managedFields %+v, want an entry of support-bot on subresource debug", debugging.ManagedFields)
	}
}

func managedFieldsOf(entries []metav1.ManagedFieldsEntry, manager string) *metav1.ManagedFieldsEntry {
	for i := range entries {
		if entries[i].Manager == manager {
			return &entries[i]
		}
	}
	return nil
}

// TestActionsAnswerWithTheJobInOpenAPI: the OpenAPI of each action's POST
// takes the request kind and answers with the job, as the server does.
func TestActionsAnswerWithTheJobInOpenAPI(t *testing.T) {
	s := framework.StartTestServer(t, "")
	raw, err := restClient(t, s).Get().AbsPath("/openapi/v3/apis/batch.tensorstack.dev/v1beta1").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]struct {
			Post *struct {
				RequestBody struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"requestBody"`
				Responses map[string]struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						} `json:"schema"`
					} `json:"content"`
				} `json:"responses"`
			} `json:"post"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for _, resource := range []struct{ name, kind string }{
		{v1beta1.TensorFlowTrainingJobResource, "TensorFlowTrainingJob"},
		{v1beta1.PyTorchTrainingJobResource, "PyTorchTrainingJob"},
	} {
		for action, request := range map[string]string{"pause": "PauseRequest", "resume": "ResumeRequest", "debug": "DebugRequest"} {
			path := "/apis/batch.tensorstack.dev/v1beta1/namespaces/{namespace}/" + resource.name + "/{name}/" + action
			item, ok := doc.Paths[path]
			if !ok || item.Post == nil {
				t.Errorf("OpenAPI has no POST %s", path)
				continue
			}
			if ref := item.Post.RequestBody.Content["*/*"].Schema.Ref; !strings.HasSuffix(ref, "."+request) {
				t.Errorf("POST %s: request body %q, want the %s schema", path, ref, request)
			}
			for _, code := range []string{"200", "201"} {
				if ref := item.Post.Responses[code].Content["application/json"].Schema.Ref; !strings.HasSuffix(ref, ".v1beta1."+resource.kind) {
					t.Errorf("POST %s: response %s is %q, want the %s schema", path, code, ref, resource.kind)
				}
			}
		}
	}
}

// TestKeyedListsMerge: a strategic merge patch of one replica type changes
// that entry only, and server-side apply owns replica types one by one.
func TestKeyedListsMerge(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("merge")
	k := tensorflowKind(s)
	if _, err := client.Create(ctx, k.newJob("patched", v1beta1.ReplicaTypeChief, v1beta1.ReplicaTypeWorker), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patched, err := client.Patch(ctx, "patched", types.StrategicMergePatchType,
		[]byte(`{"spec":{"replicaSpecs":[{"type":"worker","replicas":3}]}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("strategic merge patch of the worker entry: %v", err)
	}
	specs := patched.Spec.ReplicaSpecs
	if len(specs) != 2 || specs[0].Type != v1beta1.ReplicaTypeChief || specs[1].Type != v1beta1.ReplicaTypeWorker ||
		*specs[1].Replicas != 3 || specs[1].Template.Spec.Containers[0].Image == "" || *specs[0].Replicas != 1 {
		t.Errorf("after the patch: %+v, want chief 1 and worker 3, templates kept", specs)
	}

	template := corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
		WithContainers(corev1ac.Container().WithName("tensorflow").WithImage("tf:2")))
	replica := func(t v1beta1.ReplicaType, n int32) *applyv1beta1.ReplicaSpecApplyConfiguration {
		return applyv1beta1.ReplicaSpec().WithType(t).WithReplicas(n).WithTemplate(template)
	}
	apply := func(manager string, force bool, replicas ...*applyv1beta1.ReplicaSpecApplyConfiguration) (*v1beta1.TensorFlowTrainingJob, error) {
		job := applyv1beta1.TensorFlowTrainingJob("applied", "merge").WithSpec(applyv1beta1.TensorFlowTrainingJobSpec().WithReplicaSpecs(replicas...))
		return client.Apply(ctx, job, metav1.ApplyOptions{FieldManager: manager, Force: force})
	}
	if _, err := apply("alice", false, replica(v1beta1.ReplicaTypeChief, 1), replica(v1beta1.ReplicaTypeWorker, 2)); err != nil {
		t.Fatalf("apply by alice: %v", err)
	}
	_, err = apply("bob", false, replica(v1beta1.ReplicaTypeWorker, 4))
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), `.spec.replicaSpecs[type="worker"].replicas`) ||
		strings.Contains(err.Error(), `type="chief"`) {
		t.Fatalf("bob applying alice's worker count: %v, want a conflict on the worker entry's replicas only", err)
	}
	job, err := apply("bob", true, replica(v1beta1.ReplicaTypeWorker, 4))
	if err != nil {
		t.Fatalf("bob forcing the worker count: %v", err)
	}
	if got := replicaCounts(job.Spec.ReplicaSpecs); got != "chief=1,worker=4" {
		t.Errorf("replicas after bob's apply = %s, want chief=1,worker=4", got)
	}
	bob, alice := managedFieldsOf(job.ManagedFields, "bob"), managedFieldsOf(job.ManagedFields, "alice")
	if bob == nil || !strings.Contains(bob.FieldsV1.GetRawString(), `k:{\"type\":\"worker\"}`) || strings.Contains(bob.FieldsV1.GetRawString(), `k:{\"type\":\"chief\"}`) {
		t.Errorf("bob's managedFields = %+v, want the worker entry and not the chief entry", bob)
	}
	if alice == nil || !strings.Contains(alice.FieldsV1.GetRawString(), `k:{\"type\":\"chief\"}`) {
		t.Errorf("alice's managedFields = %+v, want her chief entry kept", alice)
	}
}

func replicaCounts(specs []v1beta1.ReplicaSpec) string {
	counts := make([]string, len(specs))
	for i, spec := range specs {
		counts[i] = fmt.Sprintf("%s=%d", spec.Type, ptr.Deref(spec.Replicas, 1))
	}
	return strings.Join(counts, ",")
}

// TestDeprecatedEnableSwitchesOff: an explicit enable: false in a patch
// resumes a paused job, although the stored enabled: true is merged in.
func TestDeprecatedEnableSwitchesOff(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().PyTorchTrainingJobs("enable")
	if _, err := client.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job, err := client.Patch(ctx, "train", types.MergePatchType, []byte(`{"spec":{"runMode":{"pause":{"enable":false}}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch: %v", err)
	}
	if pauseEnabled(job) || job.Spec.RunMode.Pause.Enable != nil {
		t.Errorf("after enable: false: pause %+v, want enabled false and enable not returned", job.Spec.RunMode.Pause)
	}
}

// warningRecorder keeps the warnings a server sends.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (r *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

func (r *warningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// TestWarningsOnlyWhenTheSpecChanges: the warnings about the spec come with
// the create and with spec changes, not with a label edit.
func TestWarningsOnlyWhenTheSpecChanges(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	recorder := &warningRecorder{}
	config := rest.CopyConfig(s.Config)
	config.WarningHandler = recorder
	client := clientset.NewForConfigOrDie(config).BatchV1beta1().PyTorchTrainingJobs("warnings")

	job := pytorchKind(s).newJob("train")
	job.Spec.Elastic = &v1beta1.ElasticConfig{Enabled: true, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](3)}
	job.Spec.ReplicaSpecs[1].Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	created, err := client.Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := recorder.take(); len(w) != 2 || !strings.HasPrefix(w[0], "spec.replicaSpecs[1].template.spec.restartPolicy") ||
		!strings.HasPrefix(w[1], "spec.elastic: without spec.torchrunConfig.enabled") {
		t.Errorf("warnings on create = %q, want the restartPolicy and the elastic warning", w)
	}

	created.Labels = map[string]string{"team": "vision"}
	relabelled, err := client.Update(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if w := recorder.take(); len(w) != 0 {
		t.Errorf("warnings on a label edit = %q, want none", w)
	}

	relabelled.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](2)
	if _, err := client.Update(ctx, relabelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if w := recorder.take(); len(w) != 2 {
		t.Errorf("warnings on a spec change = %q, want both again", w)
	}
}

// TestTerminalStatusGuarded: status writes cannot take back a finished
// job's Completed condition or completion time, nor claim completion for a
// job that is not finished.
func TestTerminalStatusGuarded(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	client := s.Client.BatchV1beta1().TensorFlowTrainingJobs("terminal")
	job, err := client.Create(ctx, tensorflowKind(s).newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	completed := metav1.Condition{Type: v1beta1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", Message: "done", LastTransitionTime: now}

	early := job.DeepCopy()
	early.Status.Phase = v1beta1.JobRunning
	early.Status.Conditions = []metav1.Condition{completed}
	_, err = client.UpdateStatus(ctx, early, metav1.UpdateOptions{})
	expectInvalid(t, "Completed on a running job", err, "status.conditions[0].status")

	job.Status.Phase = v1beta1.JobSucceeded
	job.Status.CompletionTime = &now
	job.Status.Conditions = []metav1.Condition{completed}
	finished, err := client.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("finishing the job: %v", err)
	}

	withdrawn := finished.DeepCopy()
	withdrawn.Status.Conditions = nil
	_, err = client.UpdateStatus(ctx, withdrawn, metav1.UpdateOptions{})
	expectInvalid(t, "Completed removed", err, "status.conditions")

	moved := finished.DeepCopy()
	later := metav1.NewTime(now.Add(time.Hour))
	moved.Status.CompletionTime = &later
	_, err = client.UpdateStatus(ctx, moved, metav1.UpdateOptions{})
	expectInvalid(t, "completionTime moved", err, "status.completionTime")
}

// expectInvalid fails unless err is a 422 naming field.
func expectInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	var status apierrors.APIStatus
	if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
		t.Errorf("%s: %v, want 422 Invalid", what, err)
		return
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field == field {
			return
		}
	}
	t.Errorf("%s: %v, want a cause naming %s", what, err, field)
}
