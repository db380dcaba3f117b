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

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// AuthorizationPluginName names the plugin that requires a job's author to
// be allowed to create pods.
const AuthorizationPluginName = "TrainingJobPodAuthorization"

// podAuthorization refuses a job whose author may not create pods in the
// job's namespace.
type podAuthorization struct {
	*admission.Handler
	authorizer authorizer.Authorizer
}

var (
	_ admission.ValidationInterface               = &podAuthorization{}
	_ admission.InitializationValidator           = &podAuthorization{}
	_ genericadmissioninitializer.WantsAuthorizer = &podAuthorization{}
)

func newPodAuthorization(io.Reader) (admission.Interface, error) {
	return &podAuthorization{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
}

// SetAuthorizer is given the server's authorizer: with delegated
// authorization, SubjectAccessReviews to kube-apiserver, cached.
func (p *podAuthorization) SetAuthorizer(a authorizer.Authorizer) { p.authorizer = a }

func (p *podAuthorization) ValidateInitialization() error {
	if p.authorizer == nil {
		return errors.New(AuthorizationPluginName + " needs an authorizer")
	}
	return nil
}

// Validate asks whether the requesting user may create pods in the job's
// namespace, as the pods would be created if the user made them directly,
// when the write lets the job run pods nobody with that right has written
// (podsToAuthorize).
func (p *podAuthorization) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	unwritten, err := podsToAuthorize(a, o)
	if err != nil {
		return previewFailure(a, err)
	}
	if len(unwritten) == 0 {
		return nil
	}
	user := a.GetUserInfo()
	decision, reason, err := p.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User:            user,
		Verb:            "create",
		Namespace:       a.GetNamespace(),
		APIVersion:      "v1",
		Resource:        "pods",
		ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("asking whether user %q may create pods: %w", user.GetName(), err))
	}
	why := ""
	if reason != "" {
		why = " (" + reason + ")"
	}
	//lint:ignore ST1005 the wording is kube-apiserver's own refusal, which people and tools recognise
	return admission.NewForbidden(a, fmt.Errorf(
		"User %q cannot create resource \"pods\" in API group \"\" in the namespace %q%s, and this %s would create pods: "+
			"writing its pod templates needs that permission", user.GetName(), a.GetNamespace(), why, a.GetKind().Kind))
}
