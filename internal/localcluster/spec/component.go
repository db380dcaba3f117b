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

package spec

import (
	"fmt"
	"time"
)

// Port is a port a component listens on, and the setting that chooses it.
type Port struct {
	Setting string
	Port    int
}

// Component is one part of the stack, as data: a process (Binary set), the
// steps that come before it, the checks that say it is ready, and the steps
// that undo what it made. The loop in localcluster.Cluster.Up starts a
// component once every component it comes After is ready; Down stops the
// processes in reverse. Nothing here acts: the Host runs the steps.
type Component struct {
	Name string
	// The process: its binary and flags and extra environment.
	Binary string
	Args   []string
	Env    []string
	// Namespace, when set, runs the process inside a real node's network
	// and mount namespaces.
	Namespace *Namespace
	// Home is the directory its arguments name, which tells its process
	// from another's of the same binary (another node's); the stack's
	// directory when empty.
	Home  string
	Ports []Port
	// StopTimeout is how long SIGTERM has before SIGKILL.
	StopTimeout time.Duration
	// Steps run, in order, before the process starts.
	Steps []Step
	// Ready holds once the component serves.
	Ready []Check
	// After names the components that must be ready first.
	After []string
	// BeforeStop runs on the way down before its process is stopped (a
	// node's containerd empties its store of containers first).
	BeforeStop []Step
	// Teardown undoes what the steps made on the machine (a node's
	// namespaces); it runs on the way down, in reverse order, and must be
	// safe to run when nothing was made.
	Teardown []Step
	// Restartable: the component can be stopped and started alone.
	Restartable bool
}

// IsProcess says whether the component runs a process.
func (c *Component) IsProcess() bool { return c.Binary != "" }

// Namespace is a real node's pair of namespaces: the network namespace by
// name, the mount namespace by the process that holds it, whose pid is known
// only once it runs.
type Namespace struct {
	NetNS string
	// Holder names the holder's component (for a dry run's stand-in pid)
	// and HolderPIDFile where its pid is.
	Holder        string
	HolderPIDFile string
}

// Check is a readiness probe: What says it in a progress line, Probe is
// what the host checks until it holds.
type Check struct {
	What  string
	Probe Probe
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
