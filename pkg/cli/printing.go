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
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

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
// object itself. It is kubectl's PrintFlags made of cli-runtime's printers
// alone (see ConnectionFlags for why not the flags' own package).
type outputFlags struct {
	format            string
	template          string
	allowMissingKeys  bool
	showManagedFields bool
	// operation is what the line without -o says was done.
	operation string
}

// The formats of -o; the template formats take their template after "=" or
// from --template.
var (
	objectFormats   = []string{"json", "yaml", "name"}
	templateFormats = []string{"go-template", "go-template-file", "template", "templatefile", "jsonpath", "jsonpath-as-json", "jsonpath-file"}
)

func newOutputFlags(cmd *cobra.Command) *outputFlags {
	o := &outputFlags{}
	flags := cmd.Flags()
	flags.StringVarP(&o.format, "output", "o", "", "Output format. One of: ("+strings.Join(o.allowedFormats(), ", ")+").")
	flags.StringVar(&o.template, "template", "", "Template string or path to template file to use when -o=go-template, -o=go-template-file. "+
		"The template format is golang templates [http://golang.org/pkg/text/template/#pkg-overview].")
	flags.BoolVar(&o.allowMissingKeys, "allow-missing-template-keys", true,
		"If true, ignore any errors in templates when a field or map key is missing in the template. Only applies to golang and jsonpath output formats.")
	flags.BoolVar(&o.showManagedFields, "show-managed-fields", false, "If true, keep the managedFields when printing objects in JSON or YAML format.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(o.allowedFormats(), cobra.ShellCompDirectiveNoFileComp))
	return o
}

func (o *outputFlags) allowedFormats() []string {
	return append(slices.Clone(objectFormats), templateFormats...)
}

// defaultFormat is the format used when -o gives none.
func (o *outputFlags) defaultFormat(format string) {
	if o.format == "" {
		o.format = format
	}
}

// validate checks -o before anything is sent.
func (o *outputFlags) validate() error {
	_, err := o.printer()
	return err
}

// printObject prints obj as -o asks; operation is what the default line says
// was done, e.g. "paused (server dry run)".
func (o *outputFlags) printObject(obj runtime.Object, operation string, e *env) error {
	o.operation = operation
	printer, err := o.printer()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, e.streams.Out)
}

// printer is the printer of -o. It fills in apiVersion and kind, which typed
// clients leave empty on the objects they return.
func (o *outputFlags) printer() (printers.ResourcePrinter, error) {
	format, template, _ := strings.Cut(o.format, "=")
	if template == "" {
		template = o.template
	}
	var printer printers.ResourcePrinter
	switch {
	case format == "":
		printer = &printers.NamePrinter{Operation: o.operation}
	case format == "name":
		printer = &printers.NamePrinter{ShortOutput: true, Operation: o.operation}
	case format == "json" || format == "yaml":
		if format == "json" {
			printer = &printers.JSONPrinter{}
		} else {
			printer = &printers.YAMLPrinter{}
		}
		if !o.showManagedFields {
			printer = &printers.OmitManagedFieldsPrinter{Delegate: printer}
		}
	case slices.Contains(templateFormats, format):
		var err error
		if printer, err = o.templatePrinter(format, template); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s",
			o.format, strings.Join(o.allowedFormats(), ","))
	}
	return printers.NewTypeSetter(scheme.Scheme).ToPrinter(printer), nil
}

// templatePrinter is the printer of a template format: a Go template or a
// JSONPath, given inline or in a file.
func (o *outputFlags) templatePrinter(format, template string) (printers.ResourcePrinter, error) {
	if template == "" {
		return nil, fmt.Errorf("template format specified but no template given")
	}
	if strings.HasSuffix(format, "file") {
		data, err := os.ReadFile(template)
		if err != nil {
			return nil, fmt.Errorf("error reading --template %s, %w", template, err)
		}
		template = string(data)
	}
	if strings.HasPrefix(format, "jsonpath") {
		p, err := printers.NewJSONPathPrinter(template)
		if err != nil {
			return nil, fmt.Errorf("error parsing jsonpath %s, %w", template, err)
		}
		p.AllowMissingKeys(o.allowMissingKeys)
		if format == "jsonpath-as-json" {
			p.EnableJSONOutput(true)
		}
		return p, nil
	}
	p, err := printers.NewGoTemplatePrinter([]byte(template))
	if err != nil {
		return nil, fmt.Errorf("error parsing template %s, %w", template, err)
	}
	p.AllowMissingKeys(o.allowMissingKeys)
	return p, nil
}

// newTabWriter aligns columns as kubectl's tables do. Unlike kubectl's own
// writer it forgets the widths between blocks, so that the tables of the
// status view are each as wide as they need.
func newTabWriter(out io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(out, 6, 4, 3, ' ', 0)
}
