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
	"fmt"
	"math"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/integration/framework"
)

// expectInvalidField fails the test unless err is a 422 with a cause on the
// field whose message contains each of the given texts.
func expectInvalidField(t *testing.T, err error, fieldPath string, texts ...string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Fatalf("got %v, want 422 Invalid naming %s", err, fieldPath)
	}
	var fields []string
	for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
		fields = append(fields, cause.Field)
		if cause.Field != fieldPath {
			continue
		}
		for _, text := range texts {
			if !strings.Contains(cause.Message, text) {
				t.Errorf("the cause on %s, %q, does not say %q", fieldPath, cause.Message, text)
			}
		}
		return
	}
	t.Errorf("the error names fields %v, want %s: %v", fields, fieldPath, err)
}

// TestReplicaCap creates jobs at the replica cap, which are stored, and one
// replica over it, which are refused with 422 naming spec.replicaSpecs with
// the total and the maximum, on create and on update.
func TestReplicaCap(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	const ns = "limits"
	atCap, overCap := fmt.Sprint(batch.MaxTotalReplicas), fmt.Sprint(batch.MaxTotalReplicas+1)

	bothKinds(t, s, func(t *testing.T, k kind[*v1beta1.TensorFlowTrainingJob, *v1beta1.TensorFlowTrainingJobList]) {
		job := k.newJob("at-cap", v1beta1.ReplicaTypeChief, v1beta1.ReplicaTypeWorker)
		job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](batch.MaxTotalReplicas - 1)
		created, err := k.client(ns).Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating a job of %s replicas: %v", atCap, err)
		}

		over := k.newJob("over-cap", v1beta1.ReplicaTypeChief, v1beta1.ReplicaTypeWorker)
		over.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](batch.MaxTotalReplicas)
		_, err = k.client(ns).Create(ctx, over, metav1.CreateOptions{})
		expectInvalidField(t, err, "spec.replicaSpecs", overCap, atCap)

		created.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](batch.MaxTotalReplicas)
		_, err = k.client(ns).Update(ctx, created, metav1.UpdateOptions{})
		expectInvalidField(t, err, "spec.replicaSpecs", overCap, atCap)
	}, func(t *testing.T, k kind[*v1beta1.PyTorchTrainingJob, *v1beta1.PyTorchTrainingJobList]) {
		job := k.newJob("at-cap")
		job.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](batch.MaxTotalReplicas - 1)
		if _, err := k.client(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a job of %s replicas: %v", atCap, err)
		}

		// The probe's jobs: 32,000 replicas, and two types of 2^31-1.
		over := k.newJob("over-cap")
		over.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](31999)
		_, err := k.client(ns).Create(ctx, over, metav1.CreateOptions{})
		expectInvalidField(t, err, "spec.replicaSpecs", "32000", atCap)

		huge := k.newJob("huge", "node", "worker")
		huge.Spec.ReplicaSpecs[0].Replicas = ptr.To[int32](math.MaxInt32)
		huge.Spec.ReplicaSpecs[1].Replicas = ptr.To[int32](math.MaxInt32)
		_, err = k.client(ns).Create(ctx, huge, metav1.CreateOptions{})
		expectInvalidField(t, err, "spec.replicaSpecs", "4294967294", atCap)
	})
}

// TestPolicyIntegerBounds refuses the unbounded integers the probe found
// accepted, with 422 naming the field and the bound.
func TestPolicyIntegerBounds(t *testing.T) {
	s := framework.StartTestServer(t, "")
	ctx := context.Background()
	tf, pt := tensorflowKind(s), pytorchKind(s)
	const ns = "limits"

	cases := []struct {
		name  string
		field string
		limit int64
		mod   func(*v1beta1.RunPolicy)
	}{
		{"activeDeadlineSeconds at the int64 limit", "spec.runPolicy.activeDeadlineSeconds", batch.MaxActiveDeadlineSeconds,
			func(p *v1beta1.RunPolicy) { p.ActiveDeadlineSeconds = ptr.To[int64](math.MaxInt64) }},
		{"backoffLimit at the int32 limit", "spec.runPolicy.backoffLimit", batch.MaxBackoffLimit,
			func(p *v1beta1.RunPolicy) { p.BackoffLimit = ptr.To[int32](math.MaxInt32) }},
		{"ttlSecondsAfterFinished at the int32 limit", "spec.runPolicy.ttlSecondsAfterFinished", batch.MaxTTLSecondsAfterFinished,
			func(p *v1beta1.RunPolicy) { p.TTLSecondsAfterFinished = ptr.To[int32](math.MaxInt32) }},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := tf.newJob(fmt.Sprintf("policy-%d", i))
			tc.mod(&job.Spec.RunPolicy)
			_, err := tf.client(ns).Create(ctx, job, metav1.CreateOptions{})
			expectInvalidField(t, err, tc.field, fmt.Sprint(tc.limit))
		})
	}
	t.Run("torchrun maxRestarts at the int32 limit", func(t *testing.T) {
		job := pt.newJob("restarts")
		job.Spec.TorchrunConfig = &v1beta1.TorchrunConfig{Enabled: true, MaxRestarts: ptr.To[int32](math.MaxInt32)}
		_, err := pt.client(ns).Create(ctx, job, metav1.CreateOptions{})
		expectInvalidField(t, err, "spec.torchrunConfig.maxRestarts", fmt.Sprint(batch.MaxTorchrunRestarts))
	})
	t.Run("at the bounds", func(t *testing.T) {
		job := tf.newJob("policy-at-bounds")
		job.Spec.RunPolicy = v1beta1.RunPolicy{
			ActiveDeadlineSeconds:   ptr.To[int64](batch.MaxActiveDeadlineSeconds),
			BackoffLimit:            ptr.To[int32](batch.MaxBackoffLimit),
			TTLSecondsAfterFinished: ptr.To[int32](batch.MaxTTLSecondsAfterFinished),
		}
		if _, err := tf.client(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a job at the bounds: %v", err)
		}
	})
}
