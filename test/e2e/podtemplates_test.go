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
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/e2e/framework"
)

// tfJobWithTemplate builds a one-worker TensorFlow job whose pod spec edit
// changes.
func tfJobWithTemplate(f *framework.Framework, name string, edit func(*corev1.PodSpec)) *v1beta1.TensorFlowTrainingJob {
	job := framework.NewTFJob(name).WithReplicas("worker", 1).Build(f.Namespace).(*v1beta1.TensorFlowTrainingJob)
	edit(&job.Spec.ReplicaSpecs[0].Template.Spec)
	return job
}

// TestPodTemplatesJudgedByTheCluster: templates that kube-apiserver's pod
// validation refuses are refused when the job is created, with
// kube-apiserver's message and a field path into the job's template.
func TestPodTemplatesJudgedByTheCluster(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "templates")
	jobs := f.Training.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace)
	cases := []struct {
		name, field, message string
		edit                 func(*corev1.PodSpec)
		// builtIn: the server's own rules catch this one first, in
		// kube-apiserver's words.
		builtIn bool
	}{
		{"dns-policy", "spec.dnsPolicy", `Unsupported value: "Bogus"`,
			func(s *corev1.PodSpec) { s.DNSPolicy = "Bogus" }, false},
		{"toleration-operator", "spec.tolerations[0].operator", `Unsupported value: "Bogus"`,
			func(s *corev1.PodSpec) { s.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: "Bogus"}} }, false},
		{"run-as-user", "spec.securityContext.runAsUser", "Invalid value: -1",
			func(s *corev1.PodSpec) { s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](-1)} }, false},
		{"image-pull-policy", "spec.containers[0].imagePullPolicy", `Unsupported value: "Sometimes"`,
			func(s *corev1.PodSpec) { s.Containers[0].ImagePullPolicy = "Sometimes" }, false},
		{"node-selector", "spec.nodeSelector", `Invalid value: "bad key!"`,
			func(s *corev1.PodSpec) { s.NodeSelector = map[string]string{"bad key!": "x"} }, false},
		// kube-apiserver takes cpu: 1e100 on its own; above the limit it
		// refuses it.
		{"cpu", "spec.containers[0].resources.requests", "must be less than or equal to cpu limit of 1",
			func(s *corev1.PodSpec) {
				s.Containers[0].Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1e100")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
				}
			}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jobs.Create(f.Context(), tfJobWithTemplate(f, tc.name, tc.edit), metav1.CreateOptions{})
			var status apierrors.APIStatus
			if !apierrors.IsInvalid(err) || !errors.As(err, &status) || status.Status().Details == nil {
				t.Fatalf("create: %v, want 422", err)
			}
			if !tc.builtIn && !strings.Contains(status.Status().Message, "the cluster refuses its pods") {
				t.Errorf("create: %v; want the verdict of kube-apiserver's dry run", err)
			}
			want := "spec.replicaSpecs[0].template." + tc.field
			for _, cause := range status.Status().Details.Causes {
				if strings.HasPrefix(cause.Field, want) && strings.Contains(cause.Message, tc.message) {
					return
				}
			}
			t.Errorf("create: %v; want a cause at %s saying %q", err, want, tc.message)
		})
	}
}

// TestPodSecurityJudgesJobs: in a namespace enforcing Pod Security
// "baseline", a job with a privileged template is refused at the door with
// Pod Security's message, not left Pending with FailedCreate events.
func TestPodSecurityJudgesJobs(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "psa")
	patch := []byte(`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline"}}}`)
	if _, err := f.Kube.CoreV1().Namespaces().Patch(f.Context(), f.Namespace, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	privileged := tfJobWithTemplate(f, "privileged", func(s *corev1.PodSpec) {
		s.HostNetwork, s.HostPID = true, true
		s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	})
	_, err := f.Training.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).Create(f.Context(), privileged, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) ||
		!strings.Contains(err.Error(), "spec.replicaSpecs[0].template") {
		t.Fatalf("create of a privileged job: %v; want 403 with Pod Security's message", err)
	}
	plain := tfJobWithTemplate(f, "plain", func(*corev1.PodSpec) {})
	if _, err := f.Training.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).Create(f.Context(), plain, metav1.CreateOptions{}); err != nil {
		t.Errorf("create of a baseline-compliant job: %v", err)
	}
}

// TestJobsNeedThePodsRight: a user who may create jobs but not pods is
// refused, naming the missing right; with create on pods too the same job
// is accepted.
func TestJobsNeedThePodsRight(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "escalation")
	ctx := f.Context()
	jobsRule := rbacv1.PolicyRule{APIGroups: []string{v1beta1.GroupName},
		Resources: []string{v1beta1.TensorFlowTrainingJobResource}, Verbs: []string{"create", "get"}}
	podsRule := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}
	grant := func(user string, rules ...rbacv1.PolicyRule) clientset.Interface {
		if _, err := f.Kube.RbacV1().Roles(f.Namespace).Create(ctx, &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Kube.RbacV1().RoleBindings(f.Namespace).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return clientset.NewForConfigOrDie(f.UserConfig(user))
	}
	jobsOnly := grant("e2e-jobs-only", jobsRule)
	jobsAndPods := grant("e2e-jobs-and-pods", jobsRule, podsRule)

	var err error
	f.Eventually(framework.Timeout, "the jobs-only user gets past RBAC on jobs", func(context.Context) (bool, error) {
		_, err = jobsOnly.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).Create(ctx, tfJobWithTemplate(f, "sneaky", func(s *corev1.PodSpec) {
			s.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}), metav1.CreateOptions{})
		// Until the binding reaches the authorizer, RBAC on jobs refuses.
		return err == nil || !strings.Contains(err.Error(), `cannot create resource "tensorflowtrainingjobs"`), nil
	})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "e2e-jobs-only" cannot create resource "pods"`) {
		t.Errorf("create by a jobs-only user: %v; want 403 naming create on pods", err)
	}
	f.Eventually(framework.Timeout, "the jobs-and-pods user creates a job", func(context.Context) (bool, error) {
		_, err = jobsAndPods.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).Create(ctx, tfJobWithTemplate(f, "allowed", func(*corev1.PodSpec) {}), metav1.CreateOptions{})
		return err == nil, nil
	})
}
