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

package spec

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

func TestKueueConfigurationSetsTheStacksFields(t *testing.T) {
	template := `apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
health: {healthProbeBindAddress: ":8081"}
webhook: {port: 9443, certDir: /tmp/certs}
manageJobsWithoutQueueName: false
integrations: {frameworks: [batch/job]}
`
	s := &Settings{KueueHealthPort: 16265, KueueMetricsPort: 16264, KueueWebhookPort: 16263, KueuePodsReadyTimeout: "90s"}
	out, err := kueueConfiguration([]byte(template), s, "/stack/kueue/certs")
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatalf("the result is not YAML: %v\n%s", err, out)
	}
	for path, want := range map[string]any{
		"health.healthProbeBindAddress": "127.0.0.1:16265",
		"metrics.bindAddress":           "127.0.0.1:16264",
		"webhook.host":                  "127.0.0.1",
		"webhook.port":                  int64(16263),
		"webhook.certDir":               "/stack/kueue/certs",
		"waitForPodsReady.timeout":      "90s",
		"manageJobsWithoutQueueName":    false,
	} {
		value, found, err := unstructured.NestedFieldNoCopy(got, strings.Split(path, ".")...)
		if n, ok := value.(float64); ok {
			value = int64(n)
		}
		if err != nil || !found || value != want {
			t.Errorf("%s = %v (found %v, %v), want %v", path, value, found, err, want)
		}
	}
	if frameworks, _, _ := unstructured.NestedStringSlice(got, "integrations", "frameworks"); len(frameworks) != 1 || frameworks[0] != "batch/job" {
		t.Errorf("integrations.frameworks = %v: the template's other fields must stay", frameworks)
	}
}

func TestKueueConfigurationRefusesAnotherDocument(t *testing.T) {
	for name, template := range map[string]string{
		"not YAML":            "kind: [Configuration",
		"not a Configuration": "apiVersion: v1\nkind: ConfigMap\n",
		"health not a map":    "kind: Configuration\nhealth: 8081\n",
	} {
		if _, err := kueueConfiguration([]byte(template), &Settings{}, "/certs"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
