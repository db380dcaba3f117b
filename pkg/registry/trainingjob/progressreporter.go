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

package trainingjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"tensorstack.dev/training/pkg/apis/batch"
)

// PodGetter reads a pod from the cluster the jobs run in.
type PodGetter interface {
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

// Bounds of the memory of pods already found to belong to their job: a
// pod's controller does not change, so one check serves its later reports.
const (
	verifiedPodsSize = 16384
	verifiedPodTTL   = 10 * time.Minute
)

// reporterCheck decides who a progress report comes from, and refuses a
// report sent with the token of a pod that is not the job's.
type reporterCheck struct {
	pods     PodGetter
	resource schema.GroupResource
	// verified maps a pod UID to the UID of the job found to control it.
	verified *utilcache.LRUExpireCache
}

func newReporterCheck(pods PodGetter, resource schema.GroupResource) *reporterCheck {
	return &reporterCheck{pods: pods, resource: resource, verified: utilcache.NewLRUExpireCache(verifiedPodsSize)}
}

// reporter names the sender of a report to the job. A request made with a
// service-account token bound to a pod (kube-apiserver passes the pod's
// name and UID on as the user's extra attributes, through the aggregation
// layer) comes from that pod, which must be one of the job's own; any other
// service-account token is refused. Any other user got here because RBAC
// grants it create on the progress subresource.
func (c *reporterCheck) reporter(ctx context.Context, job batch.TrainingJob) (string, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		// Only a server without authentication has requests without a
		// user; its authorization let the report through.
		return "", nil
	}
	podName, podUID := extraValue(u, serviceaccount.PodNameKey), extraValue(u, serviceaccount.PodUIDKey)
	namespace, _, err := serviceaccount.SplitUsername(u.GetName())
	isServiceAccount := err == nil
	switch {
	case podName == "" && podUID == "" && !isServiceAccount:
		return u.GetName(), nil
	case podName == "" && podUID == "":
		// Every service account may reach this far (artifacts/deploy binds
		// the progress subresource to all of them), so only a token bound
		// to one of the job's pods counts.
		return "", c.forbidden(job, fmt.Errorf("service account %s reports progress only with a token bound to one of the job's pods, "+
			"such as the token mounted in every pod", u.GetName()))
	case podName == "" || podUID == "":
		return "", c.forbidden(job, fmt.Errorf("the credentials name a pod without both its name and uid"))
	}
	if !isServiceAccount || namespace != job.GetNamespace() {
		return "", c.forbidden(job, fmt.Errorf("pod %s of user %q is not in the job's namespace", podName, u.GetName()))
	}
	if jobUID, ok := c.verified.Get(types.UID(podUID)); ok && jobUID == job.GetUID() {
		return podName, nil
	}
	if err := c.checkPod(ctx, job, podName, types.UID(podUID)); err != nil {
		return "", err
	}
	c.verified.Add(types.UID(podUID), job.GetUID(), verifiedPodTTL)
	return podName, nil
}

// checkPod finds the token's pod and its controller.
func (c *reporterCheck) checkPod(ctx context.Context, job batch.TrainingJob, name string, uid types.UID) error {
	if c.pods == nil {
		return c.forbidden(job, fmt.Errorf("this server has no access to pods, so it cannot tell whether pod %s belongs to the job", name))
	}
	pod, err := c.pods.GetPod(ctx, job.GetNamespace(), name)
	switch {
	case apierrors.IsNotFound(err):
		return c.forbidden(job, fmt.Errorf("pod %s no longer exists", name))
	case err != nil:
		return apierrors.NewServiceUnavailable(fmt.Sprintf("reading pod %s to check that it belongs to the job: %v", name, err))
	case pod.UID != uid:
		return c.forbidden(job, fmt.Errorf("pod %s with uid %s no longer exists", name, uid))
	}
	ref := metav1.GetControllerOf(pod)
	switch {
	case ref == nil:
		return c.forbidden(job, fmt.Errorf("pod %s is not controlled by a job", name))
	case ref.UID != job.GetUID():
		return c.forbidden(job, fmt.Errorf("pod %s belongs to %s %s, not to this job", name, ref.Kind, ref.Name))
	}
	return nil
}

func (c *reporterCheck) forbidden(job batch.TrainingJob, err error) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: c.resource.Group, Resource: c.resource.Resource + "/progress"}, job.GetName(), err)
}

func extraValue(u user.Info, key string) string {
	if values := u.GetExtra()[key]; len(values) == 1 {
		return values[0]
	}
	return ""
}
