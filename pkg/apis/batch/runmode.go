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

// The run-mode changes of the pause, resume and debug actions, in one place
// for the server, which carries them out, and for clients that show what an
// action would do without sending it. A mode switched off keeps its
// settings: resumeSpecs cannot change while the job exists.

// Pause switches pause mode on. A paused job has no pods, so there is
// nothing left to debug: debug mode goes off.
func Pause(spec *TrainingJobSpec) {
	disableDebug(spec)
	mode := runModeOf(spec)
	if mode.Pause == nil {
		mode.Pause = &PauseMode{}
	}
	mode.Pause.Enabled = true
}

// Resume switches both pause and debug mode off.
func Resume(spec *TrainingJobSpec) {
	disableDebug(spec)
	disablePause(spec)
}

// Debug switches debug mode on with the given per-type settings, and pause
// mode off: debug pods must run.
func Debug(spec *TrainingJobSpec, replicaSpecs []ReplicaDebugSpec) {
	disablePause(spec)
	runModeOf(spec).Debug = &DebugMode{Enabled: true, ReplicaSpecs: replicaSpecs}
}

// ModeEnabled decides a run mode's switch from enabled and its deprecated
// v1beta1 spelling enable. The server never returns enable, so an enable in
// a request was written by that client just now, while enabled may be a
// stored value that a merge or patch carried along: an explicit enable
// therefore wins, in both directions. Conversion to the internal version
// folds enable into enabled by this rule, so internal readers need only
// enabled; v1beta1 readers apply it themselves (v1beta1.PauseEnabled).
func ModeEnabled(enabled bool, enable *bool) bool {
	if enable != nil {
		return *enable
	}
	return enabled
}

// PauseEnabled says whether the spec asks for the job to be paused.
func PauseEnabled(spec *TrainingJobSpec) bool {
	return spec.RunMode != nil && spec.RunMode.Pause != nil && spec.RunMode.Pause.Enabled
}

// DebugEnabled says whether the spec asks for the job to run in debug mode.
func DebugEnabled(spec *TrainingJobSpec) bool {
	return spec.RunMode != nil && spec.RunMode.Debug != nil && spec.RunMode.Debug.Enabled
}

func runModeOf(spec *TrainingJobSpec) *RunMode {
	if spec.RunMode == nil {
		spec.RunMode = &RunMode{}
	}
	return spec.RunMode
}

func disablePause(spec *TrainingJobSpec) {
	if spec.RunMode != nil && spec.RunMode.Pause != nil {
		spec.RunMode.Pause.Enabled = false
	}
}

func disableDebug(spec *TrainingJobSpec) {
	if spec.RunMode != nil && spec.RunMode.Debug != nil {
		spec.RunMode.Debug.Enabled = false
	}
}
