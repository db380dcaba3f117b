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

var tensorFlowRules = kindRules{
	framework: "TensorFlow",
	replicaTypes: []batch.ReplicaType{
		batch.ReplicaTypeChief, batch.ReplicaTypeWorker, batch.ReplicaTypePS, batch.ReplicaTypeEvaluator,
	},
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeChief:     {0, 1, "a TensorFlow job has at most one chief"},
		batch.ReplicaTypeEvaluator: {0, 1, "a TensorFlow job has at most one evaluator"},
	},
	trainingContainer:  batch.TensorFlowContainerName,
	rendezvousPorts:    batch.TensorFlowPortNames(),
	envNames:           batch.TensorFlowEnvNames(),
	leaderTypes:        asReplicaTypes(batch.TensorFlowLeaderTypes()),
	validateReplicaSet: validateTensorFlowReplicaSet,
}

var pyTorchRules = kindRules{
	framework: "PyTorch",
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeMaster: {1, 1, "a PyTorch job has exactly one master"},
	},
	trainingContainer:  batch.PyTorchContainerName,
	rendezvousPorts:    batch.PyTorchPortNames(),
	envNames:           batch.PyTorchEnvNames(),
	validateReplicaSet: validatePyTorchReplicaSet,
}

var xgboostRules = kindRules{
	framework:    "XGBoost",
	replicaTypes: []batch.ReplicaType{batch.ReplicaTypeMaster, batch.ReplicaTypeWorker},
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeMaster: {1, 1, "an XGBoost job has exactly one master, which hosts the tracker"},
	},
	trainingContainer:  batch.XGBoostContainerName,
	rendezvousPorts:    batch.XGBoostPortNames(),
	envNames:           batch.XGBoostEnvNames(),
	validateReplicaSet: validateXGBoostReplicaSet,
}

var mpiRules = kindRules{
	framework:    "MPI",
	replicaTypes: []batch.ReplicaType{batch.ReplicaTypeLauncher, batch.ReplicaTypeWorker},
	bounds: map[batch.ReplicaType]replicaBounds{
		batch.ReplicaTypeLauncher: {1, 1, "an MPI job has exactly one launcher, which runs mpirun"},
	},
	envNames:           batch.MPIEnvNames(),
	leaderTypes:        []batch.ReplicaType{batch.ReplicaTypeWorker},
	validateReplicaSet: validateMPIReplicaSet,
}

// validateMPIReplicaSet asks for the launcher and at least one worker:
// mpirun starts the ranks on the workers.
func validateMPIReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	var launcher, workers bool
	for i := range specs {
		switch specs[i].Type {
		case batch.ReplicaTypeLauncher:
			launcher = true
		case batch.ReplicaTypeWorker:
			workers = batch.ReplicasOf(&specs[i]) > 0
		}
	}
	if !launcher || !workers {
		return field.ErrorList{field.Required(fldPath,
			"an MPI job needs a launcher replica type and a worker type with at least one replica: mpirun, on the launcher, starts the ranks on the workers")}
	}
	return nil
}

var genericRules = kindRules{
	framework: "generic",
	envNames:  batch.GenericEnvNames(),
	envPrefix: batch.GenericEnvPrefix,
}

// validateXGBoostReplicaSet asks for the master: it hosts the tracker every
// worker connects to, and its exit decides the job.
func validateXGBoostReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	for _, spec := range specs {
		if spec.Type == batch.ReplicaTypeMaster {
			return nil
		}
	}
	return field.ErrorList{field.Required(fldPath,
		"an XGBoost job needs a master replica type: the master hosts the tracker and decides whether the job succeeds")}
}

// validateTensorFlowReplicaSet asks for a replica that can decide the job's
// outcome: the chief, or without one worker 0. Parameter servers and the
// evaluator alone never finish successfully.
func validateTensorFlowReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	for _, spec := range specs {
		if (spec.Type == batch.ReplicaTypeChief || spec.Type == batch.ReplicaTypeWorker) && batch.ReplicasOf(&spec) > 0 {
			return nil
		}
	}
	return field.ErrorList{field.Required(fldPath,
		"a TensorFlow job needs at least one chief or worker replica: the chief, or without one worker 0, decides whether the job succeeds")}
}

// validatePyTorchReplicaSet makes sure the rendezvous master exists. With a
// master type it is the master replica (whose count the bounds fix at 1);
// without one it is replica 0 of the first listed type, which must therefore
// have a replica.
func validatePyTorchReplicaSet(specs []batch.ReplicaSpec, fldPath *field.Path) field.ErrorList {
	for _, spec := range specs {
		if spec.Type == batch.ReplicaTypeMaster {
			return nil
		}
	}
	if n := batch.ReplicasOf(&specs[0]); n < 1 {
		return field.ErrorList{field.Invalid(fldPath.Index(0).Child("replicas"), n,
			fmt.Sprintf("must be at least 1: without a %q replica type, replica 0 of the first listed type (%q) is the rendezvous master (MASTER_ADDR)",
				batch.ReplicaTypeMaster, specs[0].Type))}
	}
	return nil
}

// asReplicaTypes converts the contract's type names.
func asReplicaTypes(names []string) []batch.ReplicaType {
	types := make([]batch.ReplicaType, len(names))
	for i, n := range names {
		types[i] = batch.ReplicaType(n)
	}
	return types
}
