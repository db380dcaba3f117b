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
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/kubeflow"
)

// fieldManager owns the fields of the jobs create writes.
const fieldManager = "kubectl-training"

// manifestFlags is -f, the Kubeflow manifests to read.
type manifestFlags struct {
	filenames []string
}

func (m *manifestFlags) addFlags(cmd *cobra.Command) {
	cmd.Flags().StringArrayVarP(&m.filenames, "filename", "f", nil, "A file of Kubeflow TFJob/PyTorchJob/XGBoostJob/MPIJob manifests (YAML or JSON, several documents allowed); - reads standard input. May repeat.")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
}

// convert reads and converts every file; one that fails to convert stops
// everything, so that nothing is half done.
func (m *manifestFlags) convert(e *env) ([]kubeflow.Converted, error) {
	var all []kubeflow.Converted
	for _, name := range m.filenames {
		converted, err := convertFile(e.streams.In, name)
		if err != nil {
			return nil, err
		}
		all = append(all, converted...)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no TFJob, PyTorchJob, XGBoostJob or MPIJob in %v", m.filenames)
	}
	return all, nil
}

func convertFile(stdin io.Reader, name string) ([]kubeflow.Converted, error) {
	in := stdin
	if name != "-" {
		file, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer file.Close()
		in = file
	}
	converted, err := kubeflow.Convert(in)
	if err != nil {
		return nil, fmt.Errorf("converting %s: %w", displayName(name), err)
	}
	return converted, nil
}

func displayName(filename string) string {
	if filename == "-" {
		return "standard input"
	}
	return filename
}

// printWarnings tells what of a manifest could not be carried over exactly.
func printWarnings(e *env, converted kubeflow.Converted) {
	for _, w := range converted.Warnings {
		fmt.Fprintf(e.streams.ErrOut, "Warning: %s\n", w)
	}
}

func newConvertCommand(e *env) *cobra.Command {
	var manifests manifestFlags
	var output string
	cmd := &cobra.Command{
		Use:   "convert -f FILE [-o yaml|json]",
		Short: "Convert Kubeflow TFJob, PyTorchJob, XGBoostJob and MPIJob manifests into training jobs",
		Long: `Convert kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob and MPIJob manifests,
and mpi-operator's kubeflow.org/v2beta1 MPIJobs, into TensorFlowTrainingJobs,
PyTorchTrainingJobs, XGBoostTrainingJobs and MPIJobs, and print them: YAML
documents separated by ---, or with -o json one JSON object (a List when there
are several). Whatever cannot be carried over exactly is reported on standard error as "Warning: <path>: <message>".
Nothing is sent to the cluster.`,
		Example: `  kubectl training convert -f tfjob.yaml > tensorflowtrainingjob.yaml
  kubectl get pytorchjob resnet -o yaml | kubectl training convert -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			printer, err := documentPrinter(output)
			if err != nil {
				return err
			}
			all, err := manifests.convert(e)
			if err != nil {
				return err
			}
			objects := make([]runtime.Object, len(all))
			for i, converted := range all {
				printWarnings(e, converted)
				if objects[i], err = withoutStatus(converted.Object); err != nil {
					return err
				}
			}
			return printer(objects, e.streams.Out)
		},
	}
	manifests.addFlags(cmd)
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "Output format: yaml or json.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// withoutStatus drops the status, which a manifest to apply has no use for:
// the typed job always carries its (empty) status counts.
func withoutStatus(obj runtime.Object) (runtime.Object, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("printing the converted %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	delete(content, "status")
	return &unstructured.Unstructured{Object: content}, nil
}

// documentPrinter prints converted objects as -o says.
func documentPrinter(output string) (func([]runtime.Object, io.Writer) error, error) {
	switch output {
	case "yaml":
		return func(objects []runtime.Object, out io.Writer) error {
			// The YAML printer puts --- between the documents it prints.
			printer := &printers.YAMLPrinter{}
			for _, obj := range objects {
				if err := printer.PrintObj(obj, out); err != nil {
					return err
				}
			}
			return nil
		}, nil
	case "json":
		return func(objects []runtime.Object, out io.Writer) error {
			printer := &printers.JSONPrinter{}
			if len(objects) == 1 {
				return printer.PrintObj(objects[0], out)
			}
			list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
			for _, obj := range objects {
				list.Items = append(list.Items, runtime.RawExtension{Object: obj})
			}
			return printer.PrintObj(list, out)
		}, nil
	default:
		return nil, fmt.Errorf("invalid -o %q: must be yaml or json", output)
	}
}

func newCreateCommand(e *env) *cobra.Command {
	var manifests manifestFlags
	var dryRunValue string
	var output *outputFlags
	cmd := &cobra.Command{
		Use:   "create -f FILE",
		Short: "Convert Kubeflow TFJob, PyTorchJob, XGBoostJob and MPIJob manifests and create the training jobs",
		Long: `Convert kubeflow.org/v1 TFJob, PyTorchJob, XGBoostJob and MPIJob manifests, and
mpi-operator's kubeflow.org/v2beta1 MPIJobs (as convert does), and create the
jobs, each in its manifest's namespace, else in the namespace of -n or the
kubeconfig context. Conversion warnings go to standard error. Every
manifest is converted before any job is created.`,
		Example: `  kubectl training create -f tfjob.yaml
  kubectl training create -f pytorchjob.yaml -n team --dry-run=server -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dry, err := parseDryRun(dryRunValue)
			if err != nil {
				return err
			}
			if err := output.validate(); err != nil {
				return err
			}
			all, err := manifests.convert(e)
			if err != nil {
				return err
			}
			return createJobs(cmd.Context(), e, all, dry, output)
		},
	}
	manifests.addFlags(cmd)
	output = newOutputFlags(cmd)
	addDryRunFlag(cmd, &dryRunValue)
	return cmd
}

// createJobs creates every converted job. One that fails does not stop the
// others, as with kubectl create; the failures are returned together.
func createJobs(ctx context.Context, e *env, all []kubeflow.Converted, dry dryRun, output *outputFlags) error {
	c, err := e.clients()
	if err != nil {
		return err
	}
	_, explicit, err := e.Namespace()
	if err != nil {
		return err
	}
	var errs []error
	for _, converted := range all {
		printWarnings(e, converted)
		created, err := createJob(ctx, c, explicit, converted.Object, dry)
		if err == nil {
			err = output.printObject(created, dry.describe("created"), e)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func createJob(ctx context.Context, c clients, explicitNamespace bool, obj runtime.Object, dry dryRun) (v1beta1.TrainingJob, error) {
	job, ok := obj.(v1beta1.TrainingJob)
	if !ok {
		return nil, fmt.Errorf("the conversion made a %T, not a training job", obj)
	}
	kind, err := kindOf(job)
	if err != nil {
		return nil, err
	}
	job = job.DeepCopyObject().(v1beta1.TrainingJob)
	switch namespace := job.GetNamespace(); {
	case namespace == "":
		job.SetNamespace(c.namespace)
	case explicitNamespace && namespace != c.namespace:
		// As kubectl create: -n does not move a manifest that names its namespace.
		return nil, fmt.Errorf("the namespace of %s in its manifest, %q, is not the namespace %q of -n", kind.Ref(jobName(job)), namespace, c.namespace)
	}
	if dry == dryRunClient {
		return job, nil
	}
	opts := dry.createOptions()
	opts.FieldManager = fieldManager
	created, err := kind.Client(c.training, job.GetNamespace()).Create(ctx, job, opts)
	if err != nil {
		return nil, fmt.Errorf("creating %s in namespace %q: %w", kind.Ref(jobName(job)), job.GetNamespace(), err)
	}
	return created, nil
}

// jobName is the name of a job to be created, or its generateName prefix.
func jobName(job v1beta1.TrainingJob) string {
	if name := job.GetName(); name != "" {
		return name
	}
	return job.GetGenerateName() + "*"
}
