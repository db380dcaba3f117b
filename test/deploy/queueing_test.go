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

// TestUnqueuedWithQueueingNone: this stack runs no Kueue, and its
// controller runs with --queueing=none, as an admin of such a cluster sets
// it (with the default auto, a job that names a queue would wait for Kueue:
// test/e2e/kueue_failclosed_test.go). A job that names a queue runs, and its
// Queued condition and a Warning event say that it runs outside any quota
// and why: never in silence.
func TestUnqueuedWithQueueingNone(t *testing.T) {
	e := clusterEnv(t)
	ctx := context.Background()
	c := e.clients(t)
	if _, err := c.kube.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); err == nil {
		t.Skip("the stack serves Kueue (LOCAL_KUEUE=1)")
	}
	ns := "deploy-unqueued-" + rand.String(5)
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	job := tfJob("queued", "1s")
	job.Labels = map[string]string{"kueue.x-k8s.io/queue-name": "team-a"}
	if _, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var message string
	if err := eventually(ctx, 90*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		got, err := c.jobs.BatchV1beta1().TensorFlowTrainingJobs(ns).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(got.Status.Conditions, v1beta1.ConditionQueued)
		if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != v1beta1.ReasonUnqueued {
			return false, nil
		}
		message = cond.Message
		return got.Status.Phase == v1beta1.JobSucceeded, nil
	}); err != nil {
		t.Fatalf("waiting for the job to run to success, Queued=False (%s): %v", v1beta1.ReasonUnqueued, err)
	}
	t.Logf("Queued: %s", message)
	if !strings.Contains(message, "team-a") || !strings.Contains(message, "--queueing=none") {
		t.Errorf("the message %q names neither the queue nor why", message)
	}
	events, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", job.Name).String(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(events.Items, func(ev corev1.Event) bool {
		return ev.Type == corev1.EventTypeWarning && ev.Reason == v1beta1.ReasonUnqueued
	}) {
		t.Errorf("no Warning event %s among %d events", v1beta1.ReasonUnqueued, len(events.Items))
	}
}
