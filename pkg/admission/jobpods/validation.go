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
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"tensorstack.dev/training/pkg/podbuilder"
)

// ValidationPluginName names the plugin that has kube-apiserver judge a
// job's pods with a dry-run create.
const ValidationPluginName = "TrainingJobPodValidation"

// dryRunTimeout bounds the dry runs of one request. Past it the job is
// judged by the built-in rules only, with a warning, so a slow or absent
// kube-apiserver delays writes of jobs but never blocks them.
const dryRunTimeout = 5 * time.Second

// podValidation dry-run-creates each replica type's pod in the job's
// namespace, so the cluster's own rules judge the templates before the job
// is accepted, not after, in the controller's FailedCreate events.
type podValidation struct {
	*admission.Handler
	client   kubernetes.Interface
	accepted *acceptedPods
}

var (
	_ admission.ValidationInterface     = &podValidation{}
	_ admission.InitializationValidator = &podValidation{}
	_ wantsDryRunClient                 = &podValidation{}
)

func newPodValidation(io.Reader) (admission.Interface, error) {
	return &podValidation{
		Handler:  admission.NewHandler(admission.Create, admission.Update),
		accepted: newAcceptedPods(clock.RealClock{}),
	}, nil
}

// SetDryRunClient is given the client the dry runs go through.
func (p *podValidation) SetDryRunClient(client kubernetes.Interface) { p.client = client }

func (p *podValidation) ValidateInitialization() error {
	if p.client == nil {
		return errors.New(ValidationPluginName + " needs a client of kube-apiserver")
	}
	return nil
}

// verdict is kube-apiserver's answer on one replica type's pod.
type verdict struct {
	preview podbuilder.PodPreview
	err     error
}

// Validate dry-runs the pods, one request per replica type, in parallel.
func (p *podValidation) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	job, previews, err := podsToJudge(a, o)
	if err != nil {
		return previewFailure(a, err)
	}
	if job == nil || len(previews) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, dryRunTimeout)
	defer cancel()
	verdicts := make([]verdict, len(previews))
	var wg sync.WaitGroup
	for i, preview := range previews {
		wg.Add(1)
		go func() {
			defer wg.Done()
			verdicts[i] = verdict{preview: preview, err: p.dryRun(ctx, a.GetNamespace(), job, preview.Pod)}
		}()
	}
	wg.Wait()
	return judge(ctx, a, verdicts)
}

// dryRun has kube-apiserver judge one pod, unless it accepted the same pod
// (up to the job's name) a moment ago.
func (p *podValidation) dryRun(ctx context.Context, namespace string, job metav1.Object, preview *corev1.Pod) error {
	key, cacheable := p.accepted.key(namespace, job, preview)
	if cacheable && p.accepted.accepted(key) {
		return nil
	}
	pod := preview.DeepCopy()
	// A generated name, so the replica's running pod does not make the dry
	// run of an update fail with AlreadyExists.
	pod.GenerateName, pod.Name = pod.Name+"-", ""
	_, err := p.client.CoreV1().Pods(namespace).Create(ctx, pod,
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "training-apiserver"})
	if err == nil && cacheable {
		p.accepted.accept(key)
	}
	return err
}

// judge turns the cluster's answers into the answer to the job's write: a
// 422 whose causes point into the job's templates, a 403 for a refusal
// without fields (Pod Security Admission, webhooks), and warnings where the
// cluster could not judge.
func judge(ctx context.Context, a admission.Attributes, verdicts []verdict) error {
	var causes []metav1.StatusCause
	var refusals []string
	for _, v := range verdicts {
		if v.err == nil {
			continue
		}
		template := field.NewPath("spec", "replicaSpecs").Index(v.preview.ReplicaSpec).Child("template")
		var status apierrors.APIStatus
		isStatus := errors.As(v.err, &status)
		switch {
		case apierrors.IsInvalid(v.err) && isStatus && status.Status().Details != nil:
			for _, cause := range status.Status().Details.Causes {
				causes = append(causes, metav1.StatusCause{
					Type: cause.Type, Message: cause.Message, Field: intoTemplate(template, cause.Field),
				})
			}
		case !isStatus || status.Status().Code >= http.StatusInternalServerError || apierrors.IsTooManyRequests(v.err):
			warning.AddWarning(ctx, "", fmt.Sprintf("%s: checked by the built-in rules only, the cluster could not judge the pods: %v", template, v.err))
		case apierrors.IsForbidden(v.err) && strings.Contains(status.Status().Message, "exceeded quota"):
			warning.AddWarning(ctx, "", fmt.Sprintf("%s: the namespace's quota has no room for these pods now; they wait until it has: %s", template, status.Status().Message))
		case apierrors.IsForbidden(v.err) && strings.Contains(status.Status().Message, `cannot create resource "pods"`):
			warning.AddWarning(ctx, "", fmt.Sprintf("%s: checked by the built-in rules only: the training apiserver may not dry-run pods (grant it create on pods): %s", template, status.Status().Message))
		default:
			refusals = append(refusals, fmt.Sprintf("%s: %s", template, status.Status().Message))
		}
	}
	qualifiedKind := a.GetKind().GroupKind()
	if len(causes) > 0 {
		messages := make([]string, len(causes))
		for i, c := range causes {
			messages[i] = c.Field + ": " + c.Message
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure,
			Code:   http.StatusUnprocessableEntity,
			Reason: metav1.StatusReasonInvalid,
			Details: &metav1.StatusDetails{
				Group: qualifiedKind.Group, Kind: qualifiedKind.Kind, Name: a.GetName(), Causes: causes,
			},
			Message: fmt.Sprintf("%s %q is invalid: the cluster refuses its pods: [%s]",
				qualifiedKind.String(), a.GetName(), strings.Join(messages, ", ")),
		}}
	}
	if len(refusals) > 0 {
		return admission.NewForbidden(a, fmt.Errorf("the cluster refuses its pods: %s", strings.Join(refusals, "; ")))
	}
	return nil
}

// intoTemplate points a pod's field path into the replica's template:
// spec.x becomes <template>.spec.x, metadata.x becomes <template>.metadata.x.
func intoTemplate(template *field.Path, podField string) string {
	switch {
	case podField == "":
		return template.String()
	case strings.HasPrefix(podField, "spec.") || strings.HasPrefix(podField, "metadata."):
		return template.String() + "." + podField
	default:
		return template.String() + ".spec." + podField
	}
}
