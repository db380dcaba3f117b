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

// Package skips is the one rule for a test or a suite that cannot run here because something it needs is
// missing (real nodes, a binary not built): on a developer's machine it is skipped, says why, and notes the
// skip for make test's last lines; under CI=true, or an opt-in such as REQUIRE_REAL_NODES=1, it fails naming
// the reason, so that a run that checked nothing cannot pass for one that did.
package skips

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// RequireRealNodes is the opt-in that makes a missing real node a failure outside CI too.
const RequireRealNodes = "REQUIRE_REAL_NODES"

// FileEnv names the file that skips are noted in, one "suite: why" line each. make test sets it, empties the file
// first and prints it last; where it is unset (go test by hand), nothing is noted.
const FileEnv = "TEST_SKIPS_FILE"

// Required names what makes a skip a failure here: the first of optIns set to 1 ("REQUIRE_REAL_NODES=1"), else
// "CI=true" as CI services set it; "" when a skip is allowed.
func Required(optIns ...string) string {
	for _, name := range optIns {
		if os.Getenv(name) == "1" {
			return name + "=1"
		}
	}
	if os.Getenv("CI") == "true" {
		return "CI=true"
	}
	return ""
}

// Suite is what a suite that cannot run does: where a skip is Required not to happen, an error naming suite and
// why; else nil, the skip noted.
func Suite(suite, why string, optIns ...string) error {
	if by := Required(optIns...); by != "" {
		return fmt.Errorf("%s: %s; under %s it may not be skipped", suite, why, by)
	}
	return note(suite, why)
}

// Test skips t, noting it under suite, or fails it naming why where a skip is Required not to happen. The notes of
// many tests skipped for one reason are the same line; make test counts them.
func Test(t testing.TB, suite, why string, optIns ...string) {
	t.Helper()
	if by := Required(optIns...); by != "" {
		t.Fatalf("%s; under %s this test may not be skipped", why, by)
	}
	if err := note(suite, why); err != nil {
		t.Errorf("noting the skip: %v", err)
	}
	t.Skip(why)
}

func note(suite, why string) error {
	path := os.Getenv(FileEnv)
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	// One write per line: parallel tests and suites append to the same file.
	_, err = fmt.Fprintf(f, "%s: %s\n", suite, strings.ReplaceAll(why, "\n", " "))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
