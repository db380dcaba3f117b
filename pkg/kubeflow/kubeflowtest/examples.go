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
// of the converter: those in the module cache copies of the
// training-operator and mpi-operator releases whose APIs the converter
// follows.
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

// Source is a Kubeflow release whose examples are converted: its module,
// the API version and kinds of the jobs in them, and how many files hold
// one and how many jobs there are, counted when the tests were written (a
// test that finds fewer must not pass).
type Source struct {
	Module     string
	APIVersion string
	Kinds      []string
	Files      int
	Documents  int
}

// The releases whose examples the tests convert: training-operator's
// kubeflow.org/v1 jobs, and mpi-operator's kubeflow.org/v2beta1 MPIJobs
// (v0.8.0 is the newest the module proxy serves).
var (
	TrainingOperator = Source{
		Module:     "github.com/kubeflow/training-operator@v1.9.4",
		APIVersion: "kubeflow.org/v1",
		Kinds:      []string{"TFJob", "PyTorchJob", "XGBoostJob", "MPIJob"},
		Files:      23,
		Documents:  23,
	}
	MPIOperator = Source{
		Module:     "github.com/kubeflow/mpi-operator@v0.8.0",
		APIVersion: "kubeflow.org/v2beta1",
		Kinds:      []string{"MPIJob"},
		Files:      5,
		Documents:  5,
	}
	Sources = []Source{TrainingOperator, MPIOperator}
)

// Example is one job document of a Kubeflow example file.
type Example struct {
	// File is the file's path below the module's examples directory.
	File string
	// Index is the document's place in the file, from 0.
	Index int
	// Kind is the job's Kubeflow kind.
	Kind string
	// Object is the document as generic JSON values.
	Object map[string]interface{}
}

// Name identifies the example in test names and messages.
func (e Example) Name() string {
	return fmt.Sprintf("%s#%d", e.File, e.Index)
}

// AllExamples returns the examples of every source, and fails the test
// when a source holds fewer than were counted.
func AllExamples(t testing.TB) []Example {
	t.Helper()
	var all []Example
	for _, src := range Sources {
		found, files := Examples(t, src)
		if files != src.Files || len(found) != src.Documents {
			t.Fatalf("%s: found %d documents in %d files, want %d in %d", src.Module, len(found), files, src.Documents, src.Files)
		}
		all = append(all, found...)
	}
	return all
}

// Examples returns every job of the source's API version and kinds in the
// *.yaml files under its module's examples directory, and the number of
// files they come from. Other documents (PVCs, ...) are skipped. The test
// is skipped only when there is no go command to find the module with.
func Examples(t testing.TB, src Source) (examples []Example, files int) {
	t.Helper()
	root := filepath.Join(moduleDir(t, src.Module), "examples")
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
		found := documents(t, src, rel, data)
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

func documents(t testing.TB, src Source, file string, data []byte) []Example {
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
		if obj["apiVersion"] != src.APIVersion || !slices.Contains(src.Kinds, kind) {
			continue
		}
		found = append(found, Example{File: file, Index: index, Kind: kind, Object: obj})
	}
}

// moduleDir asks the go command where the module is; it is in the module
// cache already, so this needs no network.
func moduleDir(t testing.TB, module string) string {
	t.Helper()
	goCommand, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to find %s with: %v", module, err)
	}
	cmd := exec.Command(goCommand, "mod", "download", "-json", module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v: %s", module, err, stderr.String())
	}
	var result struct{ Dir, Error string }
	if err := json.Unmarshal(out, &result); err != nil {
		t.Fatalf("reading the output of go mod download: %v", err)
	}
	if result.Dir == "" {
		t.Fatalf("go mod download %s gave no directory: %s", module, result.Error)
	}
	return result.Dir
}
