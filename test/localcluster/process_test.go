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

package localcluster

import (
	"io"
	"path/filepath"
	"testing"
)

// TestProcessSeenRightAfterStart: a component's process is its own from
// the moment Start returns. The kernel sets a new program's arguments last
// in execve, after the starter is released, so /proc shows the binary with
// no arguments for a moment; that moment must not read as "exited".
func TestProcessSeenRightAfterStart(t *testing.T) {
	dir := t.TempDir()
	h := &RealHost{Out: io.Discard}
	c := New(Settings{Timeout: 1}, Paths{Repo: dir, Dir: dir}, h, 0)
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	for i := 0; i < 100; i++ {
		comp := &Component{Name: "sleeper", Binary: sh, Args: []string{"-c", "sleep 30", dir + "/marker"}}
		if _, err := h.Start(comp.process(c.Paths)); err != nil {
			t.Fatal(err)
		}
		pid := c.pid(comp)
		if pid == 0 {
			t.Fatalf("start %d: the process just started is not seen as the component's", i)
		}
		_ = killPID(pid)
		if c.pid(comp) != 0 {
			t.Fatalf("start %d: a killed process is still seen", i)
		}
	}
}
