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

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every training job kind.
const GroupName = "batch.tensorstack.dev"

// SchemeGroupVersion is the internal version of the group.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: runtime.APIVersionInternal}

var (
	// SchemeBuilder collects the functions that register this version in a scheme.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme registers this version's types, defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Internal types have no defaults or conversions of their own.
	localSchemeBuilder.Register(addKnownTypes)
}

// Resource qualifies a resource name with this group.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

// jobKindTypes are every job kind's object and list. Each kind adds its
// own where it is declared (types_<kind>.go), so a new kind needs no edit
// here.
var jobKindTypes []runtime.Object

// runtimeTypes are the runtimes' objects and lists (types_runtime.go).
var runtimeTypes []runtime.Object

// tuningTypes are the searches' objects and lists (types_tuning.go).
var tuningTypes []runtime.Object

// recordTypes are the deleted jobs' records and their lists (types_record.go).
var recordTypes []runtime.Object

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, jobKindTypes...)
	scheme.AddKnownTypes(SchemeGroupVersion, runtimeTypes...)
	scheme.AddKnownTypes(SchemeGroupVersion, tuningTypes...)
	scheme.AddKnownTypes(SchemeGroupVersion, recordTypes...)
	scheme.AddKnownTypes(SchemeGroupVersion,
		&PauseRequest{},
		&ResumeRequest{},
		&DebugRequest{},
		&ProgressReport{},
		&ProgressHistory{},
		&CheckpointReport{},
	)
	return nil
}

// Kind qualifies a kind name with this group.
func Kind(kind string) schema.GroupKind {
	return SchemeGroupVersion.WithKind(kind).GroupKind()
}
