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

package deploy

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/rand"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// TestQueuedJobWaitsWithoutKueue: on this stack, which runs no Kueue, the
// controller (--queueing=auto) cannot queue. A job that names a queue does
// not run outside its quota: it waits with no pod, and its Queued condition,
// a Warning event and the controller's series say why. A job that names no
// queue runs.
func TestQueuedJobWaitsWithoutKueue(t *testing.T) {
	e := clusterEnv(t)
	ctx := context.Background()
	c := e.clients(t)
	if _, err := c.kube.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); err == nil {
		t.Skip("the stack serves Kueue (LOCAL_KUEUE=1)")
	}
	ns := "deploy-queueing-" + rand.String(5)
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	queued := tfJob("queued", "1s")
	queued.Labels = map[string]string{"kueue.x-k8s.io/queue-name": "team-a"}
	plain := tfJob("plain", "1s")
	for _, job := range []*v1beta1.TensorFlowTrainingJob{queued, plain} {
		if _, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// The job without a queue runs to its end: by then the controller has
	// long decided on the queued one.
	if err := eventually(ctx, 90*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(ns).Get(ctx, plain.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1beta1.JobSucceeded, err
	}); err != nil {
		t.Fatalf("waiting for the job that names no queue to succeed: %v", err)
	}
	got, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(ns).Get(ctx, queued.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ConditionQueued)
	if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != v1beta1.ReasonQueueingUnavailable {
		t.Fatalf("Queued condition %+v, want True with reason %s", cond, v1beta1.ReasonQueueingUnavailable)
	}
	t.Logf("Queued: %s", cond.Message)
	if !strings.Contains(cond.Message, "kueue.x-k8s.io/v1beta2") {
		t.Errorf("the message %q does not say why", cond.Message)
	}
	pods, err := c.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1beta1.LabelJobName + "=" + queued.Name})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Errorf("%d pods of the queued job, want none", len(pods.Items))
	}
	events, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", queued.Name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(ev corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Reason == v1beta1.ReasonQueueingUnavailable
	}) {
		t.Errorf("no Warning event %s among %d events", v1beta1.ReasonQueueingUnavailable, len(events.Items))
	}
}
