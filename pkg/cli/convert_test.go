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

package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/kubeflow"
)

// kubeflowJobs is a TFJob with a namespace and a field that does not carry
// over, and a PyTorchJob without a namespace.
const kubeflowJobs = `apiVersion: kubeflow.org/v1
kind: TFJob
metadata:
  name: mnist
  namespace: team
spec:
  runPolicy:
    schedulingPolicy:
      minAvailable: 3
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf:2
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: resnet
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
          - name: pytorch
            image: pt:2
`

// manifestFile writes content to a file of the test's and returns its path.
func manifestFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "jobs.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// conversionWarnings are the lines convert and create print for the
// warnings pkg/kubeflow reports of the input.
func conversionWarnings(t *testing.T, input string) string {
	t.Helper()
	converted, err := kubeflow.Convert(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	var lines strings.Builder
	for _, c := range converted {
		for _, w := range c.Warnings {
			lines.WriteString("Warning: " + w.Path + ": " + w.Message + "\n")
		}
	}
	if lines.Len() == 0 {
		t.Fatal("the input should make pkg/kubeflow warn")
	}
	return lines.String()
}

func TestConvertPrintsYAMLDocuments(t *testing.T) {
	f := newFixture(t)
	for _, args := range [][]string{
		{"convert", "-f", manifestFile(t, kubeflowJobs)},
		{"convert", "-f", "-"},
	} {
		f.stdin = kubeflowJobs
		out := f.mustRun(args...)
		documents := strings.Split(out, "\n---\n")
		if len(documents) != 2 {
			t.Fatalf("%v: %d documents; want 2:\n%s", args, len(documents), out)
		}
		var tj v1beta1.TensorFlowTrainingJob
		var pj v1beta1.PyTorchTrainingJob
		if err := yaml.UnmarshalStrict([]byte(documents[0]), &tj); err != nil || tj.Kind != "TensorFlowTrainingJob" || tj.Name != "mnist" || tj.Namespace != "team" {
			t.Errorf("%v: first document %s %s/%s (%v); want TensorFlowTrainingJob team/mnist", args, tj.Kind, tj.Namespace, tj.Name, err)
		}
		if err := yaml.UnmarshalStrict([]byte(documents[1]), &pj); err != nil || pj.Kind != "PyTorchTrainingJob" || pj.Name != "resnet" {
			t.Errorf("%v: second document %s %s (%v); want PyTorchTrainingJob resnet", args, pj.Kind, pj.Name, err)
		}
		if strings.Contains(out, "status:") {
			t.Errorf("%v: the converted manifests carry a status:\n%s", args, out)
		}
		if got, want := f.errOut.String(), conversionWarnings(t, kubeflowJobs); got != want {
			t.Errorf("%v: stderr %q; want %q", args, got, want)
		}
		if n := len(f.training.Actions()) + len(f.kube.Actions()); n != 0 {
			t.Errorf("%v: convert sent %d requests", args, n)
		}
	}
}

func TestConvertPrintsJSON(t *testing.T) {
	f := newFixture(t)
	out := f.mustRun("convert", "-f", manifestFile(t, kubeflowJobs), "-o", "json")
	var list metav1.List
	if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" || len(list.Items) != 2 {
		t.Fatalf("-o json of two jobs: %v, a %s of %d items; want a List of 2:\n%s", err, list.Kind, len(list.Items), out)
	}

	single, _, _ := strings.Cut(kubeflowJobs, "---\n")
	out = f.mustRun("convert", "-f", manifestFile(t, single), "-o", "json")
	var job v1beta1.TensorFlowTrainingJob
	if err := json.Unmarshal([]byte(out), &job); err != nil || job.Kind != "TensorFlowTrainingJob" || len(job.Spec.ReplicaSpecs) != 1 {
		t.Errorf("-o json of one job: %v, %s with %d replica specs:\n%s", err, job.Kind, len(job.Spec.ReplicaSpecs), out)
	}
}

func TestConvertErrors(t *testing.T) {
	f := newFixture(t)
	deployment := manifestFile(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"convert"}, `required flag(s) "filename" not set`},
		{[]string{"convert", "-f", manifestFile(t, kubeflowJobs), "-o", "wide"}, `invalid -o "wide": must be yaml or json`},
		{[]string{"convert", "-f", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml: no such file or directory"},
		{[]string{"convert", "-f", deployment}, "converting " + deployment + ": document 0: "},
		{[]string{"convert", "-f", manifestFile(t, "# nothing\n")}, "no TFJob, PyTorchJob, XGBoostJob or MPIJob in ["},
		{[]string{"create", "-f", deployment}, "converting " + deployment + ": document 0: "},
	} {
		err := f.run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: error %v; want one containing %q", tc.args, err, tc.wantErr)
		}
		if f.out.Len() != 0 {
			t.Errorf("%v: printed %q despite the error", tc.args, f.out.String())
		}
	}
}

// createdJobs are the jobs the command created, as namespace/name.
func (f *fixture) createdJobs() (jobs []string, options []metav1.CreateOptions) {
	for _, action := range f.training.Actions() {
		if create, ok := action.(clienttesting.CreateActionImpl); ok && create.Subresource == "" {
			obj := create.Object.(v1beta1.TrainingJob)
			jobs = append(jobs, create.Resource.Resource+" "+create.Namespace+"/"+obj.GetName())
			options = append(options, create.CreateOptions)
		}
	}
	return jobs, options
}

func TestCreate(t *testing.T) {
	f := newFixture(t)
	out := f.mustRun("create", "-f", manifestFile(t, kubeflowJobs))
	if want := "tensorflowtrainingjob.batch.tensorstack.dev/mnist created\npytorchtrainingjob.batch.tensorstack.dev/resnet created\n"; out != want {
		t.Errorf("output %q; want %q", out, want)
	}
	if got, want := f.errOut.String(), conversionWarnings(t, kubeflowJobs); got != want {
		t.Errorf("stderr %q; want %q", got, want)
	}
	jobs, options := f.createdJobs()
	if want := []string{"tensorflowtrainingjobs team/mnist", "pytorchtrainingjobs default/resnet"}; strings.Join(jobs, ",") != strings.Join(want, ",") {
		t.Errorf("created %v; want %v (the manifest's namespace, else the default)", jobs, want)
	}
	for _, o := range options {
		if o.FieldManager != "kubectl-training" || len(o.DryRun) != 0 {
			t.Errorf("create options %+v; want field manager kubectl-training, no dry run", o)
		}
	}
	if _, err := f.training.BatchV1beta1().PyTorchTrainingJobs("default").Get(t.Context(), "resnet", metav1.GetOptions{}); err != nil {
		t.Errorf("the PyTorch job was not stored: %v", err)
	}

	// Created again, both exist already.
	err := f.run("create", "-f", manifestFile(t, kubeflowJobs))
	if !apierrors.IsAlreadyExists(err) || !strings.Contains(err.Error(), `creating tj/mnist in namespace "team"`) || !strings.Contains(err.Error(), `creating pj/resnet in namespace "default"`) {
		t.Errorf("second create: error %v; want AlreadyExists for both jobs", err)
	}
}

func TestCreateDryRun(t *testing.T) {
	f := newFixture(t)
	out := f.mustRun("create", "-f", manifestFile(t, kubeflowJobs), "--dry-run=server")
	if want := "tensorflowtrainingjob.batch.tensorstack.dev/mnist created (server dry run)\npytorchtrainingjob.batch.tensorstack.dev/resnet created (server dry run)\n"; out != want {
		t.Errorf("server dry run: output %q; want %q", out, want)
	}
	_, options := f.createdJobs()
	if len(options) != 2 || len(options[0].DryRun) != 1 || options[0].DryRun[0] != metav1.DryRunAll || len(options[1].DryRun) != 1 {
		t.Errorf("server dry run: create options %+v; want dryRun [All] on both", options)
	}

	f = newFixture(t)
	out = f.mustRun("create", "-f", manifestFile(t, kubeflowJobs), "--dry-run=client", "-n", "team", "-o", "name")
	if want := "tensorflowtrainingjob.batch.tensorstack.dev/mnist\npytorchtrainingjob.batch.tensorstack.dev/resnet\n"; out != want {
		t.Errorf("client dry run: output %q; want %q", out, want)
	}
	if n := len(f.training.Actions()); n != 0 {
		t.Errorf("client dry run sent %d requests", n)
	}
}

func TestCreateInTheNamespaceOfTheFlag(t *testing.T) {
	f := newFixture(t)
	err := f.run("create", "-f", manifestFile(t, kubeflowJobs), "-n", "other", "-o", "jsonpath={.metadata.namespace}")
	if err == nil || err.Error() != `the namespace of tj/mnist in its manifest, "team", is not the namespace "other" of -n` {
		t.Errorf("error %v; want the namespace conflict of tj/mnist", err)
	}
	// The job without a namespace goes where -n says.
	if jobs, _ := f.createdJobs(); len(jobs) != 1 || jobs[0] != "pytorchtrainingjobs other/resnet" {
		t.Errorf("created %v; want only pj/resnet in other", jobs)
	}
	if out := f.out.String(); out != "other" {
		t.Errorf("output %q; want the namespace of the created job", out)
	}
}
