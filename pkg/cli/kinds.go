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
	"tensorstack.dev/training/pkg/podbuilder"
)

// jobKind is a training job kind as the commands see it: the names and the
// typed client of jobclient. Every command is written once against the
// TrainingJob view.
type jobKind struct {
	*jobclient.Kind
}

// jobClient is a kind's client behind the TrainingJob view.
type jobClient = jobclient.Client

// jobKinds lists the kinds in the order commands look them up and list
// them: jobclient's.
var jobKinds = func() []*jobKind {
	kinds := make([]*jobKind, 0, len(jobclient.Kinds))
	for _, k := range jobclient.Kinds {
		kinds = append(kinds, &jobKind{Kind: k})
	}
	return kinds
}()

// decidingReplica is the replica whose outcome decides the job, the one
// `logs` shows when no replica is named: the kind's own rule
// (podbuilder's Decider).
func decidingReplica(job v1beta1.TrainingJob) (replicaRef, bool) {
	a, err := podbuilder.AdapterFor(job)
	if err != nil {
		return replicaRef{}, false
	}
	r, ok := a.Decider(podbuilder.NewTopology(a, job, ""))
	return replicaRef{Type: r.Type, Index: int(r.Index)}, ok
}

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

// kindCalled finds the kind an API kind name, e.g. PyTorchTrainingJob, names.
func kindCalled(name string) (*jobKind, bool) {
	for _, k := range jobKinds {
		if k.Name == name {
			return k, true
		}
	}
	return nil, false
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
