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

package serverflags

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) *Common {
	t.Helper()
	c := New("test-server")
	fs := pflag.NewFlagSet("test-server", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return c
}

// TestVersionExits: --version prints the component's version line and asks
// the server to exit before it sets anything up.
func TestVersionExits(t *testing.T) {
	var out bytes.Buffer
	exit, err := parse(t, "--version").Apply(&out)
	if err != nil || !exit {
		t.Fatalf("exit %v, err %v; want exit without error", exit, err)
	}
	if !strings.HasPrefix(out.String(), "test-server ") {
		t.Errorf("printed %q, want the component's version line", out.String())
	}
}

// TestLoggingFlags: the logging flags are registered and checked; a bad
// format is an error that names the component, and the server goes on
// otherwise.
func TestLoggingFlags(t *testing.T) {
	var out bytes.Buffer
	if exit, err := parse(t, "-v=2", "--logging-format=text").Apply(&out); exit || err != nil || out.Len() != 0 {
		t.Fatalf("exit %v, err %v, printed %q; want to go on quietly", exit, err, out.String())
	}
	_, err := parse(t, "--logging-format=no-such-format").Apply(&out)
	if err == nil || !strings.Contains(err.Error(), "test-server") || !strings.Contains(err.Error(), "no-such-format") {
		t.Errorf("err %v, want one naming the component and the format", err)
	}
}
