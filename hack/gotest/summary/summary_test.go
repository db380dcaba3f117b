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

package summary

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sampleTests is a package whose tests pass, fail, skip and have subtests; the counts below are what it must
// give: 3 top-level and 3 subtests.
const sampleTests = `package sample

import "testing"

func TestPasses(t *testing.T) { t.Log("quiet unless it fails") }

func TestFails(t *testing.T) { t.Error("the failure's own line") }

func TestSkips(t *testing.T) { t.Skip("nothing to run here") }

func TestTable(t *testing.T) {
	for _, name := range []string{"one", "two", "three"} {
		t.Run(name, func(t *testing.T) {
			if name == "two" {
				t.Skip("two is skipped")
			}
		})
	}
}
`

const brokenTests = `package broken

import "testing"

func TestDoesNotBuild(t *testing.T) { undefined() }
`

const panickingTests = `package panics

import "testing"

func TestBefore(t *testing.T) {}

func TestDies(t *testing.T) { panic("gone") }
`

// goTestJSON runs the real go test -json on a module of the given packages and returns its stream.
func goTestJSON(t *testing.T, packages map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"go.mod": "module example.test/sample\n\ngo 1.22\n"}
	for name, source := range packages {
		files[filepath.Join(name, name+"_test.go")] = source
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "test", "-json", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.Output()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("go test: %v", err)
	}
	return out
}

func TestReadCountsWhatGoTestRan(t *testing.T) {
	stream := goTestJSON(t, map[string]string{"sample": sampleTests, "broken": brokenTests, "panics": panickingTests})

	var printed bytes.Buffer
	counts, err := Read(bytes.NewReader(stream), NewPrinter(&printed, false))
	if err != nil {
		t.Fatal(err)
	}
	// sample: TestPasses, TestTable, TestTable/one, TestTable/three pass; TestFails fails; TestSkips and
	// TestTable/two skip. panics: TestBefore passes; TestDies fails.
	type tally struct{ passed, failed, skipped, packages, failedPackages int }
	want := tally{passed: 5, failed: 2, skipped: 2, packages: 3, failedPackages: 3}
	got := tally{counts.Passed, counts.Failed, counts.Skipped, counts.Packages, counts.FailedPackages}
	if got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}

	out := printed.String()
	for _, line := range []string{"the failure's own line", "undefined: undefined", "panic: gone", "FAIL"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	for _, line := range []string{"quiet unless it fails", "=== RUN"} {
		if strings.Contains(out, line) {
			t.Errorf("output without -v has %q:\n%s", line, out)
		}
	}
}

func TestVerbosePrintsEveryLine(t *testing.T) {
	stream := goTestJSON(t, map[string]string{"sample": sampleTests})
	var printed bytes.Buffer
	if _, err := Read(bytes.NewReader(stream), NewPrinter(&printed, true)); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"quiet unless it fails", "=== RUN   TestTable/two", "two is skipped"} {
		if !strings.Contains(printed.String(), line) {
			t.Errorf("verbose output lacks %q", line)
		}
	}
}

func TestSlowestAreTopLevelLongestFirst(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start","Package":"x/e2e"}`,
		`{"Action":"run","Package":"x/e2e","Test":"TestQuick"}`,
		`{"Action":"pass","Package":"x/e2e","Test":"TestQuick","Elapsed":0.5}`,
		`{"Action":"run","Package":"x/e2e","Test":"TestSlow"}`,
		`{"Action":"pass","Package":"x/e2e","Test":"TestSlow/part","Elapsed":90}`,
		`{"Action":"pass","Package":"x/e2e","Test":"TestSlow","Elapsed":91}`,
		`{"Action":"pass","Package":"x/e2e","Test":"TestMiddle","Elapsed":12}`,
		`{"Action":"pass","Package":"x/e2e","Elapsed":100}`,
	}, "\n")
	counts, err := Read(strings.NewReader(stream), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, test := range counts.Slowest(2) {
		names = append(names, test.Name)
	}
	if got, want := strings.Join(names, ","), "x/e2e.TestSlow,x/e2e.TestMiddle"; got != want {
		t.Errorf("slowest = %s, want %s", got, want)
	}
}

func TestVerbose(t *testing.T) {
	for args, want := range map[string]bool{
		"-count=1 ./...":       false,
		"-v -count=1 ./...":    true,
		"--v=true ./...":       true,
		"-test.v ./...":        true,
		"-run TestV ./...":     false,
		"./... -- -v":          false,
		"-timeout 40m -v=true": true,
	} {
		if got := Verbose(strings.Fields(args)); got != want {
			t.Errorf("Verbose(%q) = %v, want %v", args, got, want)
		}
	}
}

func TestAppendWritesOneLinePerRun(t *testing.T) {
	file := filepath.Join(t.TempDir(), "summary.tsv")
	t.Setenv(PhaseEnv, "test-e2e")
	for _, suite := range []string{"e2e", "e2e-coscheduling"} {
		c := &Counts{Suite: suite, Passed: 3, Failed: 1, Skipped: 2}
		if err := c.Append(file); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "test-e2e\te2e\t3\t1\t2\t0\t0\ntest-e2e\te2e-coscheduling\t3\t1\t2\t0\t0\n"
	if string(data) != want {
		t.Errorf("file = %q, want %q", data, want)
	}
}
