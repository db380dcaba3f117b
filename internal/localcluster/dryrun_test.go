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
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of the dry-run tests")

// TestDryRun compares what a dry run prints with golden files
// (testdata/dryrun; go test -update rewrites them): every command and file
// of a start (NAME.txt), then of a restart of one component
// (NAME-restart.txt), then of a stop of the whole stack (NAME-stop.txt). It
// needs no root and no binaries: the modules are fixtures.
func TestDryRun(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("testdata/modules")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		env       map[string]string
		realNodes int
		restart   string // the component restarted after the start
	}{
		{name: "defaults-two-real-nodes", realNodes: 2, restart: "kubelet"},
		{name: "kwok-only", env: map[string]string{"LOCAL_REAL_NODE": "0", "LOCAL_FAKE_NODES": "3"},
			restart: "training-controller-manager"},
		{name: "minimal", env: map[string]string{
			"LOCAL_SKIP_TRAINING": "1", "LOCAL_KUEUE": "0", "LOCAL_SCHEDULER_PLUGINS": "0", "LOCAL_GANG_WORKLOAD": "0",
			"LOCAL_FAKE_NODES": "1", "LOCAL_APISERVER_PORT": "26443", "LOCAL_APISERVER_EXTRA_ARGS": "--v=2 --audit-log-maxage=1",
		}, restart: "kube-apiserver"},
		{name: "multikueue", env: map[string]string{"LOCAL_MULTIKUEUE": "1", "LOCAL_FAKE_NODES": "2"}, restart: "kueue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := SettingsFromEnv(func(name string) (string, bool) {
				v, ok := tc.env[name]
				return v, ok
			})
			if err != nil {
				t.Fatal(err)
			}
			paths := Paths{
				Repo:    repo,
				Bin:     "/BIN",
				Dir:     "/LOCAL",
				Persist: "/LOCAL-persist",
				Modules: Modules{
					Kwok:             filepath.Join(fixtures, "kwok"),
					Kueue:            filepath.Join(fixtures, "kueue"),
					SchedulerPlugins: filepath.Join(fixtures, "scheduler-plugins"),
				},
			}
			var out bytes.Buffer
			c := New(s, paths, &DryRunHost{Out: &out}, tc.realNodes)
			printed := func() string {
				defer out.Reset()
				return strings.ReplaceAll(strings.ReplaceAll(out.String(), fixtures, "$MODULES"), repo, "$REPO")
			}
			if err := c.Up(context.Background()); err != nil {
				t.Fatal(err)
			}
			compareGolden(t, tc.name+".txt", printed())
			if err := c.Restart(context.Background(), tc.restart, true, true); err != nil {
				t.Fatal(err)
			}
			restart := printed()
			compareGolden(t, tc.name+"-restart.txt", restart)
			// A freeze and a thaw signal the restarted process alone.
			for _, frozen := range []bool{true, false} {
				if err := c.Freeze(tc.restart, frozen); err != nil {
					t.Fatal(err)
				}
			}
			if signals := printed(); strings.Count(signals, "kill -19 ") != 1 || strings.Count(signals, "kill -18 ") != 1 {
				t.Errorf("a freeze and a thaw of %s printed %q, want one SIGSTOP (19) and one SIGCONT (18)", tc.restart, signals)
			}
			if err := c.Freeze("no-such-process", true); err == nil {
				t.Error("a freeze of a process the stack does not run succeeded")
			}
			if err := c.Down(context.Background()); err != nil {
				t.Fatal(err)
			}
			stop := printed()
			compareGolden(t, tc.name+"-stop.txt", stop)

			// What the golden files must show whatever they hold: the
			// restart stops and starts one process; the stop ends every
			// process the start and the restart left running.
			if n := strings.Count(restart, "kill -TERM "); n != 1 {
				t.Errorf("the restart of %s stops %d processes, want 1", tc.restart, n)
			}
			if n := strings.Count(restart, "\nstart "); n != 1 {
				t.Errorf("the restart of %s starts %d processes, want 1", tc.restart, n)
			}
			procs, err := c.processes()
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(stop, "kill -TERM "); n != len(procs) {
				t.Errorf("the stop ends %d processes, want the stack's %d", n, len(procs))
			}
			if running := c.Running(); len(running) > 0 {
				t.Errorf("after the stop, still running: %v", running)
			}
		})
	}
}

// compareGolden compares got with testdata/dryrun/NAME, or rewrites it
// under -update.
func compareGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", "dryrun", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test ./internal/localcluster -run TestDryRun -update writes it)", err)
	}
	if got != string(want) {
		t.Errorf("the dry run differs from %s (go test -update rewrites it after a deliberate change):\n%s", golden,
			firstDifference(string(want), got))
	}
}

// firstDifference shows the first line where two texts part, with some
// context.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return "(same lines, different endings)"
}

// TestStopSaysWhatHadExited: a component that was started and is gone when
// the stack stops is named, with the end of its log, so that a run whose
// stack stopped answering says why (an etcd that died mid-run).
func TestStopSaysWhatHadExited(t *testing.T) {
	dir := t.TempDir()
	s, err := SettingsFromEnv(func(name string) (string, bool) {
		v, ok := map[string]string{"LOCAL_SKIP_TRAINING": "1", "LOCAL_KUEUE": "0", "LOCAL_SCHEDULER_PLUGINS": "0",
			"LOCAL_GANG_WORKLOAD": "0", "LOCAL_FAKE_NODES": "1"}[name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("testdata/modules")
	if err != nil {
		t.Fatal(err)
	}
	paths := Paths{Repo: dir, Bin: "/BIN", Dir: filepath.Join(dir, "local"), Persist: filepath.Join(dir, "persist"),
		Modules: Modules{Kwok: filepath.Join(fixtures, "kwok"), Kueue: filepath.Join(fixtures, "kueue"),
			SchedulerPlugins: filepath.Join(fixtures, "scheduler-plugins")}}
	var out bytes.Buffer
	host := &DryRunHost{Out: &out}
	c := New(s, paths, host, 0)
	if err := c.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	// etcd exits, leaving its last words in its log.
	etcdPID := host.ReadPID(paths.PIDFile("etcd"))
	delete(host.running, etcdPID)
	if err := os.MkdirAll(paths.Logs(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(paths.LogFile("etcd"), []byte("starting\npanic: write wal: no space left on device\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := c.Down(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop := out.String()
	want := "# etcd (pid " + strconv.Itoa(etcdPID) + ") had exited before the stop"
	if !strings.Contains(stop, want) || !strings.Contains(stop, "no space left on device") {
		t.Errorf("the stop does not say etcd had exited, with the end of its log:\n%s", stop)
	}
	if strings.Contains(stop, "kill -TERM "+strconv.Itoa(etcdPID)) {
		t.Errorf("the stop signalled the pid of the etcd that had exited:\n%s", stop)
	}
	if n := strings.Count(stop, "had exited before the stop"); n != 1 {
		t.Errorf("%d components said to have exited, want only etcd:\n%s", n, stop)
	}
}
