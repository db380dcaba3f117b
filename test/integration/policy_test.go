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
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	applyv1beta1 "tensorstack.dev/training/pkg/generated/applyconfiguration/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// TestFailureAndSuccessPolicy creates jobs with a failure and a success
// policy through the server and reads them back, defaulted and in their
// stored spellings, and checks that a bad rule is a 422 naming its fields.
func TestFailureAndSuccessPolicy(t *testing.T) {
	s := framework.StartTestServer(t, "")
	bothKinds(t, s, testFailureAndSuccessPolicy, testFailureAndSuccessPolicy)

	t.Run("server-side apply", func(t *testing.T) {
		ctx := context.Background()
		template := corev1ac.PodTemplateSpec().WithSpec(corev1ac.PodSpec().
			WithContainers(corev1ac.Container().WithName("tensorflow").WithImage("tf:2")))
		job := applyv1beta1.TensorFlowTrainingJob("applied", "policy-apply").WithSpec(applyv1beta1.TensorFlowTrainingJobSpec().
			WithReplicaSpecs(applyv1beta1.ReplicaSpec().WithType(v1beta1.ReplicaTypeWorker).WithReplicas(2).WithTemplate(template)).
			WithRunPolicy(applyv1beta1.RunPolicy().WithSuccessPolicy(v1beta1.SuccessPolicyAnyWorker).WithFailurePolicy(
				applyv1beta1.FailurePolicy().WithRules(applyv1beta1.FailurePolicyRule().
					WithAction(v1beta1.FailurePolicyActionIgnore).
					WithOnPodConditions(applyv1beta1.FailurePolicyOnPodCondition().WithType(corev1.DisruptionTarget)).
					WithOnExitCodes(applyv1beta1.FailurePolicyOnExitCodes().WithOperator(v1beta1.FailurePolicyOnExitCodesOpIn).WithValues(143, 137)),
				))))
		applied, err := s.Client.BatchV1beta1().TensorFlowTrainingJobs("policy-apply").Apply(ctx, job, metav1.ApplyOptions{FieldManager: "alice"})
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		policy := applied.Spec.RunPolicy
		if policy.SuccessPolicy != v1beta1.SuccessPolicyAnyWorker || policy.FailurePolicy == nil || len(policy.FailurePolicy.Rules) != 1 ||
			policy.FailurePolicy.Rules[0].OnPodConditions[0].Status != corev1.ConditionTrue ||
			!cmp.Equal(policy.FailurePolicy.Rules[0].OnExitCodes.Values, []int32{143, 137}) {
			t.Errorf("applied run policy = %+v, want AnyWorker and the rule, its condition status defaulted to True", policy)
		}
	})
}

// TestPolicyExplained: the served OpenAPI describes the policies' fields,
// which is what kubectl explain tj.spec.runPolicy.failurePolicy.rules shows.
func TestPolicyExplained(t *testing.T) {
	s := framework.StartTestServer(t, "")
	raw, err := restClient(t, s).Get().AbsPath("/openapi/v3/apis/batch.tensorstack.dev/v1beta1").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("get /openapi/v3: %v", err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	for model, fields := range map[string][]string{
		"RunPolicy":                   {"failurePolicy", "successPolicy"},
		"FailurePolicy":               {"rules"},
		"FailurePolicyRule":           {"action", "replicaTypes", "onExitCodes", "onPodConditions", "onReasons"},
		"FailurePolicyOnExitCodes":    {"containerName", "operator", "values"},
		"FailurePolicyOnPodCondition": {"type", "status"},
		"ReplicaStatus":               {"reason", "restartAt", "restartCount"},
	} {
		found := false
		for name, schema := range doc.Components.Schemas {
			if !strings.HasSuffix(name, ".v1beta1."+model) {
				continue
			}
			found = true
			for _, f := range fields {
				if schema.Properties[f].Description == "" {
					t.Errorf("OpenAPI %s.%s has no description", name, f)
				}
			}
		}
		if !found {
			t.Errorf("OpenAPI v3 has no schema for %s", model)
		}
	}
}

func testFailureAndSuccessPolicy[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("policy")
	job := k.newJob("policed")
	spec := job.CommonSpec()
	workerIndex := len(spec.ReplicaSpecs) - 1 // both kinds' test jobs list the worker last
	container := spec.ReplicaSpecs[workerIndex].Template.Spec.Containers[0].Name
	spec.RunPolicy.SuccessPolicy = v1beta1.SuccessPolicyAllWorkers
	spec.RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{
		{Action: v1beta1.FailurePolicyActionRestartJob, ReplicaTypes: []v1beta1.ReplicaType{"Worker"},
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{ContainerName: ptr.To(container), Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{137, 143}}},
		{Action: v1beta1.FailurePolicyActionIgnore, OnPodConditions: []v1beta1.FailurePolicyOnPodCondition{{Type: corev1.DisruptionTarget}}},
		{Action: v1beta1.FailurePolicyActionFailJob, OnReasons: []string{"OOMKilled", "ContainerCannotRun"}},
		{Action: v1beta1.FailurePolicyActionRestartReplica, OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{Operator: v1beta1.FailurePolicyOnExitCodesOpNotIn, Values: []int32{1}}},
	}}
	if _, err := client.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := client.Get(ctx, "policed", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	want := spec.RunPolicy.FailurePolicy.DeepCopy()
	want.Rules[0].ReplicaTypes = []v1beta1.ReplicaType{v1beta1.ReplicaTypeWorker} // stored lower-case
	want.Rules[1].OnPodConditions[0].Status = corev1.ConditionTrue                // the default
	if diff := cmp.Diff(want, got.CommonSpec().RunPolicy.FailurePolicy); diff != "" {
		t.Errorf("failurePolicy read back differs (-want +got):\n%s", diff)
	}
	if p := got.CommonSpec().RunPolicy.SuccessPolicy; p != v1beta1.SuccessPolicyAllWorkers {
		t.Errorf("successPolicy read back = %q, want AllWorkers", p)
	}

	// Without a successPolicy the job reads back without one: unset means Default.
	plain, err := client.Create(ctx, k.newJob("plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create without policies: %v", err)
	}
	if p := plain.CommonSpec().RunPolicy; p.SuccessPolicy != "" || p.FailurePolicy != nil {
		t.Errorf("a job without policies reads back with successPolicy %q, failurePolicy %+v; want neither", p.SuccessPolicy, p.FailurePolicy)
	}

	bad := k.newJob("bad")
	badSpec := bad.CommonSpec()
	badSpec.RunPolicy.SuccessPolicy = "EveryWorker"
	badSpec.RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{
		{Action: v1beta1.FailurePolicyActionIgnore},
		{ReplicaTypes: []v1beta1.ReplicaType{"evaluator"},
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{ContainerName: ptr.To("sidecar"), Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{0}},
			OnReasons:   []string{"OOMKilled", "OOMKilled"}},
	}}
	_, err = client.Create(ctx, bad, metav1.CreateOptions{})
	const rule = "spec.runPolicy.failurePolicy.rules[1]"
	for _, field := range []string{rule + ".action", rule + ".replicaTypes[0]", rule + ".onExitCodes.values[0]",
		rule + ".onReasons[1]", "spec.runPolicy.successPolicy"} {
		expectInvalid(t, "a job with bad policies", err, field)
	}

	// A rule's container must be one of the rule's pods.
	wrongContainer := k.newJob("wrong-container")
	wrongContainer.CommonSpec().RunPolicy.FailurePolicy = &v1beta1.FailurePolicy{Rules: []v1beta1.FailurePolicyRule{
		{Action: v1beta1.FailurePolicyActionFailJob,
			OnExitCodes: &v1beta1.FailurePolicyOnExitCodes{ContainerName: ptr.To("sidecar"), Operator: v1beta1.FailurePolicyOnExitCodesOpIn, Values: []int32{1}}},
	}}
	_, err = client.Create(ctx, wrongContainer, metav1.CreateOptions{})
	expectInvalid(t, "a rule naming a container no pod has", err, "spec.runPolicy.failurePolicy.rules[0].onExitCodes.containerName")

	// The policies may change on a running job.
	got.JobStatus().Phase = v1beta1.JobRunning
	running, err := client.UpdateStatus(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	running.CommonSpec().RunPolicy.SuccessPolicy = v1beta1.SuccessPolicyDefault
	running.CommonSpec().RunPolicy.FailurePolicy.Rules = running.CommonSpec().RunPolicy.FailurePolicy.Rules[1:]
	if _, err := client.Update(ctx, running, metav1.UpdateOptions{}); err != nil {
		t.Errorf("changing the policies of a running job: %v", err)
	}
}

// TestTopologyFixedWhileRunning: replica counts and pod templates may change
// before a job has pods and while it is paused, and are refused with a 422
// naming the field while its pods run and once it finished.
func TestTopologyFixedWhileRunning(t *testing.T) {
	s := framework.StartTestServer(t, "")
	bothKinds(t, s, testTopologyFixedWhileRunning, testTopologyFixedWhileRunning)
}

func testTopologyFixedWhileRunning[J jobPointer, L any](t *testing.T, k kind[J, L]) {
	ctx := context.Background()
	client := k.client("topology")
	created, err := client.Create(ctx, k.newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	last := len(created.CommonSpec().ReplicaSpecs) - 1
	replicasField := fmt.Sprintf("spec.replicaSpecs[%d].replicas", last)
	templateField := fmt.Sprintf("spec.replicaSpecs[%d].template", last)

	// update reads the job, changes it and writes it back.
	update := func(change func(spec *v1beta1.TrainingJobSpec)) (J, error) {
		job, err := client.Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		change(job.CommonSpec())
		return client.Update(ctx, job, metav1.UpdateOptions{})
	}
	resize := func(n int32) func(*v1beta1.TrainingJobSpec) {
		return func(spec *v1beta1.TrainingJobSpec) { spec.ReplicaSpecs[last].Replicas = ptr.To(n) }
	}
	retag := func(image string) func(*v1beta1.TrainingJobSpec) {
		return func(spec *v1beta1.TrainingJobSpec) { spec.ReplicaSpecs[last].Template.Spec.Containers[0].Image = image }
	}
	setStatus := func(change func(*v1beta1.TrainingJobStatus)) {
		job, err := client.Get(ctx, "train", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		change(job.JobStatus())
		if _, err := client.UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
	}

	// Before any pod exists: allowed.
	if _, err := update(resize(2)); err != nil {
		t.Fatalf("resizing a job without pods: %v", err)
	}
	setStatus(func(st *v1beta1.TrainingJobStatus) { st.Phase = v1beta1.JobPending })
	if _, err := update(retag("registry.example/train:1.1")); err != nil {
		t.Fatalf("changing the template of a pending job without pods: %v", err)
	}

	// The controller reports a running pod.
	workerType := created.CommonSpec().ReplicaSpecs[last].Type
	setStatus(func(st *v1beta1.TrainingJobStatus) {
		st.Phase = v1beta1.JobRunning
		st.Tasks = []v1beta1.TaskStatus{{Type: workerType, ReplicaStatus: []v1beta1.ReplicaStatus{{
			Name: v1beta1.PodName("train", workerType, 0), UID: "6d1f3a52-0000-4000-8000-000000000001", Phase: v1beta1.ReplicaRunning,
		}}}}
		st.Aggregate.Running = 1
	})
	_, err = update(resize(3))
	expectInvalid(t, "resizing a running job", err, replicasField)
	if err == nil || !strings.Contains(err.Error(), "kubectl training pause") {
		t.Errorf("resizing a running job: %v, want a message saying to pause the job first", err)
	}
	_, err = update(retag("registry.example/train:2.0"))
	expectInvalid(t, "changing the template of a running job", err, templateField)
	// Everything else may change, and status writes go on.
	if _, err := update(func(spec *v1beta1.TrainingJobSpec) { spec.RunPolicy.BackoffLimit = ptr.To[int32](5) }); err != nil {
		t.Errorf("changing backoffLimit of a running job: %v", err)
	}
	setStatus(func(st *v1beta1.TrainingJobStatus) { st.Aggregate.Running, st.Aggregate.Pending = 1, 0 })

	// Paused through the pause subresource: allowed.
	if _, err := client.Pause(ctx, "train", &v1beta1.PauseRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("pause: %v", err)
	}
	resized, err := update(resize(3))
	if err != nil {
		t.Fatalf("resizing a paused job: %v", err)
	}
	if n := *resized.CommonSpec().ReplicaSpecs[last].Replicas; n != 3 {
		t.Errorf("replicas after resizing the paused job = %d, want 3", n)
	}
	if _, err := client.Resume(ctx, "train", &v1beta1.ResumeRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("resume: %v", err)
	}
	_, err = update(resize(1))
	expectInvalid(t, "resizing the resumed job whose status still shows its pod", err, replicasField)

	// Pausing and resizing in one update: allowed.
	if _, err := update(func(spec *v1beta1.TrainingJobSpec) {
		spec.RunMode = &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enable: ptr.To(true)}}
		resize(1)(spec)
	}); err != nil {
		t.Errorf("pausing (with the deprecated enable) and resizing in one update: %v", err)
	}

	// Finished: refused even while paused.
	setStatus(func(st *v1beta1.TrainingJobStatus) { st.Phase = v1beta1.JobSucceeded })
	_, err = update(resize(2))
	expectInvalid(t, "resizing a finished job", err, replicasField)
	if err == nil || !strings.Contains(err.Error(), "finished") || !apierrors.IsInvalid(err) {
		t.Errorf("resizing a finished job: %v, want a 422 saying the job has finished", err)
	}
}
