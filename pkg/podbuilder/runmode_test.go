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

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func TestDebugEnabled(t *testing.T) {
	cases := []struct {
		name string
		mode *v1beta1.RunMode
		want bool
	}{
		{"no run mode", nil, false},
		{"no debug", &v1beta1.RunMode{}, false},
		{"enabled", &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enabled: true}}, true},
		{"enable (the other spelling)", &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enable: ptr.To(true)}}, true},
		{"enable false", &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enable: ptr.To(false)}}, false},
		// The deprecated spelling, when given, decides, as the server's
		// conversion says (batch.ModeEnabled).
		{"enable false over enabled", &v1beta1.RunMode{Debug: &v1beta1.DebugMode{Enabled: true, Enable: ptr.To(false)}}, false},
		{"pause is not debug", &v1beta1.RunMode{Pause: &v1beta1.PauseMode{Enabled: true}}, false},
	}
	for _, tc := range cases {
		if got := DebugEnabled(&v1beta1.TrainingJobSpec{RunMode: tc.mode}); got != tc.want {
			t.Errorf("%s: DebugEnabled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDebugAndResumeSpecs: a replica type's own entry applies; others start
// as the defaults say. Types arrive in their stored spelling (the API
// canonicalizes them before anything is stored), and are compared as such.
func TestDebugAndResumeSpecs(t *testing.T) {
	spec := &v1beta1.TrainingJobSpec{RunMode: &v1beta1.RunMode{
		Debug: &v1beta1.DebugMode{Enabled: true, ReplicaSpecs: []v1beta1.ReplicaDebugSpec{
			{Type: "worker", Command: []string{"bash", "-c", "sleep 60"}, SkipInitContainer: true},
		}},
		Pause: &v1beta1.PauseMode{ResumeSpecs: []v1beta1.ResumeSpec{{Type: "ps", Args: []string{"--resume"}}}},
	}}
	command, skipInit := debugSpec(spec, "worker")
	if !slices.Equal(command, []string{"bash", "-c", "sleep 60"}) || !skipInit {
		t.Errorf("worker: debug command %v, skip init %v", command, skipInit)
	}
	command, skipInit = debugSpec(spec, "chief")
	if !slices.Equal(command, v1beta1.DefaultDebugCommand) || skipInit {
		t.Errorf("chief: debug command %v, skip init %v; want the default", command, skipInit)
	}
	command[0] = "changed"
	if v1beta1.DefaultDebugCommand[0] == "changed" {
		t.Errorf("debugSpec returned the default command itself, not a copy")
	}
	if rs := resumeSpec(spec, "ps"); rs == nil || !slices.Equal(rs.Args, []string{"--resume"}) {
		t.Errorf("ps: resumeSpec %+v", rs)
	}
	if rs := resumeSpec(spec, "worker"); rs != nil {
		t.Errorf("worker: resumeSpec %+v, want none", rs)
	}
}
