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

// Package kubeflowtest finds Kubeflow's own example manifests for the tests
// of the converter: those in the module cache copy of the training-operator
// release whose API the converter follows.
package kubeflowtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Module is the Kubeflow training-operator release whose examples are used.
const Module = "github.com/kubeflow/training-operator@v1.9.4"

// The number of example files with a TFJob, PyTorchJob, XGBoostJob or MPIJob in Module, and of
// those documents, counted when the tests were written: a test that finds
// fewer must not pass.
const (
	ExampleFiles     = 23
	ExampleDocuments = 23
)

// Example is one TFJob, PyTorchJob, XGBoostJob or MPIJob document of a Kubeflow example file.
type Example struct {
	// File is the file's path below the module's examples directory.
	File string
	// Index is the document's place in the file, from 0.
	Index int
	// Kind is TFJob, PyTorchJob, XGBoostJob or MPIJob.
	Kind string
	// Object is the document as generic JSON values.
	Object map[string]interface{}
}

// Name identifies the example in test names and messages.
func (e Example) Name() string {
	return fmt.Sprintf("%s#%d", e.File, e.Index)
}

// Examples returns every kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob and MPIJob document of the
// *.yaml files under the module's examples directory, and the number of
// files they come from. Other documents (PVCs, MPIJobs, ...) are skipped. The
// test is skipped only when there is no go command to find the module with.
func Examples(t testing.TB) (examples []Example, files int) {
	t.Helper()
	root := filepath.Join(moduleDir(t), "examples")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".yaml" {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		found := documents(t, rel, data)
		if len(found) > 0 {
			files++
		}
		examples = append(examples, found...)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the Kubeflow examples: %v", err)
	}
	return examples, files
}

func documents(t testing.TB, file string, data []byte) []Example {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var found []Example
	for index := 0; ; index++ {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return found
		}
		if err != nil {
			t.Fatalf("%s document %d: %v", file, index, err)
		}
		var obj map[string]interface{}
		if err := utilyaml.Unmarshal(document, &obj); err != nil {
			t.Fatalf("%s document %d: %v", file, index, err)
		}
		kind, _ := obj["kind"].(string)
		if obj["apiVersion"] != "kubeflow.org/v1" || !slices.Contains([]string{"TFJob", "PyTorchJob", "XGBoostJob", "MPIJob"}, kind) {
			continue
		}
		found = append(found, Example{File: file, Index: index, Kind: kind, Object: obj})
	}
}

// moduleDir asks the go command where the module is; it is in the module
// cache already, so this needs no network.
func moduleDir(t testing.TB) string {
	t.Helper()
	goCommand, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to find %s with: %v", Module, err)
	}
	cmd := exec.Command(goCommand, "mod", "download", "-json", Module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v: %s", Module, err, stderr.String())
	}
	var module struct{ Dir, Error string }
	if err := json.Unmarshal(out, &module); err != nil {
		t.Fatalf("reading the output of go mod download: %v", err)
	}
	if module.Dir == "" {
		t.Fatalf("go mod download %s gave no directory: %s", Module, module.Error)
	}
	return module.Dir
}
