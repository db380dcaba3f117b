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
// Command models-schema prints the generated OpenAPI definitions as an
// OpenAPI v2 document; applyconfiguration-gen reads it to learn the
// structure (list types, map keys) of every type.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"tensorstack.dev/training/pkg/generated/openapi"
)

func main() {
	if err := printModels(); err != nil {
		fmt.Fprintf(os.Stderr, "models-schema: %v\n", err)
		os.Exit(1)
	}
}

func printModels() error {
	ref := func(name string) spec.Ref { return spec.MustCreateRef("#/definitions/" + name) }
	definitions := map[string]spec.Schema{}
	for name, def := range openapi.GetOpenAPIDefinitions(ref) {
		schema := def.Schema
		// Types with a separate v2 form carry it in an extension; the output
		// must be v2 throughout.
		if v2, ok := def.Schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schema = v2
		}
		definitions[name] = schema
	}
	return json.NewEncoder(os.Stdout).Encode(&spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "batch.tensorstack.dev", Version: "v1beta1"}},
		Definitions: definitions,
	}})
}
