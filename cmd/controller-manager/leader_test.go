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

package main

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
)

// TestWorkersStopWhenAnotherInstanceHoldsTheLease: a leader that finds
// another holder in the Lease (as one frozen past its lease does when it
// wakes) stops its workers at its next renewal attempt. The renewal
// deadline is far longer than the test waits, so only that reaction can
// pass it; then run reports the lost leadership.
func TestWorkersStopWhenAnotherInstanceHoldsTheLease(t *testing.T) {
	client := fake.NewClientset()
	withOptimisticConcurrency(client)
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "training", client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "us"})
	if err != nil {
		t.Fatal(err)
	}
	var leading atomic.Bool
	election := leaderElection{
		lock: lock, name: "training", leading: &leading,
		leaseDuration: time.Minute, renewDeadline: 50 * time.Second, retryPeriod: 100 * time.Millisecond,
	}

	working := make(chan struct{})
	stopped := make(chan struct{})
	result := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		result <- election.run(ctx, klog.Background(), func(ctx context.Context) {
			close(working)
			<-ctx.Done()
			close(stopped)
		})
	}()
	select {
	case <-working:
	case <-time.After(30 * time.Second):
		t.Fatal("never became the leader")
	}
	if !leading.Load() {
		t.Errorf("leading is false while the workers run")
	}

	// Another instance takes the lease, as after this one was frozen.
	leases := client.CoordinationV1().Leases("kube-system")
	lease, err := leases.Get(ctx, "training", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.HolderIdentity = ptr.To("them")
	lease.Spec.AcquireTime, lease.Spec.RenewTime = &now, &now
	if _, err := leases.Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	select {
	case <-stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("the workers kept running beside the new leader")
	}
	if leading.Load() {
		t.Errorf("leading is still true after the lease was lost")
	}
	// Stopping now, while the elector still tries to renew, must still
	// report the loss: the process exits and its supervisor restarts it.
	cancel()
	select {
	case err := <-result:
		if !errors.Is(err, errLostLeadership) {
			t.Errorf("run returned %v, want errLostLeadership", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return once stopped")
	}
}

// withOptimisticConcurrency makes the fake Leases behave as kube-apiserver's:
// every write gets a new resourceVersion, and an update based on an older
// one is refused with 409. The elector's fast-path renewal relies on that
// to learn that someone else took the lease.
func withOptimisticConcurrency(client *fake.Clientset) {
	leases := coordinationv1.SchemeGroupVersion.WithResource("leases")
	client.PrependReactor("create", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		action.(clienttesting.CreateAction).GetObject().(*coordinationv1.Lease).ResourceVersion = "1"
		return false, nil, nil
	})
	client.PrependReactor("update", "leases", func(action clienttesting.Action) (bool, runtime.Object, error) {
		lease := action.(clienttesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		stored, err := client.Tracker().Get(leases, lease.Namespace, lease.Name)
		if err != nil {
			return true, nil, err
		}
		current := stored.(*coordinationv1.Lease).ResourceVersion
		if lease.ResourceVersion != current {
			return true, nil, apierrors.NewConflict(leases.GroupResource(), lease.Name, errors.New("the object has been modified"))
		}
		n, _ := strconv.Atoi(current)
		lease.ResourceVersion = strconv.Itoa(n + 1)
		return false, nil, nil
	})
}

// TestNoReleaseOfAnotherInstancesLease: a release (an empty holder) by an
// instance whose last read found another holder writes nothing: client-go's
// elector, waking from a freeze, reads the lease afresh but releases it on
// what it saw before, which would empty the new leader's lease.
func TestNoReleaseOfAnotherInstancesLease(t *testing.T) {
	client := fake.NewClientset()
	ctx := context.Background()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "training", Namespace: "kube-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("them"), AcquireTime: &now, RenewTime: &now, LeaseDurationSeconds: ptr.To[int32](15)}}
	if _, err := client.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	inner, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "training", client.CoreV1(), client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: "us"})
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	lock := observingLock{Interface: inner, heldByOther: new(atomic.Bool), renewed: func(time.Time) {},
		otherHolder: func(string) { others++ }}
	record, _, err := lock.Get(ctx)
	if err != nil || record.HolderIdentity != "them" || others != 1 {
		t.Fatalf("Get: %+v, %v, %d other holders seen; want them's lease", record, err, others)
	}
	if err := lock.Update(ctx, resourcelock.LeaderElectionRecord{LeaseDurationSeconds: 1, RenewTime: metav1.Now(), AcquireTime: metav1.Now()}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "training", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(got.Spec.HolderIdentity, ""); h != "them" {
		t.Errorf("the lease's holder is %q after our release, want them's lease untouched", h)
	}
}
