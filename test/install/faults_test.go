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

package install

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// availability samples the APIService's Available condition until stopped.
type availability struct {
	mu          sync.Mutex
	samples     int
	unavailable int
	stop, done  chan struct{}
}

const sampleEvery = 250 * time.Millisecond

func sampleAvailability(e *env) *availability {
	a := &availability{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		ticker := time.NewTicker(sampleEvery)
		defer ticker.Stop()
		for {
			select {
			case <-a.stop:
				return
			case <-ticker.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ok, _ := e.apiServiceAvailable(ctx)
			cancel()
			a.mu.Lock()
			a.samples++
			if !ok {
				a.unavailable++
			}
			a.mu.Unlock()
		}
	}()
	return a
}

// finish stops the sampling and returns how long the APIService was seen
// unavailable.
func (a *availability) finish() time.Duration {
	close(a.stop)
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Duration(a.unavailable) * sampleEvery
}

// testFaults kills one apiserver pod, then one etcd member, then the
// leading controller-manager, under the load of a client. Each time the
// APIService stays or becomes Available again, the installation recovers,
// and no acknowledged job is lost; the seconds are logged.
func testFaults(t *testing.T, e *env) {
	ctx := context.Background()
	faults := []struct {
		name string
		pod  func(t *testing.T) string
		// recovered holds once the installation is whole again.
		recovered func(killed string) func(ctx context.Context) (bool, error)
	}{
		{
			name: "an apiserver pod",
			pod:  func(t *testing.T) string { return e.podOf(t, "training-apiserver") },
			recovered: func(string) func(context.Context) (bool, error) {
				return e.rolledOut
			},
		},
		{
			name: "an etcd member",
			pod:  func(*testing.T) string { return "training-etcd-1" },
			recovered: func(string) func(context.Context) (bool, error) {
				return e.rolledOut
			},
		},
		{
			name: "the leading controller-manager",
			pod:  func(t *testing.T) string { return e.leader(t) },
			recovered: func(killed string) func(context.Context) (bool, error) {
				return func(ctx context.Context) (bool, error) {
					lease, err := e.kube.CoordinationV1().Leases(systemNamespace).Get(ctx, "training-controller-manager", metav1.GetOptions{})
					if err != nil || lease.Spec.HolderIdentity == nil {
						return false, nil
					}
					return !strings.HasPrefix(*lease.Spec.HolderIdentity, killed+"_"), nil
				}
			},
		},
	}
	var acked []string
	for i, f := range faults {
		load := startLoad(e, "fault-load-"+string(rune('a'+i)), 250*time.Millisecond)
		available := sampleAvailability(e)
		time.Sleep(2 * time.Second)
		pod := f.pod(t)
		killed := time.Now()
		if err := e.kube.CoreV1().Pods(systemNamespace).Delete(ctx, pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatalf("killing %s: %v", pod, err)
		}
		// A new pod must first replace the killed one; the old one's status
		// can still read ready for a moment.
		time.Sleep(2 * time.Second)
		waitFor(t, "recovery from killing "+pod, 5*time.Minute, 500*time.Millisecond, f.recovered(pod))
		recovered := time.Since(killed)
		time.Sleep(3 * time.Second)
		unavailable := available.finish()
		requests, failures, a := load.finish()
		acked = append(acked, a...)
		t.Logf("killed %s (%s): whole again after %.1fs; APIService unavailable %.2fs; %d of %d requests failed",
			f.name, pod, recovered.Seconds(), unavailable.Seconds(), len(failures), requests)
		if len(failures) > 0 {
			t.Logf("the first failures:\n%s", strings.Join(failures[:min(5, len(failures))], "\n"))
		}
		if ok, why := e.apiServiceAvailable(ctx); !ok {
			t.Errorf("after killing %s the APIService is not Available: %s", pod, why)
		}
	}
	e.checkStored(t, acked)
	// The new leader works: a job created now gets a status from it.
	if _, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Create(ctx, pausedJob("after-failover"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, "the new leader reconciles a new job", 2*time.Minute, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		j, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).Get(ctx, "after-failover", metav1.GetOptions{})
		return err == nil && len(j.Status.Conditions) > 0, nil
	})
	t.Logf("a job created after the failover got its status in %.1fs", took.Seconds())
}

// podOf is a running pod of a Deployment of the installation.
func (e *env) podOf(t *testing.T, name string) string {
	t.Helper()
	pods, err := e.kube.CoreV1().Pods(systemNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + name})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("no pod of %s: %v", name, err)
	}
	return pods.Items[0].Name
}

// leader is the pod holding the controller-manager's Lease.
func (e *env) leader(t *testing.T) string {
	t.Helper()
	lease, err := e.kube.CoordinationV1().Leases(systemNamespace).Get(context.Background(), "training-controller-manager", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("no leader: %v", err)
	}
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	return pod
}
