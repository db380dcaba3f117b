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

package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/jobclient"
	"tensorstack.dev/training/test/integration/framework"
)

// TestExamplesAccepted creates every manifest under artifacts/examples
// through the REST API, as kubectl create would.
func TestExamplesAccepted(t *testing.T) {
	files, err := filepath.Glob("../../artifacts/examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests under artifacts/examples")
	}
	s := framework.StartTestServer(t, "")
	rc := restClient(t, s)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var manifest struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(data, &manifest); err != nil {
				t.Fatalf("parsing: %v", err)
			}
			kind, ok := jobclient.ByKind(manifest.Kind)
			if !ok {
				t.Fatalf("kind %q is not a training job", manifest.Kind)
			}
			resource := kind.Resource
			body, err := yaml.YAMLToJSON(data)
			if err != nil {
				t.Fatalf("converting to JSON: %v", err)
			}
			namespace := strings.TrimSuffix(filepath.Base(file), ".yaml")
			raw, err := rc.Post().AbsPath("/apis/batch.tensorstack.dev/v1beta1/namespaces", namespace, resource).
				Body(body).SetHeader("Content-Type", "application/json").DoRaw(context.Background())
			if err != nil {
				t.Fatalf("create: %v: %s", err, raw)
			}
		})
	}
}
