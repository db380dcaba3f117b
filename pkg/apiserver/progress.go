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

package apiserver

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/registry/trainingjob"
)

// progressSubresource is where a job's pods report how far they are.
const progressSubresource = "progress"

// podReporters lets a job's own pods report its progress without an RBAC
// grant: a create on <kind>/progress in the pod's namespace, made with a
// service-account token bound to a pod, is allowed here; the progress
// handler then reads the pod and refuses the report unless the job
// controls that pod. Every other request is left to the next authorizer.
type podReporters struct {
	next authorizer.Authorizer
}

const podReportReason = "a pod reports its own job's progress; the handler checks the pod's job"

func (p podReporters) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if isPodReport(a) {
		return authorizer.DecisionAllow, podReportReason, nil
	}
	return p.next.Authorize(ctx, a)
}

func (p podReporters) ConditionsAwareAuthorize(ctx context.Context, a authorizer.Attributes) authorizer.ConditionsAwareDecision {
	if isPodReport(a) {
		return authorizer.ConditionsAwareDecisionFromParts(authorizer.DecisionAllow, podReportReason, nil)
	}
	return p.next.ConditionsAwareAuthorize(ctx, a)
}

// EvaluateConditions: podReporters decides without conditions, so any
// conditional decision is the next authorizer's.
func (p podReporters) EvaluateConditions(ctx context.Context, d authorizer.ConditionsAwareDecision, data authorizer.ConditionsData) (authorizer.Decision, string, error) {
	return p.next.EvaluateConditions(ctx, d, data)
}

// isPodReport: a progress report to a named job, sent with a token bound
// to a pod in the job's namespace.
func isPodReport(a authorizer.Attributes) bool {
	if !a.IsResourceRequest() || a.GetVerb() != "create" || a.GetSubresource() != progressSubresource ||
		a.GetAPIGroup() != batch.GroupName || a.GetName() == "" || !isJobResource(a.GetResource()) {
		return false
	}
	u := a.GetUser()
	if u == nil || len(u.GetExtra()[serviceaccount.PodNameKey]) != 1 || len(u.GetExtra()[serviceaccount.PodUIDKey]) != 1 {
		return false
	}
	namespace, _, err := serviceaccount.SplitUsername(u.GetName())
	return err == nil && namespace == a.GetNamespace()
}

func isJobResource(resource string) bool {
	return resource == v1beta1.TensorFlowTrainingJobResource || resource == v1beta1.PyTorchTrainingJobResource
}

// withPodReporters puts podReporters in front of the server's authorizer.
// A server without one (authorization off) allows everything anyway.
func withPodReporters(authz authorizer.Authorizer) authorizer.Authorizer {
	if authz == nil {
		return nil
	}
	return podReporters{next: authz}
}

// kubePods reads pods from kube-apiserver, as the server's own identity.
type kubePods struct {
	client kubernetes.Interface
}

// newKubePods returns nil when the server has no kube-apiserver to ask.
func newKubePods(config *restclient.Config) (trainingjob.PodGetter, error) {
	if config == nil {
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return kubePods{client: client}, nil
}

func (p kubePods) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return p.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}
