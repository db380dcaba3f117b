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

package skips

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// noted points the skips file at a new file and returns a function that reads it.
func noted(t *testing.T) func() string {
	path := filepath.Join(t.TempDir(), "skipped.txt")
	t.Setenv(FileEnv, path)
	return func() string {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return string(data)
	}
}

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, optIn string
		want      string
	}{
		{want: ""},
		{ci: "false", optIn: "0", want: ""},
		{ci: "true", want: "CI=true"},
		{optIn: "1", want: "REQUIRE_REAL_NODES=1"},
		{ci: "true", optIn: "1", want: "REQUIRE_REAL_NODES=1"},
	} {
		t.Run(fmt.Sprintf("CI=%s,opt-in=%s", tc.ci, tc.optIn), func(t *testing.T) {
			t.Setenv("CI", tc.ci)
			t.Setenv(RequireRealNodes, tc.optIn)
			if got := Required(RequireRealNodes); got != tc.want {
				t.Errorf("Required() = %q, want %q", got, tc.want)
			}
		})
	}
	t.Run("an opt-in of another kind", func(t *testing.T) {
		t.Setenv("CI", "")
		t.Setenv(RequireRealNodes, "1")
		if got := Required(); got != "" {
			t.Errorf("Required() without the opt-in = %q, want \"\"", got)
		}
	})
}

func TestSuiteNotesOrFails(t *testing.T) {
	read := noted(t)
	t.Setenv("CI", "")
	t.Setenv(RequireRealNodes, "")
	if err := Suite("test-install", "it needs root", RequireRealNodes); err != nil {
		t.Fatalf("Suite on a developer's machine: %v", err)
	}
	if got, want := read(), "test-install: it needs root\n"; got != want {
		t.Errorf("noted %q, want %q", got, want)
	}

	t.Setenv("CI", "true")
	err := Suite("node", "no overlay\nfile system", RequireRealNodes)
	if err == nil || !strings.Contains(err.Error(), "node: no overlay") || !strings.Contains(err.Error(), "CI=true") {
		t.Errorf("Suite under CI=true = %v, want an error naming the suite, the reason and CI=true", err)
	}
	if got := read(); strings.Contains(got, "node:") {
		t.Errorf("a failure was noted as a skip: %q", got)
	}
}

// fatalTB records Fatalf and ends the calling goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(f)
}
func (f *fatalTB) Skip(...any) { panic("skipped where the skip is required not to happen") }

func TestTestSkipsOrFails(t *testing.T) {
	read := noted(t)
	t.Setenv("CI", "")
	t.Setenv(RequireRealNodes, "")
	for range 2 {
		t.Run("skipped", func(t *testing.T) {
			Test(t, "test-e2e", "the stack runs no real node: it needs root", RequireRealNodes)
		})
	}
	if got, want := read(), strings.Repeat("test-e2e: the stack runs no real node: it needs root\n", 2); got != want {
		t.Errorf("noted %q, want %q", got, want)
	}

	t.Setenv(RequireRealNodes, "1")
	fake := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != fake {
				panic(r)
			}
		}()
		Test(fake, "test-e2e", "the stack runs no real node: it needs root", RequireRealNodes)
	}()
	if want := "the stack runs no real node: it needs root; under REQUIRE_REAL_NODES=1 this test may not be skipped"; fake.fatal != want {
		t.Errorf("Fatalf(%q), want %q", fake.fatal, want)
	}
}
