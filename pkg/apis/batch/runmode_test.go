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

import "testing"

func TestPauseEnabled(t *testing.T) {
	spec := &TrainingJobSpec{}
	if PauseEnabled(spec) {
		t.Errorf("a spec without a run mode is paused")
	}
	spec.RunMode = &RunMode{Pause: &PauseMode{ResumeSpecs: []ResumeSpec{{Type: ReplicaTypeWorker}}}}
	if PauseEnabled(spec) {
		t.Errorf("a spec with pause mode off is paused")
	}
	Pause(spec)
	if !PauseEnabled(spec) {
		t.Errorf("a paused spec is not paused")
	}
	Debug(spec, nil)
	if PauseEnabled(spec) {
		t.Errorf("a debugged spec is paused")
	}
	Pause(spec)
	Resume(spec)
	if PauseEnabled(spec) {
		t.Errorf("a resumed spec is paused")
	}
}
