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

package podbuilder

import "tensorstack.dev/training/pkg/apis/batch/v1beta1"

// AnnotationRunMode on a replica pod records the mode it was started in
// (RunModeImmediate or RunModeDebug). When the job's mode changes, pods of
// the other mode are replaced.
const (
	AnnotationRunMode = v1beta1.GroupName + "/run-mode"
	RunModeImmediate  = "Immediate"
	RunModeDebug      = "Debug"
)

// AnnotationTopology on a replica pod records the job's replica counts the
// pod was built for (Topology.Shape). Pods built for other counts disagree
// with the rest about the cluster (TF_CONFIG, WORLD_SIZE), so they are
// replaced.
const AnnotationTopology = v1beta1.GroupName + "/topology"

// DebugEnabled says whether the job runs in debug mode.
func DebugEnabled(spec *v1beta1.TrainingJobSpec) bool { return v1beta1.DebugEnabled(spec) }

// debugSpec is how a replica type starts in debug mode.
func debugSpec(spec *v1beta1.TrainingJobSpec, typ v1beta1.ReplicaType) (command []string, skipInit bool) {
	if m := spec.RunMode; m != nil && m.Debug != nil {
		for _, d := range m.Debug.ReplicaSpecs {
			if d.Type == typ {
				command, skipInit = d.Command, d.SkipInitContainer
				break
			}
		}
	}
	if len(command) == 0 {
		command = v1beta1.DefaultDebugCommand
	}
	return append([]string(nil), command...), skipInit
}

// resumeSpec is how a replica type starts after a pause, or nil.
func resumeSpec(spec *v1beta1.TrainingJobSpec, typ v1beta1.ReplicaType) *v1beta1.ResumeSpec {
	if m := spec.RunMode; m != nil && m.Pause != nil {
		for i := range m.Pause.ResumeSpecs {
			if m.Pause.ResumeSpecs[i].Type == typ {
				return &m.Pause.ResumeSpecs[i]
			}
		}
	}
	return nil
}

// RunMode is the value of AnnotationRunMode for a pod started in debug
// mode or not.
func RunMode(debug bool) string {
	if debug {
		return RunModeDebug
	}
	return RunModeImmediate
}
