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

package v1beta1_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func newCodecs(t *testing.T) serializer.CodecFactory {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return serializer.NewCodecFactory(scheme)
}

// TestEnableFoldsIntoEnabled decodes manifests that use the deprecated enable
// spelling, as the API server does, and checks that it switches the mode on
// or off, wins over enabled when both are given, and is never written back.
func TestEnableFoldsIntoEnabled(t *testing.T) {
	codecs := newCodecs(t)
	decoder := codecs.UniversalDecoder(batch.SchemeGroupVersion)
	encoder := codecs.LegacyCodec(v1beta1.SchemeGroupVersion)

	// mode renders the JSON of a debug or pause block.
	mode := func(enable, enabled *bool) string {
		fields := `"replicaSpecs": [{"type": "worker"}], "resumeSpecs": [{"type": "worker"}]`
		if enable != nil {
			fields += fmt.Sprintf(`, "enable": %t`, *enable)
		}
		if enabled != nil {
			fields += fmt.Sprintf(`, "enabled": %t`, *enabled)
		}
		return "{" + fields + "}"
	}
	yes, no := true, false
	cases := []struct {
		name            string
		enable, enabled *bool
		want            bool
	}{
		{"enable only", &yes, nil, true},
		{"enabled only", nil, &yes, true},
		{"neither", nil, nil, false},
		{"enable false", &no, nil, false},
		{"enable true, enabled false", &yes, &no, true},
		{"enable false, enabled true", &no, &yes, false},
	}
	for _, kind := range []string{"TensorFlowTrainingJob", "PyTorchTrainingJob"} {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				manifest := fmt.Sprintf(`{
					"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": %q,
					"metadata": {"name": "job", "namespace": "default"},
					"spec": {
						"replicaSpecs": [{"type": "worker", "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}],
						"runMode": {"debug": %s, "pause": %s}
					}
				}`, kind, mode(tc.enable, tc.enabled), mode(tc.enable, tc.enabled))
				obj, _, err := decoder.Decode([]byte(manifest), nil, nil)
				if err != nil {
					t.Fatalf("decoding: %v", err)
				}
				job, ok := obj.(batch.TrainingJob)
				if !ok {
					t.Fatalf("decoded a %T, want an internal job", obj)
				}
				runMode := job.CommonSpec().RunMode
				if runMode.Debug.Enabled != tc.want || runMode.Pause.Enabled != tc.want {
					t.Errorf("internal debug.enabled = %t, pause.enabled = %t, want %t", runMode.Debug.Enabled, runMode.Pause.Enabled, tc.want)
				}

				data, err := runtime.Encode(encoder, obj)
				if err != nil {
					t.Fatalf("encoding: %v", err)
				}
				var written struct {
					Spec struct {
						RunMode struct {
							Debug, Pause map[string]interface{}
						} `json:"runMode"`
					} `json:"spec"`
				}
				if err := json.Unmarshal(data, &written); err != nil {
					t.Fatal(err)
				}
				for name, block := range map[string]map[string]interface{}{"debug": written.Spec.RunMode.Debug, "pause": written.Spec.RunMode.Pause} {
					if _, found := block["enable"]; found {
						t.Errorf("%s: the deprecated enable field was written back: %s", name, data)
					}
					if got, _ := block["enabled"].(bool); got != tc.want {
						t.Errorf("%s: written enabled = %v, want %t: %s", name, block["enabled"], tc.want, data)
					}
				}
			})
		}
	}
}

// TestDebugRequestConversion checks that a debug request reaches the
// internal version defaulted.
func TestDebugRequestConversion(t *testing.T) {
	codecs := newCodecs(t)
	obj, _, err := codecs.UniversalDecoder(batch.SchemeGroupVersion).Decode([]byte(`{
		"apiVersion": "batch.tensorstack.dev/v1beta1", "kind": "DebugRequest",
		"replicaSpecs": [{"type": "worker", "skipInitContainer": true}]
	}`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	request, ok := obj.(*batch.DebugRequest)
	if !ok {
		t.Fatalf("decoded a %T, want *batch.DebugRequest", obj)
	}
	if len(request.ReplicaSpecs) != 1 || !request.ReplicaSpecs[0].SkipInitContainer ||
		fmt.Sprint(request.ReplicaSpecs[0].Command) != "[sleep inf]" {
		t.Errorf("unexpected request: %+v", request.ReplicaSpecs)
	}
}
