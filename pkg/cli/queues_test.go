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

package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	visibilityv1beta2 "sigs.k8s.io/kueue/apis/visibility/v1beta2"
	kueueclient "sigs.k8s.io/kueue/client-go/clientset/versioned"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"

	"tensorstack.dev/training/pkg/generated/clientset/versioned/fake"
	"tensorstack.dev/training/pkg/kueueview"
	"tensorstack.dev/training/pkg/kueueview/kueueviewtest"
)

// kueueFakeFactory is the tests' factory with a fake Kueue.
type kueueFakeFactory struct {
	fakeFactory
	kueue kueueclient.Interface
}

func (f *kueueFakeFactory) KueueClient() (kueueview.Client, error) {
	return kueueviewtest.Clientset{Interface: f.kueue}, nil
}

// runQueuesCommand runs `kubectl training queues args...` against kueue and kube.
func runQueuesCommand(t *testing.T, kueue *kueuefake.Clientset, kube *kubefake.Clientset, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := NewRootCommand(Config{
		Streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
		NewFactory: func(flags *ConnectionFlags, _ genericiooptions.IOStreams) Factory {
			return &kueueFakeFactory{fakeFactory: fakeFactory{flags: flags, training: fake.NewSimpleClientset(), kube: kube}, kueue: kueue}
		},
		Now: func() time.Time { return testNow },
	})
	root.SetArgs(append([]string{"queues"}, args...))
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

func queueObjects() []runtime.Object {
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "gpus"},
		Spec: kueuev1beta2.ClusterQueueSpec{QueueingStrategy: kueuev1beta2.StrictFIFO, ResourceGroups: []kueuev1beta2.ResourceGroup{{
			Flavors: []kueuev1beta2.FlavorQuotas{{Name: "default-flavor", Resources: []kueuev1beta2.ResourceQuota{{
				Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("1"),
			}}}},
		}}},
		Status: kueuev1beta2.ClusterQueueStatus{
			Conditions:        []metav1.Condition{{Type: kueuev1beta2.ClusterQueueActive, Status: metav1.ConditionTrue}},
			AdmittedWorkloads: 0, PendingWorkloads: 2,
		},
	}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "user-queue"},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}, Status: kueuev1beta2.LocalQueueStatus{PendingWorkloads: 2}}
	workload := func(name string, minutes int) *kueuev1beta2.Workload {
		return &kueuev1beta2.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, CreationTimestamp: metav1.NewTime(testNow.Add(time.Duration(-minutes) * time.Minute))},
			Spec:       kueuev1beta2.WorkloadSpec{QueueName: "user-queue"},
			Status: kueuev1beta2.WorkloadStatus{Conditions: []metav1.Condition{{
				Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionFalse, Reason: "Pending", Message: "insufficient quota",
			}}},
		}
	}
	return []runtime.Object{cq, lq, workload("pytorch-older", 10), workload("pytorch-newer", 2)}
}

func TestQueuesPrintsQuotaAndThePendingOrder(t *testing.T) {
	out, _, err := runQueuesCommand(t, kueuefake.NewSimpleClientset(queueObjects()...), kubefake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ClusterQueue gpus: active, StrictFIFO; admitted 0, reserving 0, pending 2",
		"default-flavor  nvidia.com/gpu  1        0      0         0         -                -",
		"Pending, by priority, then creation, as Kueue's FIFO strategies order them; Kueue's visibility API (visibility.kueue.x-k8s.io/v1beta2) is not served in this cluster:",
		"1         pytorch-older  default    user-queue  0         10m  Pending: insufficient quota",
		"2         pytorch-newer  default    user-queue  0         2m   Pending: insufficient quota",
		"default    user-queue  gpus          0         0          2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

func TestQueuesTakesKueuesOrderWhereServed(t *testing.T) {
	kueue := kueuefake.NewSimpleClientset(queueObjects()...)
	kueue.PrependReactor("get", "clusterqueues", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "pendingworkloads" {
			return false, nil, nil
		}
		return true, &visibilityv1beta2.PendingWorkloadsSummary{Items: []visibilityv1beta2.PendingWorkload{
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pytorch-newer"}, LocalQueueName: "user-queue"},
			{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pytorch-older"}, LocalQueueName: "user-queue", PositionInClusterQueue: 1, PositionInLocalQueue: 1},
		}}, nil
	})
	kube := kubefake.NewClientset()
	kube.Resources = []*metav1.APIResourceList{{GroupVersion: "visibility.kueue.x-k8s.io/v1beta2",
		APIResources: []metav1.APIResource{{Name: "clusterqueues/pendingworkloads"}}}}
	out, _, err := runQueuesCommand(t, kueue, kube)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Pending, in Kueue's order (visibility API):") {
		t.Errorf("the output does not say Kueue ordered the queue:\n%s", out)
	}
	if i, j := strings.Index(out, "1         pytorch-newer"), strings.Index(out, "2         pytorch-older"); i < 0 || j < i {
		t.Errorf("not Kueue's order (newer, then older):\n%s", out)
	}
}

func TestQueuesShowsWhatItMayReadAndSaysWhatNot(t *testing.T) {
	kueue := kueuefake.NewSimpleClientset(queueObjects()...)
	kueue.PrependReactor("list", "clusterqueues", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "kueue.x-k8s.io", Resource: "clusterqueues"}, "",
			errors.New(`cannot list resource "clusterqueues" at the cluster scope`))
	})
	out, errOut, err := runQueuesCommand(t, kueue, kubefake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "Error from server (Forbidden)") || !strings.Contains(errOut, "(ClusterQueues left out)") {
		t.Errorf("stderr %q: want the 403, naming what is left out", errOut)
	}
	if !strings.Contains(out, "No ClusterQueues.") || !strings.Contains(out, "user-queue") {
		t.Errorf("the output should still show the LocalQueues:\n%s", out)
	}
}
