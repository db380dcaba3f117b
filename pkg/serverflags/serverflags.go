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

// Package serverflags registers the flags every server binary of the
// project takes, the same way in each: --version, and Kubernetes' logging
// flags (-v, --vmodule, --logging-format, ...), and acts on them once they
// are parsed.
package serverflags

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"tensorstack.dev/training/pkg/version"
)

// Common holds the common flags of one server.
type Common struct {
	component   string
	showVersion bool
	logging     *logsapi.LoggingConfiguration
}

// New returns the common flags of the server named component, at their
// defaults.
func New(component string) *Common {
	return &Common{component: component, logging: logsapi.NewLoggingConfiguration()}
}

// AddFlags registers the common flags on fs.
func (c *Common) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&c.showVersion, "version", false, "Print the version and exit.")
	logsapi.AddFlags(c.logging, fs)
}

// Apply acts on the parsed flags: with --version it prints the version to
// out and says the server is to exit; otherwise it checks the logging
// flags and sets up logging by them.
func (c *Common) Apply(out io.Writer) (exit bool, err error) {
	if c.showVersion {
		_, err := fmt.Fprintln(out, version.String(c.component))
		return true, err
	}
	if err := logsapi.ValidateAndApply(c.logging, nil); err != nil {
		return false, fmt.Errorf("%s: %w", c.component, err)
	}
	return false, nil
}
