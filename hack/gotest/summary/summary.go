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

// Package summary reads go test -json's events: it prints the output a reader wants and counts the tests.
package summary

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// FileEnv names the file a run's counts are appended to, one line each (see Counts.Append). make test sets it.
const FileEnv = "TEST_SUMMARY_FILE"

// EventsDirEnv names the directory each run's go test -json events are kept in, as SUITE.json. make test sets it.
const EventsDirEnv = "TEST_EVENTS_DIR"

// PhaseEnv names the make test phase a run belongs to; the counts' line starts with it.
const PhaseEnv = "TEST_PHASE"

// event is one line of go test -json (cmd/test2json's TestEvent, and go build's events for a build's output).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Timed is a test and how long it took.
type Timed struct {
	Name    string
	Elapsed time.Duration
}

// Counts is what one go test run ran. Subtests count as tests: a table test of ten cases is ten and one.
type Counts struct {
	Suite   string
	Passed  int
	Failed  int
	Skipped int
	// Packages is how many packages were tested; FailedPackages how many failed, including those that did not
	// build and those whose binary exited before every test ended (a timeout's panic).
	Packages       int
	FailedPackages int
	// Elapsed is the run's wall time, set by whoever timed it.
	Elapsed time.Duration
	tests   []Timed
}

// Run is how many tests ran to an end.
func (c *Counts) Run() int { return c.Passed + c.Failed + c.Skipped }

// Slowest returns the n top-level tests that took longest, longest first.
func (c *Counts) Slowest(n int) []Timed {
	tests := append([]Timed(nil), c.tests...)
	sort.SliceStable(tests, func(i, j int) bool { return tests[i].Elapsed > tests[j].Elapsed })
	if len(tests) > n {
		tests = tests[:n]
	}
	return tests
}

// Report is the counts as a few lines for a log.
func (c *Counts) Report(slowest int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "gotest: %s: %d tests run, %d passed, %d failed, %d skipped, in %d packages (%d failed), %s",
		c.Suite, c.Run(), c.Passed, c.Failed, c.Skipped, c.Packages, c.FailedPackages, c.Elapsed.Round(time.Second))
	for _, t := range c.Slowest(slowest) {
		fmt.Fprintf(&b, "\n  %8s  %s", t.Elapsed.Round(100*time.Millisecond), t.Name)
	}
	return b.String()
}

// Append adds the counts to file as one tab-separated line: phase (from TEST_PHASE, else the suite), suite,
// passed, failed, skipped, failed packages, whole seconds.
func (c *Counts) Append(file string) error {
	phase := os.Getenv(PhaseEnv)
	if phase == "" {
		phase = c.Suite
	}
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", phase, c.Suite, c.Passed, c.Failed, c.Skipped,
		c.FailedPackages, int(c.Elapsed.Round(time.Second).Seconds()))
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// Verbose reports whether go test's flags ask for every test's output (-v, -v=true, -test.v).
func Verbose(goTestArgs []string) bool {
	for _, arg := range goTestArgs {
		if arg == "--" {
			break
		}
		switch strings.TrimLeft(arg, "-") {
		case "v", "v=true", "test.v", "test.v=true":
			return true
		}
	}
	return false
}

// Printer writes the output of go test's events as go test itself would: every line with verbose; without, a
// test's lines only when it fails (buffered until it ends, so that parallel tests do not interleave), and the
// package's own lines (ok, FAIL, a panic, a build error) always.
type Printer struct {
	out     io.Writer
	verbose bool
	pending map[string][]string
}

// NewPrinter returns a Printer writing to out.
func NewPrinter(out io.Writer, verbose bool) *Printer {
	return &Printer{out: out, verbose: verbose, pending: map[string][]string{}}
}

func (p *Printer) handle(e event) {
	if e.Test == "" || p.verbose {
		if e.Output != "" {
			io.WriteString(p.out, e.Output)
		}
		return
	}
	key := e.Package + "\x00" + e.Test
	switch e.Action {
	case "output":
		// go test -json runs the tests verbosely; its progress lines are not what go test prints on a failure.
		if !strings.HasPrefix(e.Output, "=== ") {
			p.pending[key] = append(p.pending[key], e.Output)
		}
	case "fail":
		for _, line := range p.pending[key] {
			io.WriteString(p.out, line)
		}
		delete(p.pending, key)
	case "pass", "skip":
		delete(p.pending, key)
	}
}

// Read counts the tests of a go test -json stream, handing each event to p (which may be nil). Lines that are
// not JSON (go vet's, a build's) are printed as they are.
func Read(r io.Reader, p *Printer) (*Counts, error) {
	c := &Counts{}
	ended := map[string]bool{}
	// running holds the tests that started and have not ended, per package: when a binary dies (a timeout's
	// panic), go test reports the package failed and those tests never end; they count as failed.
	running := map[string]map[string]bool{}
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		line := scanner.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			if p != nil {
				fmt.Fprintf(p.out, "%s\n", line)
			}
			continue
		}
		if p != nil {
			p.handle(e)
		}
		if e.Test == "" {
			// A package ends once, passing or failing; one that did not build fails too, with or without a start.
			if (e.Action == "pass" || e.Action == "fail") && !ended[e.Package] {
				ended[e.Package] = true
				c.Packages++
				if e.Action == "fail" {
					c.FailedPackages++
					c.Failed += len(running[e.Package])
				}
				delete(running, e.Package)
			}
			continue
		}
		switch e.Action {
		case "run":
			if running[e.Package] == nil {
				running[e.Package] = map[string]bool{}
			}
			running[e.Package][e.Test] = true
			continue
		case "pass":
			c.Passed++
		case "fail":
			c.Failed++
		case "skip":
			c.Skipped++
		default:
			continue
		}
		delete(running[e.Package], e.Test)
		if !strings.Contains(e.Test, "/") {
			elapsed := time.Duration(e.Elapsed * float64(time.Second))
			c.tests = append(c.tests, Timed{Name: shortPackage(e.Package) + "." + e.Test, Elapsed: elapsed})
		}
	}
	return c, scanner.Err()
}

// shortPackage is a package's last two path elements, enough to tell test/e2e from test/deploy.
func shortPackage(importPath string) string {
	parts := strings.Split(importPath, "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return strings.Join(parts, "/")
}
