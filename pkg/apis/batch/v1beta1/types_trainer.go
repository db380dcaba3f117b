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

package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
)

// RuntimeRef names the runtime a job starts from.
type RuntimeRef struct {
	// Name is the runtime's name. A TrainingRuntime is looked up in the
	// job's own namespace.
	// +required
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Kind is ClusterTrainingRuntime (the default) or TrainingRuntime.
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,2,opt,name=kind"`
}

// Trainer is what the person who trains gives a job made from a runtime:
// their program, how many nodes run it and what each node gets. The
// apiserver applies it to the runtime's replica specs when the job is
// created (docs/runtimes.md says how); what it gives replaces the
// runtime's.
type Trainer struct {
	// Image replaces the image of the training container of every replica
	// type.
	// +optional
	Image string `json:"image,omitempty" protobuf:"bytes,1,opt,name=image"`

	// Command is the program to train with, started by the runtime's
	// launcher: it and Args become the training container's args, after
	// the runtime's command. It runs on every replica type, or on the
	// launcher alone in an MPIJob.
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty" protobuf:"bytes,2,rep,name=command"`

	// Args follow Command; without Command, they follow the runtime's
	// args.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty" protobuf:"bytes,3,rep,name=args"`

	// Env is set in the training container of every replica type, over
	// the runtime's variables of the same names. A variable the controller
	// sets may not be given.
	// +optional
	// +listType=map
	// +listMapKey=name
	Env []corev1.EnvVar `json:"env,omitempty" protobuf:"bytes,4,rep,name=env"`

	// NumNodes is how many replicas run the training program, across the
	// replica types that are nodes (all but an MPIJob's launcher and a
	// TensorFlow job's ps and evaluator). The last such type takes what
	// the others leave. At most 1000.
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty" protobuf:"varint,5,opt,name=numNodes"`

	// ResourcesPerNode is set in the training container of every node,
	// resource by resource over the runtime's.
	// +optional
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty" protobuf:"bytes,6,opt,name=resourcesPerNode"`

	// Script is a program carried to the pods with the job, without an
	// image build.
	// +optional
	Script *TrainerScript `json:"script,omitempty" protobuf:"bytes,7,opt,name=script"`
}

// TrainerScript is a program the job carries. The controller keeps it in a
// ConfigMap the job owns and mounts it read-only in every container at
// /var/run/tensorstack/script/<name>, and TRAINING_SCRIPT holds that path;
// the runtime's launcher runs it.
type TrainerScript struct {
	// Name is the script's file name, e.g. train.py.
	// +required
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`

	// Source is the script's text: at most 256 KiB.
	// +required
	Source string `json:"source" protobuf:"bytes,2,opt,name=source"`
}

// AppliedRuntime records the runtime a job was made from, as it was when
// the job was created.
type AppliedRuntime struct {
	// Kind is ClusterTrainingRuntime or TrainingRuntime.
	Kind string `json:"kind" protobuf:"bytes,1,opt,name=kind"`

	// Name is the runtime's name.
	Name string `json:"name" protobuf:"bytes,2,opt,name=name"`

	// UID is the runtime's UID.
	UID string `json:"uid" protobuf:"bytes,3,opt,name=uid"`

	// ResourceVersion is the runtime's resourceVersion that was applied.
	ResourceVersion string `json:"resourceVersion" protobuf:"bytes,4,opt,name=resourceVersion"`

	// Hash is a SHA-256, in hex, of the runtime's template that was
	// applied: two jobs with the same hash came from the same template.
	Hash string `json:"hash" protobuf:"bytes,5,opt,name=hash"`
}
