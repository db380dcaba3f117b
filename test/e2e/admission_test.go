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
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// TestAdmissionPolicyGuardsActions: a ValidatingAdmissionPolicy stored in
// kube-apiserver that forbids debug mode on job updates is enforced by our
// server's admission chain on the debug action too, while pause passes.
func TestAdmissionPolicyGuardsActions(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "admission")
	ref := f.Create(framework.NewTFJob("guarded").WithReplicas("worker", 1))
	ctx := f.Context()

	name := "e2e-no-debug-" + f.Namespace
	policies := f.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	bindings := f.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	_, err := policies.Create(ctx, &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Update},
					Rule: admissionv1.Rule{
						APIGroups:   []string{v1beta1.GroupName},
						APIVersions: []string{"v1beta1"},
						Resources:   []string{v1beta1.TensorFlowTrainingJobResource, v1beta1.PyTorchTrainingJobResource},
					},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "!has(object.spec.runMode) || !has(object.spec.runMode.debug) || " +
					"!has(object.spec.runMode.debug.enabled) || !object.spec.runMode.debug.enabled",
				Message: "debug mode is not allowed in this namespace",
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = bindings.Create(ctx, &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: f.Namespace},
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Delete(context.Background(), name, metav1.DeleteOptions{}) })

	// Our server learns of the policy through its informers; a dry run
	// shows when it is in force without changing the job.
	body := f.WriteFile("debug.json", framework.ActionBody("debug"))
	f.Eventually(framework.Timeout, "the policy refuses a dry-run debug", func(context.Context) (bool, error) {
		r := f.Kubectl("create", "--raw", ref.ActionPath("debug")+"?dryRun=All", "-f", body)
		return r.Err != nil && strings.Contains(r.Stderr, "debug mode is not allowed in this namespace"), nil
	})
	if job := f.MustGetJob(ref); debugEnabled(job) {
		t.Fatalf("a dry-run debug switched the job into debug mode")
	}
	r := f.KubectlTraining("debug", "tj/guarded")
	if r.Err == nil || !strings.Contains(r.Stderr, "ValidatingAdmissionPolicy '"+name+"'") ||
		!strings.Contains(r.Stderr, "debug mode is not allowed in this namespace") {
		t.Fatalf("debug under the policy: %s; want the policy's denial", r)
	}
	if job := f.MustGetJob(ref); debugEnabled(job) || job.GetGeneration() != 1 {
		t.Errorf("the refused debug changed the job: debug %v, generation %d", debugEnabled(job), job.GetGeneration())
	}
	if r := f.KubectlTraining("pause", "tj/guarded"); r.Err != nil {
		t.Errorf("pause under the policy: %s; the policy is about debug only", r)
	}
	if !pauseEnabled(f.MustGetJob(ref)) {
		t.Errorf("the pause allowed by the policy did not pause the job")
	}
}
