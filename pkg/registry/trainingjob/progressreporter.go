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
	pods PodGetter
	// resource is the subresource reported to, for errors:
	// <kind>/progress or <kind>/checkpoint.
	resource schema.GroupResource
	// verified maps a pod UID to the verifiedPod found for it.
	verified *utilcache.LRUExpireCache
}

// verifiedPod is what a check of a pod found: the job that controls it,
// when the pod was created and the node it runs on.
type verifiedPod struct {
	jobUID  types.UID
	created time.Time
	node    string
}

// reporterInfo is who sent a report: a pod's name or a user's, and for a
// pod when it was created and its node.
type reporterInfo struct {
	name       string
	podCreated *time.Time
	node       string
}

func newReporterCheck(pods PodGetter, resource schema.GroupResource, subresource string) *reporterCheck {
	resource.Resource += "/" + subresource
	return &reporterCheck{pods: pods, resource: resource, verified: utilcache.NewLRUExpireCache(verifiedPodsSize)}
}

// reporter names the sender of a report to the job. A request made with a
// service-account token bound to a pod (kube-apiserver passes the pod's
// name and UID on as the user's extra attributes, through the aggregation
// layer) comes from that pod, which must be one of the job's own; any other
// service-account token is refused. Any other user got here because RBAC
// grants it create on the progress subresource.
func (c *reporterCheck) reporter(ctx context.Context, job batch.TrainingJob) (string, error) {
	info, err := c.reporterInfo(ctx, job)
	return info.name, err
}

// reporterInfo is reporter, with the reporting pod's creation time.
func (c *reporterCheck) reporterInfo(ctx context.Context, job batch.TrainingJob) (reporterInfo, error) {
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		// Only a server without authentication has requests without a
		// user; its authorization let the report through.
		return reporterInfo{}, nil
	}
	podName, podUID := extraValue(u, serviceaccount.PodNameKey), extraValue(u, serviceaccount.PodUIDKey)
	namespace, _, err := serviceaccount.SplitUsername(u.GetName())
	isServiceAccount := err == nil
	switch {
	case podName == "" && podUID == "" && !isServiceAccount:
		return reporterInfo{name: u.GetName()}, nil
	case podName == "" && podUID == "":
		// Every service account may reach this far (artifacts/deploy binds
		// the progress subresource to all of them), so only a token bound
		// to one of the job's pods counts.
		return reporterInfo{}, c.forbidden(job, fmt.Errorf("service account %s reports progress only with a token bound to one of the job's pods, "+
			"such as the token mounted in every pod", u.GetName()))
	case podName == "" || podUID == "":
		return reporterInfo{}, c.forbidden(job, fmt.Errorf("the credentials name a pod without both its name and uid"))
	}
	if !isServiceAccount || namespace != job.GetNamespace() {
		return reporterInfo{}, c.forbidden(job, fmt.Errorf("pod %s of user %q is not in the job's namespace", podName, u.GetName()))
	}
	v, ok := c.verified.Get(types.UID(podUID))
	if !ok || v.(verifiedPod).jobUID != job.GetUID() {
		checked, err := c.checkPod(ctx, job, podName, types.UID(podUID))
		if err != nil {
			return reporterInfo{}, err
		}
		c.verified.Add(types.UID(podUID), checked, verifiedPodTTL)
		v = checked
	}
	pod := v.(verifiedPod)
	return reporterInfo{name: podName, podCreated: &pod.created, node: pod.node}, nil
}

// checkPod finds the token's pod and its controller.
func (c *reporterCheck) checkPod(ctx context.Context, job batch.TrainingJob, name string, uid types.UID) (verifiedPod, error) {
	if c.pods == nil {
		return verifiedPod{}, c.forbidden(job, fmt.Errorf("this server has no access to pods, so it cannot tell whether pod %s belongs to the job", name))
	}
	pod, err := c.pods.GetPod(ctx, job.GetNamespace(), name)
	switch {
	case apierrors.IsNotFound(err):
		return verifiedPod{}, c.forbidden(job, fmt.Errorf("pod %s no longer exists", name))
	case err != nil:
		return verifiedPod{}, apierrors.NewServiceUnavailable(fmt.Sprintf("reading pod %s to check that it belongs to the job: %v", name, err))
	case pod.UID != uid:
		return verifiedPod{}, c.forbidden(job, fmt.Errorf("pod %s with uid %s no longer exists", name, uid))
	}
	ref := metav1.GetControllerOf(pod)
	switch {
	case ref == nil:
		return verifiedPod{}, c.forbidden(job, fmt.Errorf("pod %s is not controlled by a job", name))
	case ref.UID != job.GetUID():
		return verifiedPod{}, c.forbidden(job, fmt.Errorf("pod %s belongs to %s %s, not to this job", name, ref.Kind, ref.Name))
	}
	return verifiedPod{jobUID: job.GetUID(), created: pod.CreationTimestamp.Time, node: pod.Spec.NodeName}, nil
}

func (c *reporterCheck) forbidden(job batch.TrainingJob, err error) error {
	return apierrors.NewForbidden(c.resource, job.GetName(), err)
}

func extraValue(u user.Info, key string) string {
	if values := u.GetExtra()[key]; len(values) == 1 {
		return values[0]
	}
	return ""
}
