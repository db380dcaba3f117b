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

// Command gotest runs go test with -json and prints what go test would print, then counts what ran: how many
// tests passed, failed and were skipped, and which took longest. make test's suites run their Go tests through
// it, so that its last lines can say, per suite, what was run and what was skipped (hack/test.sh).
//
//	go run ./hack/gotest -suite e2e -- -count=1 -timeout 40m ./test/e2e/...
//
// Without -v among go test's flags, a test's output is printed only when it fails, as go test does; with -v,
// every line as it comes. The counts go to stderr, and as one line to the file TEST_SUMMARY_FILE names
// (summary.Counts.Append's format) when it is set, and go test's events are kept in TEST_EVENTS_DIR/SUITE.json
// when that is set. It exits with go test's exit code.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"tensorstack.dev/training/hack/gotest/summary"
)

func main() {
	os.Exit(run())
}

// run runs go test and returns the exit code gotest exits with.
func run() int {
	suite := flag.String("suite", "go", "the suite's name in the summary")
	slowest := flag.Int("slowest", 5, "how many of the slowest tests to name")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: gotest [-suite NAME] -- [go test flags and packages]")
		flag.PrintDefaults()
	}
	flag.Parse()
	goTestArgs := flag.Args()

	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, append([]string{"test", "-json"}, goTestArgs...)...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	events, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	// A Ctrl-C or a script's kill reaches go test through the process group; gotest stays to report.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fatal(err)
	}

	var stream io.Reader = events
	if dir := os.Getenv(summary.EventsDirEnv); dir != "" {
		// The events as go test gave them, for a later look at which test ran when; a run's file is named after
		// its suite. Without it the run goes on: the events are an aid, the tests are what counts.
		if file, err := createEventsFile(dir, *suite); err != nil {
			fmt.Fprintf(os.Stderr, "gotest: not keeping the events: %v\n", err)
		} else {
			defer file.Close()
			stream = io.TeeReader(events, file)
		}
	}
	printer := summary.NewPrinter(os.Stdout, summary.Verbose(goTestArgs))
	counts, readErr := summary.Read(stream, printer)
	waitErr := cmd.Wait()
	if readErr != nil {
		fmt.Fprintf(os.Stderr, "gotest: reading go test's events: %v\n", readErr)
	}

	counts.Suite = *suite
	counts.Elapsed = time.Since(start)
	fmt.Fprintln(os.Stderr, counts.Report(*slowest))
	if file := os.Getenv(summary.FileEnv); file != "" {
		if err := counts.Append(file); err != nil {
			fmt.Fprintf(os.Stderr, "gotest: %v\n", err)
		}
	}

	code := 0
	if waitErr != nil {
		code = 1
		if exit, ok := waitErr.(*exec.ExitError); ok && exit.ExitCode() > 0 {
			code = exit.ExitCode()
		}
	}
	if code == 0 && (readErr != nil || counts.Failed > 0) {
		code = 1
	}
	return code
}

// createEventsFile creates dir/SUITE.json, the suite's name made a file name ("unit hack/tools/kwok" is
// unit-hack-tools-kwok.json).
func createEventsFile(dir, suite string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '-'
		}
		return r
	}, suite)
	return os.Create(filepath.Join(dir, name+".json"))
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "gotest: %v\n", err)
	os.Exit(2)
}
