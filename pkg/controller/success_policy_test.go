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

package controller

import (
	"testing"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// donePhases says which replicas succeeded, by hostname.
type donePhases map[string]bool

func (d donePhases) Succeeded(id podbuilder.ReplicaID) bool { return d[id.Hostname()] }

func (d donePhases) AllSucceeded() bool {
	for _, ok := range d {
		if !ok {
			return false
		}
	}
	return len(d) > 0
}

func TestJobSucceeded(t *testing.T) {
	tf := newTFJob("j").withReplicas("chief", 1).withReplicas("ps", 1).withReplicas("worker", 2).obj()
	tfNoChief := newTFJob("j").withReplicas("ps", 1).withReplicas("worker", 2).obj()
	tfNoWorkers := newTFJob("j").withReplicas("chief", 1).obj()
	tfZeroWorkers := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 0).obj()
	pt := newPyTorchJob("j").withReplicas("master", 1).withReplicas("worker", 2).obj()
	ptNoMaster := newPyTorchJob("j").withReplicas("worker", 2).obj()
	cases := []struct {
		name   string
		job    v1beta1.TrainingJob
		policy v1beta1.SuccessPolicy
		done   donePhases
		want   bool
	}{
		{"TF default: the chief decides", tf, "", donePhases{"chief-0": true, "ps-0": false, "worker-0": false}, true},
		{"TF default: workers do not decide with a chief", tf, v1beta1.SuccessPolicyDefault,
			donePhases{"chief-0": false, "worker-0": true, "worker-1": true}, false},
		{"TF default without a chief: worker 0 decides", tfNoChief, "", donePhases{"worker-0": true, "worker-1": false}, true},
		{"TF default without a chief: worker 1 does not", tfNoChief, "", donePhases{"worker-0": false, "worker-1": true}, false},
		{"TF default: the ps never decides", tfNoChief, "", donePhases{"ps-0": true}, false},
		{"AllWorkers: all done", tf, v1beta1.SuccessPolicyAllWorkers, donePhases{"worker-0": true, "worker-1": true}, true},
		{"AllWorkers: one left", tf, v1beta1.SuccessPolicyAllWorkers, donePhases{"chief-0": true, "worker-0": true}, false},
		{"AnyWorker: one done", tf, v1beta1.SuccessPolicyAnyWorker, donePhases{"worker-1": true}, true},
		{"AnyWorker: none done, the chief is", tf, v1beta1.SuccessPolicyAnyWorker, donePhases{"chief-0": true}, false},
		{"AllWorkers without workers decides nothing", tfNoWorkers, v1beta1.SuccessPolicyAllWorkers, donePhases{"chief-0": true}, false},
		{"AllWorkers with zero workers decides nothing", tfZeroWorkers, v1beta1.SuccessPolicyAllWorkers, donePhases{"chief-0": true}, false},
		{"AnyWorker without workers decides nothing", tfNoWorkers, v1beta1.SuccessPolicyAnyWorker, donePhases{"chief-0": true}, false},
		{"PyTorch default: the master decides", pt, "", donePhases{"master-0": true, "worker-0": false}, true},
		{"PyTorch default: workers do not decide with a master", pt, "", donePhases{"master-0": false, "worker-0": true, "worker-1": true}, false},
		{"PyTorch default without a master: every replica", ptNoMaster, "", donePhases{"worker-0": true, "worker-1": true}, true},
		{"PyTorch default without a master: one left", ptNoMaster, "", donePhases{"worker-0": true, "worker-1": false}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := podbuilder.AdapterFor(tc.job)
			if err != nil {
				t.Fatal(err)
			}
			topo := podbuilder.NewTopology(a, tc.job, "")
			if got := jobSucceeded(a, topo, tc.policy, tc.done); got != tc.want {
				t.Errorf("jobSucceeded = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSuccessPolicies: which replicas decide success.
func TestSuccessPolicies(t *testing.T) {
	cases := []struct {
		policy    v1beta1.SuccessPolicy
		succeed   []string
		wantPhase v1beta1.JobPhase
	}{
		{"", []string{"j-chief-0"}, v1beta1.JobSucceeded},
		{v1beta1.SuccessPolicyDefault, []string{"j-worker-0"}, v1beta1.JobRunning},
		{v1beta1.SuccessPolicyAllWorkers, []string{"j-chief-0"}, v1beta1.JobRunning},
		{v1beta1.SuccessPolicyAllWorkers, []string{"j-chief-0", "j-worker-0"}, v1beta1.JobRunning},
		{v1beta1.SuccessPolicyAllWorkers, []string{"j-worker-0", "j-worker-1"}, v1beta1.JobSucceeded},
		{v1beta1.SuccessPolicyAnyWorker, []string{"j-chief-0"}, v1beta1.JobRunning},
		{v1beta1.SuccessPolicyAnyWorker, []string{"j-worker-1"}, v1beta1.JobSucceeded},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy)+"/"+joinNames(tc.succeed), func(t *testing.T) {
			job := newTFJob("j").withReplicas("chief", 1).withReplicas("worker", 2).raw()
			job.CommonSpec().RunPolicy.SuccessPolicy = tc.policy
			f := newFixture(t, job)
			f.start(job)
			for _, n := range tc.succeed {
				f.setPod(n, succeeded)
			}
			f.step(job)
			assertPhase(t, f.status(job), tc.wantPhase)
		})
	}
}
