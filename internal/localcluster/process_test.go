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
	"strings"
	"testing"

	"tensorstack.dev/training/internal/localcluster/spec"
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
		comp := &spec.Component{Name: "sleeper", Binary: sh, Args: []string{"-c", "sleep 30", dir + "/marker"}}
		if _, err := h.Start(c.steps.process(comp)); err != nil {
			t.Fatal(err)
		}
		pid := c.procs.pid(comp)
		if pid == 0 {
			t.Fatalf("start %d: the process just started is not seen as the component's", i)
		}
		_ = killPID(pid)
		if c.procs.pid(comp) != 0 {
			t.Fatalf("start %d: a killed process is still seen", i)
		}
	}
}

// TestSuperviseLeavesHeldProcesses: a process stopped on purpose (marked
// held, as Restart does) does not count as one that exited; any other does.
func TestSuperviseLeavesHeldProcesses(t *testing.T) {
	dir := t.TempDir()
	h := &RealHost{Out: io.Discard}
	c := New(Settings{Timeout: 1}, Paths{Repo: dir, Dir: dir}, h, 0)
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	procs := map[string]*spec.Component{}
	for _, name := range []string{"a", "b"} {
		comp := &spec.Component{Name: name, Binary: sh, Args: []string{"-c", "sleep 30", dir + "/" + name}}
		if _, err := h.Start(c.steps.process(comp)); err != nil {
			t.Fatal(err)
		}
		procs[name] = comp
		t.Cleanup(func() { _ = killPID(readPID(c.Config.Paths.PIDFile(name))) })
	}
	if err := c.procs.checkExited(procs); err != nil {
		t.Fatalf("both run: %v", err)
	}
	if err := h.WriteFile(c.procs.heldFile("a"), []byte("held\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = killPID(c.procs.pid(procs["a"]))
	if err := c.procs.checkExited(procs); err != nil {
		t.Errorf("a stopped on purpose: %v", err)
	}
	_ = killPID(c.procs.pid(procs["b"]))
	if err := c.procs.checkExited(procs); err == nil || !strings.Contains(err.Error(), "b exited unexpectedly") {
		t.Errorf("b exited: error %v, want it named", err)
	}
}
