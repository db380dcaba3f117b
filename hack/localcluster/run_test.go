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

package main

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"tensorstack.dev/training/internal/localcluster"
)

// Arguments localcluster run refuses before it starts anything.
func TestRunRefusesBeforeStarting(t *testing.T) {
	paths := localcluster.DefaultPaths(t.TempDir(), "")
	for args, want := range map[string]string{
		"":                          "usage: localcluster run",
		"true":                      "usage: localcluster run",
		"--retain --":               "usage: localcluster run",
		"--keep --retain":           "usage: localcluster run",
		"--foreground -- true":      "--foreground is up's alone",
		"--dry-run --retain -- env": "--dry-run is up's alone",
	} {
		err := runCommand(context.Background(), paths, strings.Fields(args), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run %q: err %v, want one saying %q", args, err, want)
		}
	}
}

// fakeStack starts nothing: it counts the stops and says what the real nodes left.
type fakeStack struct {
	upErr     error
	leftovers []string
	stopErr   error
	stops     int
}

func (s *fakeStack) Up(context.Context) error { return s.upErr }
func (s *fakeStack) Environ() ([]string, error) {
	return []string{"LOCAL_DIR=/stack", "LOCAL_REAL_NODE_RUNNING=1"}, nil
}
func (s *fakeStack) Stop() ([]string, error) { s.stops++; return s.leftovers, s.stopErr }
func (s *fakeStack) Dir() string             { return "/stack" }

// What localcluster run does with the stack after the command, and what it exits with.
func TestRunStopsChecksAndKeeps(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opts      runOptions
		script    string
		stack     fakeStack
		wantStops int
		wantCode  int    // the command's code passed on (commandExit); 0: none
		wantErr   string // another error, saying this; "": none
	}{
		{name: "passed", script: "exit 0", wantStops: 1},
		{name: "failed", script: "exit 3", wantStops: 1, wantCode: 3},
		{name: "the stack's environment", script: `[ "$LOCAL_DIR" = /stack ] && [ "$LOCAL_REAL_NODE_RUNNING" = 1 ]`, wantStops: 1},
		{name: "killed by a signal", script: "kill -KILL $$", wantStops: 1, wantCode: 1},
		{name: "retain, passed", opts: runOptions{retain: true}, script: "exit 0", wantStops: 1},
		{name: "retain, failed", opts: runOptions{retain: true}, script: "exit 3", wantCode: 3},
		{name: "keep, passed", opts: runOptions{keep: true}, script: "exit 0"},
		{name: "keep, failed", opts: runOptions{keep: true}, script: "exit 3", wantCode: 3},
		{
			name: "leftovers", script: "exit 0", wantStops: 1,
			stack:   fakeStack{leftovers: []string{"network namespace tsnode-1", "process 42: containerd"}},
			wantErr: "left on the machine after the stack stopped:\n  network namespace tsnode-1\n  process 42: containerd",
		},
		{
			name: "leftovers after a failure", script: "exit 3", wantStops: 1,
			stack:   fakeStack{leftovers: []string{"cgroup /sys/fs/cgroup/cpu/x"}},
			wantErr: "exited with 3",
		},
		{name: "the stop failed", script: "exit 3", wantStops: 1, stack: fakeStack{stopErr: errors.New("still running after stop: etcd")}, wantErr: "still running after stop: etcd"},
		{name: "the start failed", script: "exit 0", stack: fakeStack{upErr: errors.New("port 16443 is already in use")}, wantErr: "port 16443"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.stack
			err := runOn(context.Background(), &s, tc.opts, []string{"sh", "-c", tc.script}, io.Discard, io.Discard,
				&localcluster.RealHost{Out: io.Discard})
			if s.stops != tc.wantStops {
				t.Errorf("stopped %d times, want %d", s.stops, tc.wantStops)
			}
			var exit commandExit
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &exit) {
					t.Errorf("err %v, want one saying %q", err, tc.wantErr)
				}
			case tc.wantCode != 0:
				if !errors.As(err, &exit) || exit.code != tc.wantCode {
					t.Errorf("err %v, want the command's exit code %d", err, tc.wantCode)
				}
			case err != nil:
				t.Errorf("err %v, want none", err)
			}
		})
	}
}
