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

package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// kindRules is all the shared spec validation needs to know about one job
// kind. Everything else is checked the same way for every kind.
type kindRules struct {
	// framework names the kind in messages: "TensorFlow" or "PyTorch".
	framework string
	// replicaTypes is the closed set of replica types the kind accepts. When
	// empty, any DNS-1123 label is a valid type.
	replicaTypes []batch.ReplicaType
	// bounds limits the replica count of particular types.
	bounds map[batch.ReplicaType]replicaBounds
	// trainingContainer is the name of the container that runs the training
	// program; without a container of that name, the first container does.
	trainingContainer string
	// rendezvousPorts are the names a port of the training container may
	// carry to be the one the replicas reach each other on.
	rendezvousPorts []string
	// envNames are the variables the controller sets in every container of
	// the kind's pods, besides batch.JobEnvNames; envPrefix, when set,
	// starts every other name it sets (names that follow the replica types).
	envNames  []string
	envPrefix string
	// leaderTypes are the types the other replicas wait for under the
	// InOrder startup policy, of which a job must have a replica; empty
	// when the kind's leader always exists (PyTorch's master).
	leaderTypes []batch.ReplicaType
	// validateReplicaSet checks rules about the replica specs taken together.
	// It is called only when every type is present and unique.
	validateReplicaSet func(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList
}

// replicaBounds is the inclusive range of replicas a type may have, with the
// reason a user is shown when a count falls outside it.
type replicaBounds struct {
	min, max int32
	reason   string
}

func (b replicaBounds) message() string {
	if b.min == b.max {
		return fmt.Sprintf("must be %d: %s", b.min, b.reason)
	}
	return fmt.Sprintf("must be between %d and %d: %s", b.min, b.max, b.reason)
}

// asReplicaTypes converts the contract's type names.
func asReplicaTypes(names []string) []batch.ReplicaType {
	types := make([]batch.ReplicaType, len(names))
	for i, n := range names {
		types[i] = batch.ReplicaType(n)
	}
	return types
}
