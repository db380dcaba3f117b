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

package kueue

import (
	"context"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	kueuefake "sigs.k8s.io/kueue/client-go/clientset/versioned/fake"
)

// TestGateFollowsTheCluster: the Gate builds a Queue when Kueue becomes
// usable, is usable only once the Queue's caches are filled, drops the
// Queue when Kueue stops being usable, builds a new one when it is back,
// and tells its listeners of every change.
func TestGateFollowsTheCluster(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answer := Availability{Reason: ReasonNotServed, Message: "not served"}
	built := 0
	g := NewGate(GateConfig{
		Probe: func(context.Context) Availability { return answer },
		NewQueue: func() *Queue {
			built++
			return New(kueuefake.NewSimpleClientset(), 0) //nolint:staticcheck // the fake of Kueue's clientset
		},
	})
	var watched []*Queue
	if err := g.OnQueue(func(q *Queue) error { watched = append(watched, q); return nil }); err != nil {
		t.Fatal(err)
	}
	var changes []string
	g.OnChange(func(a Availability) { changes = append(changes, a.Reason) })

	decided := func() bool {
		select {
		case <-g.Decided():
			return true
		default:
			return false
		}
	}
	if q, a := g.Current(); q != nil || a.Usable || a.Reason != ReasonNotChecked || decided() {
		t.Fatalf("before the first check: %v %+v decided=%v; want nothing usable, undecided", q, a, decided())
	}
	g.Check(ctx)
	if q, a := g.Current(); q != nil || a.Reason != ReasonNotServed || !decided() || built != 0 {
		t.Fatalf("Kueue not served: %v %+v decided=%v built=%d", q, a, decided(), built)
	}

	// checkUntilSynced checks until the caches are filled.
	checkUntilSynced := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			g.Check(ctx)
			if _, a := g.Current(); a.Reason != ReasonSyncing {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the Queue's caches never filled")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	answer = available()
	checkUntilSynced()
	first, a := g.Current()
	if first == nil || !a.Usable || built != 1 || len(watched) != 1 || watched[0] != first {
		t.Fatalf("Kueue usable: queue %v %+v built=%d watched=%d; want the one Queue, watched", first, a, built, len(watched))
	}
	g.Check(ctx)
	if q, _ := g.Current(); q != first || built != 1 {
		t.Fatalf("a second check built another Queue (%d)", built)
	}

	// A failed check (discovery unreachable for a moment) is not usable,
	// but keeps the Queue.
	answer = Availability{Reason: ReasonCheckFailed, Message: "connection refused"}
	g.Check(ctx)
	if q, a := g.Current(); q != nil || a.Usable {
		t.Fatalf("after a failed check: %v %+v, want not usable", q, a)
	}
	answer = available()
	g.Check(ctx)
	if q, _ := g.Current(); q != first {
		t.Fatalf("the Queue was rebuilt after a failed check")
	}

	answer = Availability{Reason: ReasonForbidden, Message: "may not watch workloads"}
	g.Check(ctx)
	if q, a := g.Current(); q != nil || a.Reason != ReasonForbidden {
		t.Fatalf("RBAC revoked: %v %+v, want Forbidden and no Queue", q, a)
	}
	answer = available()
	checkUntilSynced()
	if q, _ := g.Current(); q == nil || q == first || built != 2 || len(watched) != 2 {
		t.Fatalf("RBAC granted again: built=%d watched=%d; want a new Queue, watched", built, len(watched))
	}
	// Syncing may be seen once or not at all on a fast cache.
	got := []string{}
	for _, c := range changes {
		if c != ReasonSyncing {
			got = append(got, c)
		}
	}
	wantNoSync := []string{ReasonNotServed, ReasonAvailable, ReasonCheckFailed, ReasonAvailable, ReasonForbidden, ReasonAvailable}
	if len(got) != len(wantNoSync) {
		t.Fatalf("changes %v, want %v (Syncing aside)", changes, wantNoSync)
	}
	for i := range got {
		if got[i] != wantNoSync[i] {
			t.Fatalf("changes %v, want %v (Syncing aside)", changes, wantNoSync)
		}
	}
}

// TestStaticGates: --queueing=none and a Gate given its Queue decide once.
func TestStaticGates(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	disabled := DisabledGate("--queueing=none")
	disabled.Run(ctx) // returns: nothing to recheck
	if q, a := disabled.Current(); q != nil || a.Usable || !disabled.Disabled() || a.Message != "--queueing=none" {
		t.Errorf("DisabledGate: %v %+v", q, a)
	}
	q := New(kueuefake.NewSimpleClientset(), 0) //nolint:staticcheck // the fake of Kueue's clientset
	usable := UsableGate(q)
	usable.Run(ctx)
	if got, a := usable.Current(); got != q || !a.Usable || usable.Disabled() {
		t.Errorf("UsableGate: %v %+v", got, a)
	}
	for name, g := range map[string]*Gate{"disabled": disabled, "usable": usable} {
		select {
		case <-g.Decided():
		default:
			t.Errorf("%s gate is not decided", name)
		}
	}
}
