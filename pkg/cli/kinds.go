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
	"fmt"
	"strings"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
)

// jobKind is a training job kind as the commands see it: the names and the
// typed client of jobclient, and the replica whose log the commands show.
// Every command is written once against the TrainingJob view.
type jobKind struct {
	*jobclient.Kind
	// decidingReplica is the replica whose outcome decides the job, the one
	// `logs` shows when no replica is named.
	decidingReplica func(spec *v1beta1.TrainingJobSpec) (replicaRef, bool)
}

// jobClient is a kind's client behind the TrainingJob view.
type jobClient = jobclient.Client

var tensorFlowKind = &jobKind{
	Kind: jobclient.TensorFlow,
	// The chief decides a TensorFlow job; without one, worker 0 does.
	decidingReplica: func(spec *v1beta1.TrainingJobSpec) (replicaRef, bool) {
		for _, t := range []v1beta1.ReplicaType{v1beta1.ReplicaTypeChief, v1beta1.ReplicaTypeWorker} {
			if replicaCount(spec, t) > 0 {
				return replicaRef{Type: t}, true
			}
		}
		return firstReplica(spec)
	},
}

var pyTorchKind = &jobKind{
	Kind: jobclient.PyTorch,
	// The master replica (type master, else index 0 of the first listed
	// type) is also the one MASTER_ADDR points at.
	decidingReplica: func(spec *v1beta1.TrainingJobSpec) (replicaRef, bool) {
		if replicaCount(spec, v1beta1.ReplicaTypeMaster) > 0 {
			return replicaRef{Type: v1beta1.ReplicaTypeMaster}, true
		}
		return firstReplica(spec)
	},
}

// jobKinds lists both kinds in the order commands look them up and list them.
var jobKinds = []*jobKind{tensorFlowKind, pyTorchKind}

// Ref is how the commands name a job of this kind: tj/NAME.
func (k *jobKind) Ref(name string) string { return k.ShortName + "/" + name }

// kindOf returns the kind of a job object.
func kindOf(job v1beta1.TrainingJob) (*jobKind, error) {
	k, err := jobclient.Of(job)
	if err != nil {
		return nil, err
	}
	for _, kind := range jobKinds {
		if kind.Kind == k {
			return kind, nil
		}
	}
	return nil, fmt.Errorf("kubectl training does not know the kind %s", k.Name)
}

// kindNamed finds the kind a kubectl-style resource word names: the short
// name, the singular or plural resource or the kind, case-insensitively, with
// or without the group (and version) after a dot.
func kindNamed(word string) (*jobKind, bool) {
	word = strings.ToLower(word)
	resource, group, qualified := strings.Cut(word, ".")
	if qualified && group != v1beta1.GroupName && group != v1beta1.SchemeGroupVersion.Version+"."+v1beta1.GroupName {
		return nil, false
	}
	for _, k := range jobKinds {
		if resource == k.ShortName || resource == k.Singular() || resource == k.Resource {
			return k, true
		}
	}
	return nil, false
}
