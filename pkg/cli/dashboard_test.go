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
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestOpenBrowserKeepsTheTokenOffCommandLines: xdg-open gets the path of a
// page only the user may read, which sends the browser to the sign-in URL;
// no command line holds the token, and the page goes when the dashboard
// stops.
func TestOpenBrowserKeepsTheTokenOffCommandLines(t *testing.T) {
	const url = "http://127.0.0.1:8080/?token=SECRETTOKEN"
	bin := t.TempDir()
	record := filepath.Join(t.TempDir(), "xdg-open.args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + record + ".tmp\ncat \"$1\" >> " + record + ".tmp\nmv " + record + ".tmp " + record + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var errOut bytes.Buffer
	cleanup := openBrowser(&env{streams: genericiooptions.IOStreams{Out: &bytes.Buffer{}, ErrOut: &errOut}}, url)

	var recorded []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		if recorded, err = os.ReadFile(record); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("xdg-open never ran (%s)", errOut.String())
		}
	}
	page, content, _ := strings.Cut(string(recorded), "\n")
	if strings.Contains(page, "SECRETTOKEN") {
		t.Errorf("xdg-open's command line holds the token: %q", page)
	}
	if !strings.Contains(content, `url=http://127.0.0.1:8080/?token=SECRETTOKEN"`) {
		t.Errorf("the page does not send the browser to the URL:\n%s", content)
	}
	info, err := os.Stat(page)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("the page's mode is %o, want 600", mode)
	}
	if dir, err := os.Stat(filepath.Dir(page)); err != nil {
		t.Error(err)
	} else if mode := dir.Mode().Perm(); mode != 0o700 {
		t.Errorf("the page's directory's mode is %o, want 700", mode)
	}
	cleanup()
	if _, err := os.Stat(filepath.Dir(page)); !os.IsNotExist(err) {
		t.Errorf("after the dashboard stopped, the page's directory: %v, want it gone", err)
	}
}
