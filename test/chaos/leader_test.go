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

package chaos

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The leader-election phases replace the stack's controller-manager
// (--leader-elect=false) with the suite's own: slot 1 leads and slot 2
// stands by; slot 1 is killed (failover to 2); slot 3 stands by and slot 2
// is frozen past its lease (takeover by 3), then resumed.
var (
	// leader is the controller-manager leading after leaderFailover.
	leader *controllerManager
)

func (s *suite) leaderFailover(t *testing.T) {
	f := s.f.For(t)
	f.RestartComponent("--stop", "training-controller-manager")
	stopped := time.Now()
	first := s.startControllerManager(t, 1)
	if err := first.waitReadyz("ok", time.Minute); err != nil {
		t.Fatal(err)
	}
	s.figs.add("leader election: first leader ready", time.Since(stopped).Round(100*time.Millisecond).String())
	second := s.startControllerManager(t, 2)
	if err := second.waitReadyz("ok: standby", time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	old, err := leaseHolder(ctx)
	cancel()
	if err != nil || old == "" {
		t.Fatalf("reading the Lease %s/%s: holder %q, %v", leaseNS, leaseName, old, err)
	}
	t.Logf("%s leads as %s; %s stands by", first, old, second)
	// Let the leader renew once more, then kill it and create a job at once.
	time.Sleep(2 * time.Second)
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s: %v", first, err)
	}
	killed := time.Now()
	j, _ := s.probe(t, "probe-failover")
	holder, leaseAt, podsAt := s.takeover(t, old, j, 45*time.Second)
	if err := second.waitReadyz("ok", 10*time.Second); err != nil {
		t.Errorf("the new leader: %v", err)
	}
	failover := podsAt.Sub(killed)
	t.Logf("kill -9 %s: %s holds the Lease after %s; the job created right after the kill had its pods after %s",
		first, holder, leaseAt.Sub(killed).Round(10*time.Millisecond), failover.Round(10*time.Millisecond))
	s.figs.add("failover: Lease taken over", leaseAt.Sub(killed).Round(100*time.Millisecond).String())
	s.figs.add("failover: kill -9 leader -> new job's pods", failover.Round(100*time.Millisecond).String())
	if failover > maxFailover {
		t.Errorf("failover took %s (bound %s)", failover.Round(100*time.Millisecond), maxFailover)
	}
	leader = second
	s.recovered(t, "leader failover", podsAt, time.Minute)
}

// frozenLeader stops the leader with SIGSTOP past its lease, lets a
// standby take over, resumes the old leader and checks it no longer acts:
// no write of it reaches kube-apiserver after it was frozen, the Lease
// stays with the new leader, and the old one exits or stays a standby.
func (s *suite) frozenLeader(t *testing.T) {
	if leader == nil {
		t.Skip("no leader from the failover phase")
	}
	old := leader
	standby := s.startControllerManager(t, 3)
	if err := standby.waitReadyz("ok: standby", time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	oldHolder, err := leaseHolder(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if body, err := old.readyz(); err != nil || body != "ok" {
		t.Fatalf("%s is not the leader: /readyz %q, %v", old, body, err)
	}
	time.Sleep(time.Second)
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s: %v", old, err)
	}
	frozen := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			_ = old.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	t.Logf("SIGSTOP %s (Lease holder %s)", old, oldHolder)
	j, _ := s.probe(t, "probe-frozen")
	newHolder, leaseAt, podsAt := s.takeover(t, oldHolder, j, 45*time.Second)
	t.Logf("%s holds the Lease %s after the freeze; the job created during the freeze had its pods after %s",
		newHolder, leaseAt.Sub(frozen).Round(10*time.Millisecond), podsAt.Sub(frozen).Round(10*time.Millisecond))
	s.figs.add("frozen leader: Lease taken over", leaseAt.Sub(frozen).Round(100*time.Millisecond).String())
	s.figs.add("frozen leader: SIGSTOP -> new job's pods", podsAt.Sub(frozen).Round(100*time.Millisecond).String())

	// Well past the lease and the renew deadline.
	if d := time.Until(frozen.Add(leaseDuration + renewDeadline + 2*time.Second)); d > 0 {
		time.Sleep(d)
	}
	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %s: %v", old, err)
	}
	resumed = true
	cont := time.Now()
	t.Logf("SIGCONT %s after %s frozen", old, cont.Sub(frozen).Round(100*time.Millisecond))

	// Watch for a while: the Lease stays with the new leader.
	const watchFor = 10 * time.Second
	var holders []string
	for time.Since(cont) < watchFor {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		h, err := leaseHolder(ctx)
		cancel()
		if err == nil && (len(holders) == 0 || holders[len(holders)-1] != h) {
			holders = append(holders, h)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, h := range holders {
		if h != newHolder {
			t.Errorf("after the old leader resumed, the Lease holder changed: %v (new leader %s)", holders, newHolder)
			break
		}
	}
	exited, exitAt, exitErr := old.exitState()
	state := ""
	if exited {
		state = fmt.Sprintf("exited %s after SIGCONT (%v)", exitAt.Sub(cont).Round(10*time.Millisecond), exitErr)
	} else if body, err := old.readyz(); err == nil && body == "ok: standby" {
		state = "still running, as a standby"
	} else {
		state = fmt.Sprintf("still running, /readyz %q %v", body, err)
		t.Errorf("the old leader %s neither exited nor became a standby after it resumed: /readyz %q, %v", old, body, err)
	}
	t.Logf("old leader %s: %s", old, state)
	s.figs.add("frozen leader after SIGCONT", state)

	// The audit log: nothing the old leader wrote after it was frozen.
	time.Sleep(time.Second)
	events, err := readAudit()
	if err != nil {
		t.Fatalf("reading the audit log %s: %v", auditLog, err)
	}
	before := map[string]int{}
	var after []string
	for _, e := range events {
		if e.actor() != old.user || e.ObjectRef.Resource == "leases" {
			continue
		}
		what := fmt.Sprintf("%s %s %s/%s", e.Verb, e.resource(), e.ObjectRef.Namespace, e.ObjectRef.Name)
		if e.RequestReceived.Before(frozen) {
			before[e.Verb+" "+e.resource()]++
			continue
		}
		code := 0
		if e.ResponseStatus != nil {
			code = e.ResponseStatus.Code
		}
		after = append(after, fmt.Sprintf("%s: %s -> %d", e.RequestReceived.Format("15:04:05.000"), what, code))
	}
	t.Logf("writes of %s while it led: %s", old, countsString(before))
	if len(before) == 0 {
		t.Errorf("the audit log shows no write of %s while it led: is the audit log (or the impersonation) working?", old)
	}
	if len(after) > 0 {
		sort.Strings(after)
		t.Errorf("%s wrote %d times after it was frozen (it had lost the lease):\n  %s", old, len(after), strings.Join(after, "\n  "))
	} else {
		t.Logf("%s wrote nothing after it was frozen", old)
	}
	s.recovered(t, "the frozen leader's return", time.Now(), time.Minute)
}

func countsString(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
