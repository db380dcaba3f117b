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
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"tensorstack.dev/training/pkg/generated/clientset/versioned/scheme"
)

// dryRun is kubectl's --dry-run: none, server or client.
type dryRun string

const (
	dryRunNone   dryRun = "none"
	dryRunServer dryRun = "server"
	dryRunClient dryRun = "client"
)

// addDryRunFlag adds --dry-run as kubectl has it; a bare --dry-run means client.
func addDryRunFlag(cmd *cobra.Command, value *string) {
	cmd.Flags().StringVar(value, "dry-run", string(dryRunNone),
		`Must be "none", "server", or "client". With client, only print what would be sent; with server, send it without persisting anything.`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = string(dryRunClient)
	_ = cmd.RegisterFlagCompletionFunc("dry-run", cobra.FixedCompletions(
		[]string{string(dryRunNone), string(dryRunServer), string(dryRunClient)}, cobra.ShellCompDirectiveNoFileComp))
}

func parseDryRun(value string) (dryRun, error) {
	switch d := dryRun(value); d {
	case dryRunNone, dryRunServer, dryRunClient:
		return d, nil
	default:
		return "", fmt.Errorf(`invalid --dry-run %q: must be "none", "server", or "client"`, value)
	}
}

// createOptions are the options of a write under the dry-run strategy.
func (d dryRun) createOptions() metav1.CreateOptions {
	if d == dryRunServer {
		return metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	}
	return metav1.CreateOptions{}
}

// describe adds kubectl's dry-run note to an operation: "paused (server dry run)".
func (d dryRun) describe(operation string) string {
	switch d {
	case dryRunServer:
		return operation + " (server dry run)"
	case dryRunClient:
		return operation + " (dry run)"
	default:
		return operation
	}
}

// outputFlags is -o with kubectl's formats: without it, a line saying what
// was done to the object; with json, yaml, name, jsonpath, go-template, the
// object itself.
type outputFlags struct {
	print *genericclioptions.PrintFlags
}

func newOutputFlags(cmd *cobra.Command) *outputFlags {
	// The type setter fills in apiVersion and kind, which typed clients
	// leave empty on the objects they return.
	o := &outputFlags{print: genericclioptions.NewPrintFlags("").WithTypeSetter(scheme.Scheme)}
	o.print.AddFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.print.AllowedFormats(), cobra.ShellCompDirectiveNoFileComp))
	return o
}

// defaultFormat is the format used when -o gives none.
func (o *outputFlags) defaultFormat(format string) {
	if *o.print.OutputFormat == "" {
		*o.print.OutputFormat = format
	}
}

// validate checks -o before anything is sent.
func (o *outputFlags) validate() error {
	_, err := o.print.ToPrinter()
	return err
}

// printObject prints obj as -o asks; operation is what the default line says
// was done, e.g. "paused (server dry run)".
func (o *outputFlags) printObject(obj runtime.Object, operation string, e *env) error {
	o.print.NamePrintFlags.Operation = operation
	printer, err := o.print.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, e.streams.Out)
}

// newTabWriter aligns columns as kubectl's tables do. Unlike kubectl's own
// writer it forgets the widths between blocks, so that the tables of the
// status view are each as wide as they need.
func newTabWriter(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
}
