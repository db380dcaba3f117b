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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// processTable finds the stack's processes by their pid files (and, for
// strays an earlier run left, in /proc), and stops them.
type processTable struct {
	host  Host
	paths spec.Paths
}

// pid is the component's running process from its pid file, or 0.
func (t processTable) pid(comp *spec.Component) int {
	pid := t.host.ReadPID(t.paths.PIDFile(comp.Name))
	if !t.runs(comp, pid) {
		return 0
	}
	return pid
}

// runs says whether pid is this component's process: it runs the binary
// (or, for a moment after the start, the nsenter that execs it in place)
// with an argument under its home, the stack's or the node's directory.
func (t processTable) runs(comp *spec.Component, pid int) bool {
	home := t.home(comp)
	if comp.Namespace != nil && t.host.Runs(pid, nsenterPath(), home) {
		return true
	}
	return t.host.Runs(pid, comp.Binary, home)
}

func (t processTable) home(comp *spec.Component) string {
	if comp.Home != "" {
		return comp.Home
	}
	return t.paths.Dir
}

// strays are the processes of the stack's binaries found in /proc, by
// component, whether or not a pid file knows them.
func (t processTable) strays(procs map[string]*spec.Component) map[string][]int {
	found := map[string][]int{}
	names := sortedKeys(procs)
	for _, pid := range t.host.PIDs() {
		for _, name := range names {
			if t.runs(procs[name], pid) {
				found[name] = append(found[name], pid)
				break
			}
		}
	}
	return found
}

// stop stops the component's process and any stray of it; it says whether
// one ran.
func (t processTable) stop(comp *spec.Component, strays []int) bool {
	timeout := comp.StopTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	found := false
	if pid := t.pid(comp); pid != 0 {
		t.host.Logf("stopping %s (pid %d)", comp.Name, pid)
		t.host.Stop(comp.Name, pid, timeout)
		found = true
	} else if recorded := t.host.ReadPID(t.paths.PIDFile(comp.Name)); recorded != 0 && len(strays) == 0 {
		// It was started and is gone: say so, with why, rather than leave
		// a failed run to guess what stopped answering.
		t.host.Logf("%s (pid %d) had exited before the stop\n%s", comp.Name, recorded, t.logTail(comp.Name))
	}
	for _, pid := range strays {
		if t.runs(comp, pid) {
			t.host.Logf("stopping stray %s (pid %d) left from an earlier run", comp.Name, pid)
			t.host.Stop(comp.Name, pid, timeout)
			found = true
		}
	}
	_ = t.host.Remove(t.paths.PIDFile(comp.Name))
	return found
}

func (t processTable) logTail(name string) string {
	data, err := os.ReadFile(t.paths.LogFile(name))
	if err != nil {
		return ""
	}
	return "---- last lines of " + spec.RelTo(t.paths.Repo, t.paths.LogFile(name)) + " ----\n" + lastLines(strings.TrimRight(string(data), "\n"), 25) + "\n----"
}

// heldFile marks a component stopped on purpose (Restart), so Supervise
// leaves the stack up.
func (t processTable) heldFile(name string) string {
	return filepath.Join(t.paths.PIDs(), name+".held")
}

// checkExited fails naming the first process that does not run and was not
// stopped on purpose (Restart marks those held).
func (t processTable) checkExited(procs map[string]*spec.Component) error {
	for _, name := range sortedKeys(procs) {
		if t.pid(procs[name]) == 0 && !fileExists(t.heldFile(name)) {
			return fmt.Errorf("%s exited unexpectedly\n%s", name, t.logTail(name))
		}
	}
	return nil
}
