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

package batch

import "strings"

// The table of the job kinds: what the API calls each kind, as the
// apiserver serves it and kubectl, RBAC and Kueue know it, and which of its
// containers trains. Every layer that names a kind (the registry, the
// clients, the controller, the help texts) reads it from here; a layer's
// own descriptor of a kind holds only behaviour. A new kind is a row.

// KindInfo is what the API says of one job kind.
//
// +k8s:deepcopy-gen=false
type KindInfo struct {
	// Kind is the API kind, e.g. TensorFlowTrainingJob; the list kind is
	// Kind + "List".
	Kind string
	// Resource is the plural resource, e.g. tensorflowtrainingjobs;
	// Singular the singular one.
	Resource, Singular string
	// ShortName is kubectl's abbreviation of the resource, e.g. tj.
	ShortName string
	// TrainingContainer names the container that runs the training program;
	// "" when a replica's first container does.
	TrainingContainer string
	// Scalable: a job of the kind may be elastic, and the kind serves the
	// scale subresource.
	Scalable bool
	// Launcher, when set, is the replica type that starts the training
	// program on the others (an MPI job's launcher): a trainer's command
	// runs there alone, and it is not a node.
	Launcher ReplicaType
	// Helpers are replica types that run the training program but are not
	// the nodes a trainer's numNodes counts (TensorFlow's ps and
	// evaluator).
	Helpers []ReplicaType
}

// RunsTrainerCommand says whether a trainer's command runs on replicas of
// the type: the launcher's, in a kind with one; every type's otherwise.
func (k KindInfo) RunsTrainerCommand(t ReplicaType) bool { return k.Launcher == "" || t == k.Launcher }

// IsNode says whether replicas of the type are the nodes a trainer's
// numNodes counts and resourcesPerNode sizes.
func (k KindInfo) IsNode(t ReplicaType) bool {
	if t == k.Launcher {
		return false
	}
	for _, h := range k.Helpers {
		if t == h {
			return false
		}
	}
	return true
}

// The kinds' names, and the names and short names of their resources.
const (
	TensorFlowTrainingJobKind = "TensorFlowTrainingJob"
	PyTorchTrainingJobKind    = "PyTorchTrainingJob"
	XGBoostTrainingJobKind    = "XGBoostTrainingJob"
	GenericJobKind            = "GenericJob"
	MPIJobKind                = "MPIJob"

	TensorFlowTrainingJobResource  = "tensorflowtrainingjobs"
	TensorFlowTrainingJobShortName = "tj"
	PyTorchTrainingJobResource     = "pytorchtrainingjobs"
	PyTorchTrainingJobShortName    = "pj"
	XGBoostTrainingJobResource     = "xgboosttrainingjobs"
	XGBoostTrainingJobShortName    = "xj"
	GenericJobResource             = "genericjobs"
	GenericJobShortName            = "gj"
	MPIJobResource                 = "mpijobs"
	MPIJobShortName                = "mj"
)

// The rows of the table.
var (
	TensorFlowKind = KindInfo{Kind: TensorFlowTrainingJobKind, Resource: TensorFlowTrainingJobResource,
		Singular: "tensorflowtrainingjob", ShortName: TensorFlowTrainingJobShortName, TrainingContainer: TensorFlowContainerName,
		Helpers: []ReplicaType{ReplicaTypePS, ReplicaTypeEvaluator}}
	PyTorchKind = KindInfo{Kind: PyTorchTrainingJobKind, Resource: PyTorchTrainingJobResource,
		Singular: "pytorchtrainingjob", ShortName: PyTorchTrainingJobShortName, TrainingContainer: PyTorchContainerName,
		Scalable: true}
	XGBoostKind = KindInfo{Kind: XGBoostTrainingJobKind, Resource: XGBoostTrainingJobResource,
		Singular: "xgboosttrainingjob", ShortName: XGBoostTrainingJobShortName, TrainingContainer: XGBoostContainerName}
	GenericKind = KindInfo{Kind: GenericJobKind, Resource: GenericJobResource,
		Singular: "genericjob", ShortName: GenericJobShortName, Scalable: true}
	MPIKind = KindInfo{Kind: MPIJobKind, Resource: MPIJobResource,
		Singular: "mpijob", ShortName: MPIJobShortName, Launcher: ReplicaTypeLauncher}
)

// Kinds is every job kind the group serves, in the order tools look them up
// and list them.
var Kinds = []KindInfo{TensorFlowKind, PyTorchKind, XGBoostKind, GenericKind, MPIKind}

// KindNamed finds the row of an API kind name.
func KindNamed(kind string) (KindInfo, bool) {
	for _, k := range Kinds {
		if k.Kind == kind {
			return k, true
		}
	}
	return KindInfo{}, false
}

// KindsInProse names every kind for a sentence: "A, B, C and D"; with
// short names, "A (a), B (b) and C (c)", plural when asked.
func KindsInProse(plural, shortNames bool) string {
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = k.Kind
		if plural {
			names[i] += "s"
		}
		if shortNames {
			names[i] += " (" + k.ShortName + ")"
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
