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
	"fmt"
	"time"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// class is what a job of the workload is meant to do.
type class string

const (
	// classSucceed: every pod exits 0 after a run long enough to span some
	// of the disruptions.
	classSucceed class = "succeed"
	// classFail: one replica exits 3 under restartPolicy Never.
	classFail class = "fail"
	// classBackoff: one replica exits 1 on every run under OnFailure with
	// backoffLimit 1: replaced once, then the job fails.
	classBackoff class = "backoff"
	// classDeleteSucceeded: the worker succeeds early; the suite deletes
	// its pod; the chief (master) succeeds later.
	classDeleteSucceeded class = "delete-succeeded"
	// classDeleteRunning: the suite deletes the running worker's pod once
	// (OnFailure, backoffLimit 3): one failure, one replacement.
	classDeleteRunning class = "delete-running"
	// classProbe: jobs created during the leader-election phases to time
	// the takeover; two workers exit 0 after 3s.
	classProbe class = "probe"
)

// Reasons of the Failed condition (defined beside their policies in pkg/controller; not imported,
// so that the suite builds while the controller package is being changed).
const (
	reasonReplicaFailed        = "ReplicaFailed"
	reasonBackoffLimitExceeded = "BackoffLimitExceeded"
)

var classes = []class{classSucceed, classFail, classBackoff, classDeleteSucceeded, classDeleteRunning, classProbe}

// chaosJob is one job of the workload and what must hold for it at the end.
type chaosJob struct {
	class   class
	builder *framework.JobBuilder
	ref     framework.JobRef
	// pods are the replica pod names, in spec order.
	pods []string
	// lasts is how long after creation the job is expected to finish
	// without disruptions (restart backoffs included).
	lasts time.Duration

	wantPhase   v1beta1.JobPhase
	wantReason  string // reason of the Failed condition; empty for Succeeded
	wantBackoff int32
	// wantUIDs is how many pods (UIDs) each pod name must have had; names
	// not listed: exactly one.
	wantUIDs map[string]int
	// target is the pod the suite deletes (delete-* classes).
	target string
}

func (j *chaosJob) uids(pod string) int {
	if n, ok := j.wantUIDs[pod]; ok {
		return n
	}
	return 1
}

// replica is one replica type of a job being built.
type replica struct {
	typ    v1beta1.ReplicaType
	n      int32
	policy v1beta1.RestartPolicy
	exit   *int32 // nil: runs until deleted
	runFor time.Duration
}

func exit(code int32) *int32 { return &code }

func newChaosJob(c class, kind framework.Kind, name string, backoffLimit *int32, replicas ...replica) *chaosJob {
	b := framework.NewTFJob(name)
	if kind == framework.KindPyTorch {
		b = framework.NewPyTorchJob(name)
	}
	j := &chaosJob{class: c, builder: b, wantPhase: v1beta1.JobSucceeded}
	for _, r := range replicas {
		b.WithReplicas(string(r.typ), r.n)
		if r.policy != "" {
			b.WithRestartPolicy(string(r.typ), r.policy)
		}
		if r.exit != nil {
			b.ReplicaExitCode(string(r.typ), *r.exit)
			b.ReplicaRunFor(string(r.typ), r.runFor.String())
		} else {
			b.Forever(string(r.typ))
		}
		for i := int32(0); i < r.n; i++ {
			j.pods = append(j.pods, v1beta1.PodName(name, r.typ, i))
		}
	}
	if backoffLimit != nil {
		b.BackoffLimit(*backoffLimit)
	}
	j.ref = framework.JobRef{Kind: kind, Namespace: namespace, Name: name}
	return j
}

// spread maps i of n onto [lo, hi], whole seconds.
func spread(i, n int, lo, hi time.Duration) time.Duration {
	if n <= 1 {
		return lo
	}
	d := lo + time.Duration(i)*(hi-lo)/time.Duration(n-1)
	return d.Round(time.Second)
}

func kindOf(i int) framework.Kind {
	if i%2 == 0 {
		return framework.KindTF
	}
	return framework.KindPyTorch
}

// restartBackoff is the delay before the first replacement of an exited
// replica (10s, doubling) in the controller's target semantics.
const restartBackoff = 10 * time.Second

// workload is the mix of about 120 jobs of 2-4 pods. The runs are spread
// over the phases so that jobs end before, during and after each
// disruption.
func workload() []*chaosJob {
	var jobs []*chaosJob
	never, onFailure := v1beta1.RestartPolicyNever, v1beta1.RestartPolicyOnFailure
	// (a) 60 jobs that succeed: every pod exits 0 after 30-190s.
	const nSucceed = 60
	for i := 0; i < nSucceed; i++ {
		d := spread(i, nSucceed, 30*time.Second, 190*time.Second)
		workers := int32(1 + i%3)
		policy := never
		if i%4 >= 2 {
			policy = onFailure
		}
		lead := v1beta1.ReplicaTypeChief
		if kindOf(i) == framework.KindPyTorch {
			lead = v1beta1.ReplicaTypeMaster
		}
		j := newChaosJob(classSucceed, kindOf(i), fmt.Sprintf("ok-%02d", i), nil,
			replica{typ: lead, n: 1, policy: policy, exit: exit(0), runFor: d},
			replica{typ: v1beta1.ReplicaTypeWorker, n: workers, policy: policy, exit: exit(0), runFor: d})
		j.lasts = d
		jobs = append(jobs, j)
	}
	// (b) 20 jobs where one replica exits 3 under Never after 20-150s: Failed,
	// reason ReplicaFailed, no restart.
	const nFail = 20
	for i := 0; i < nFail; i++ {
		d := spread(i, nFail, 20*time.Second, 150*time.Second)
		var j *chaosJob
		name := fmt.Sprintf("fail-%02d", i)
		if kindOf(i) == framework.KindTF {
			rs := []replica{
				{typ: v1beta1.ReplicaTypeChief, n: 1, policy: never},
				{typ: v1beta1.ReplicaTypeWorker, n: 1, policy: never, exit: exit(3), runFor: d},
			}
			if ps := int32(i % 3); ps > 0 {
				rs = append(rs, replica{typ: v1beta1.ReplicaTypePS, n: ps, policy: never})
			}
			j = newChaosJob(classFail, framework.KindTF, name, nil, rs...)
		} else {
			j = newChaosJob(classFail, framework.KindPyTorch, name, nil,
				replica{typ: v1beta1.ReplicaTypeMaster, n: 1, policy: never, exit: exit(3), runFor: d},
				replica{typ: v1beta1.ReplicaTypeWorker, n: int32(1 + i%3), policy: never})
		}
		j.wantPhase, j.wantReason, j.lasts = v1beta1.JobFailed, reasonReplicaFailed, d
		jobs = append(jobs, j)
	}
	// (c) 20 jobs where one replica exits 1 on every run after 10-80s, under
	// OnFailure with backoffLimit 1: replaced once (after the restart
	// backoff), then Failed with BackoffLimitExceeded.
	const nBackoff = 20
	for i := 0; i < nBackoff; i++ {
		d := spread(i, nBackoff, 10*time.Second, 80*time.Second)
		name := fmt.Sprintf("backoff-%02d", i)
		var j *chaosJob
		var failing string
		if kindOf(i) == framework.KindTF {
			rs := []replica{
				{typ: v1beta1.ReplicaTypeChief, n: 1, policy: onFailure},
				{typ: v1beta1.ReplicaTypeWorker, n: 1, policy: onFailure, exit: exit(1), runFor: d},
			}
			if ps := int32(i % 3); ps > 0 {
				rs = append(rs, replica{typ: v1beta1.ReplicaTypePS, n: ps, policy: onFailure})
			}
			j = newChaosJob(classBackoff, framework.KindTF, name, ptr(1), rs...)
			failing = v1beta1.PodName(name, v1beta1.ReplicaTypeWorker, 0)
		} else {
			j = newChaosJob(classBackoff, framework.KindPyTorch, name, ptr(1),
				replica{typ: v1beta1.ReplicaTypeMaster, n: 1, policy: onFailure, exit: exit(1), runFor: d},
				replica{typ: v1beta1.ReplicaTypeWorker, n: int32(1 + i%3), policy: onFailure})
			failing = v1beta1.PodName(name, v1beta1.ReplicaTypeMaster, 0)
		}
		j.wantPhase, j.wantReason, j.wantBackoff = v1beta1.JobFailed, reasonBackoffLimitExceeded, 1
		j.wantUIDs = map[string]int{failing: 2}
		j.lasts = 2*d + restartBackoff
		jobs = append(jobs, j)
	}
	// (d) 10 jobs whose single worker succeeds after 6s and whose chief
	// (master) succeeds after 60-170s; the suite deletes the succeeded
	// worker's pod: the job still succeeds and the worker never runs again.
	const nDeleteSucceeded = 10
	for i := 0; i < nDeleteSucceeded; i++ {
		d := spread(i, nDeleteSucceeded, 60*time.Second, 170*time.Second)
		name := fmt.Sprintf("delsucc-%02d", i)
		policy := never
		if i%2 == 0 {
			policy = onFailure
		}
		lead := v1beta1.ReplicaTypeChief
		if kindOf(i) == framework.KindPyTorch {
			lead = v1beta1.ReplicaTypeMaster
		}
		rs := []replica{
			{typ: lead, n: 1, policy: policy, exit: exit(0), runFor: d},
			{typ: v1beta1.ReplicaTypeWorker, n: 1, policy: policy, exit: exit(0), runFor: 6 * time.Second},
		}
		if kindOf(i) == framework.KindTF && i%4 == 0 {
			rs = append(rs, replica{typ: v1beta1.ReplicaTypePS, n: 1, policy: policy})
		}
		j := newChaosJob(classDeleteSucceeded, kindOf(i), name, nil, rs...)
		j.target = v1beta1.PodName(name, v1beta1.ReplicaTypeWorker, 0)
		j.lasts = d
		jobs = append(jobs, j)
	}
	// (e) 10 jobs (OnFailure, backoffLimit 3) whose running worker's pod the
	// suite deletes once: backoffCount 1, the worker replaced once, and the
	// job succeeds with its chief (master) after 60-170s.
	const nDeleteRunning = 10
	for i := 0; i < nDeleteRunning; i++ {
		d := spread(i, nDeleteRunning, 60*time.Second, 170*time.Second)
		name := fmt.Sprintf("delrun-%02d", i)
		lead := v1beta1.ReplicaTypeChief
		if kindOf(i) == framework.KindPyTorch {
			lead = v1beta1.ReplicaTypeMaster
		}
		rs := []replica{
			{typ: lead, n: 1, policy: onFailure, exit: exit(0), runFor: d},
			{typ: v1beta1.ReplicaTypeWorker, n: 1, policy: onFailure, exit: exit(0), runFor: d},
		}
		if kindOf(i) == framework.KindTF && i%4 == 0 {
			rs = append(rs, replica{typ: v1beta1.ReplicaTypePS, n: 1, policy: onFailure})
		}
		j := newChaosJob(classDeleteRunning, kindOf(i), name, ptr(3), rs...)
		j.target = v1beta1.PodName(name, v1beta1.ReplicaTypeWorker, 0)
		j.wantBackoff = 1
		j.wantUIDs = map[string]int{j.target: 2}
		j.lasts = d
		jobs = append(jobs, j)
	}
	return jobs
}

// probeJob is a small job created during a disruption to time how soon a
// controller acts on it.
func probeJob(name string) *chaosJob {
	j := newChaosJob(classProbe, framework.KindTF, name, nil,
		replica{typ: v1beta1.ReplicaTypeWorker, n: 2, policy: v1beta1.RestartPolicyNever, exit: exit(0), runFor: 3 * time.Second})
	j.lasts = 5 * time.Second
	return j
}

func ptr(n int32) *int32 { return &n }
