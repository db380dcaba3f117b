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

// The rules of a job's node checks, shared by validation, the pod builder
// and the controller.
const (
	// MaxSuspectNodes is how many nodes status.suspectNodes keeps: enough
	// to step around a bad rack, few enough that a job cannot exclude a
	// whole cluster by failing everywhere.
	MaxSuspectNodes = 16

	// PreflightContainerName is the init container that runs a job's
	// preflight check. The controller reads its end to tell a failed check
	// from a failed program, so a pod template may not use the name.
	PreflightContainerName = "tensorstack-preflight"

	// MaxSuspectNodeMessageBytes bounds what a suspect node's entry says.
	MaxSuspectNodeMessageBytes = 512
)
