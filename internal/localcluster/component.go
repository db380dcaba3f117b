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
	"context"
	"fmt"
	"time"
)

// Port is a port a component listens on, and the setting that chooses it.
type Port struct {
	Setting string
	Port    int
}

// Component is one part of the stack: a process (Binary set) or a step
// (Do set) such as applying manifests, or both absent for a pure check.
// The loop in Up starts a component once every component it comes After is
// ready, then waits for its checks; Down stops the processes in reverse.
type Component struct {
	Name string
	// The process: its binary and flags, extra environment, and the command
	// it runs under (nsenter into a node's namespaces), if any.
	Binary string
	Args   []string
	Env    []string
	// Wrap, when set, is evaluated at start: a node's mount namespace is
	// known only once its holder runs.
	Wrap func() []string
	// Home is the directory its arguments name, which tells its process
	// from another's of the same binary (another node's); the stack's
	// directory when empty.
	Home  string
	Ports []Port
	// StopTimeout is how long SIGTERM has before SIGKILL.
	StopTimeout time.Duration
	// Do is a step's work.
	Do func(ctx context.Context) error
	// Ready holds once the component serves.
	Ready []Check
	// After names the components that must be ready first.
	After []string
	// Teardown undoes what a step made on the machine (a node's namespaces);
	// it runs on the way down, in reverse order, and must be safe to run
	// when nothing was made.
	Teardown func(ctx context.Context) error
	// BeforeStop runs on the way down before its process is stopped (a
	// node's containerd empties its store of containers first).
	BeforeStop func()
	// Restartable: the component can be stopped and started alone.
	Restartable bool
}

// IsProcess says whether the component runs a process.
func (c *Component) IsProcess() bool { return c.Binary != "" }

func (c *Component) process(p Paths) Process {
	path, args := c.Binary, c.Args
	if c.Wrap != nil {
		wrap := c.Wrap()
		path, args = wrap[0], append(append(append([]string{}, wrap[1:]...), c.Binary), c.Args...)
	}
	return Process{Name: c.Name, Path: path, Args: args, Env: c.Env, LogFile: p.LogFile(c.Name), PIDFile: p.PIDFile(c.Name)}
}

// runs says whether pid is this component's process: it runs the binary
// (or, for a moment after the start, the wrapper that execs it in place)
// with an argument under dir, the stack's or the node's directory.
func (c *Component) runs(h Host, pid int, dir string) bool {
	if c.Wrap != nil && h.Runs(pid, nsenterPath(), dir) {
		return true
	}
	return h.Runs(pid, c.Binary, dir)
}

// order sorts components so each comes after those it names in After,
// keeping the given order otherwise; it fails on an unknown name or a cycle.
func order(components []*Component) ([]*Component, error) {
	byName := map[string]*Component{}
	for _, c := range components {
		if byName[c.Name] != nil {
			return nil, fmt.Errorf("component %s is listed twice", c.Name)
		}
		byName[c.Name] = c
	}
	for _, c := range components {
		for _, a := range c.After {
			if byName[a] == nil {
				return nil, fmt.Errorf("component %s comes after %s, which this stack does not run", c.Name, a)
			}
		}
	}
	var out []*Component
	placed := map[string]bool{}
	for len(out) < len(components) {
		progress := false
		for _, c := range components {
			if placed[c.Name] {
				continue
			}
			ready := true
			for _, a := range c.After {
				ready = ready && placed[a]
			}
			if ready {
				out = append(out, c)
				placed[c.Name] = true
				progress = true
			}
		}
		if !progress {
			return nil, fmt.Errorf("the components' After lists form a cycle")
		}
	}
	return out, nil
}
