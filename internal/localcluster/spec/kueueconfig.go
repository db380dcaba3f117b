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
	"fmt"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// kueueConfiguration is Kueue's Configuration (kueue --config) for this stack: hack/local/kueue/kueue-config.yaml,
// decoded, with the fields the stack decides (its addresses, certificate directory and PodsReady timeout) set, and
// encoded again. A field the template lacks is added; one it has is replaced, whatever it held.
func kueueConfiguration(template []byte, s *Settings, certDir string) ([]byte, error) {
	var config map[string]any
	if err := yaml.Unmarshal(template, &config); err != nil {
		return nil, fmt.Errorf("the Kueue configuration template: %w", err)
	}
	if kind, _, _ := unstructured.NestedString(config, "kind"); kind != "Configuration" {
		return nil, fmt.Errorf("the Kueue configuration template is a %q, want a Configuration", kind)
	}
	loopback := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	for _, f := range []struct {
		value any
		path  []string
	}{
		{loopback(s.KueueHealthPort), []string{"health", "healthProbeBindAddress"}},
		{loopback(s.KueueMetricsPort), []string{"metrics", "bindAddress"}},
		{"127.0.0.1", []string{"webhook", "host"}},
		{int64(s.KueueWebhookPort), []string{"webhook", "port"}},
		{certDir, []string{"webhook", "certDir"}},
		{s.KueuePodsReadyTimeout, []string{"waitForPodsReady", "timeout"}},
	} {
		if err := unstructured.SetNestedField(config, f.value, f.path...); err != nil {
			return nil, fmt.Errorf("the Kueue configuration template: %w", err)
		}
	}
	out, err := yaml.Marshal(config)
	if err != nil {
		return nil, err
	}
	header := "# Kueue's configuration on the local stack, made by internal/localcluster from\n" +
		"# hack/local/kueue/kueue-config.yaml with this stack's addresses.\n"
	return append([]byte(header), out...), nil
}
