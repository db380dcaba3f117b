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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// stateVersion changes when State changes incompatibly.
const stateVersion = 1

// State is what a running stack is: the one file (state.json in its
// directory) that the scripts and the tests read, through Load.
type State struct {
	Version  int      `json:"version"`
	Dir      string   `json:"dir"`
	Settings Settings `json:"settings"`
	// Nodes are the real nodes the stack runs.
	Nodes []NodeInfo `json:"nodes,omitempty"`
	// Components lists its components in start order.
	Components []string `json:"components"`
}

// NodeInfo describes a real node.
type NodeInfo struct {
	Name    string `json:"name"`
	IP      string `json:"ip"`
	PodCIDR string `json:"podCIDR"`
	NetNS   string `json:"netns"`
	Zone    string `json:"zone"`
	Rack    string `json:"rack"`
}

// Kubeconfig is the admin kubeconfig of the stack.
func (s *State) Kubeconfig() string { return filepath.Join(s.Dir, "kubeconfig") }

// RealNodes says how many real nodes the stack runs.
func (s *State) RealNodes() int { return len(s.Nodes) }

// SaveState writes the stack's state file.
func (c *Cluster) SaveState() error {
	st := State{Version: stateVersion, Dir: c.Config.Paths.Dir, Settings: c.Config.Settings}
	for _, n := range c.Config.Nodes {
		st.Nodes = append(st.Nodes, NodeInfo{Name: n.Name, IP: n.IP, PodCIDR: n.PodCIDR, NetNS: n.NetNS, Zone: n.Zone, Rack: n.Rack})
	}
	all, err := c.Components()
	if err != nil {
		return err
	}
	for _, comp := range all {
		st.Components = append(st.Components, comp.Name)
	}
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return c.Host.WriteFile(c.Config.Paths.State(), append(data, '\n'), 0o644)
}

// Load reads the state of the stack in dir.
func Load(dir string) (*State, error) {
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("no local stack in %s (no state.json); start one with hack/local-up.sh", dir)
		}
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s/state.json: %w", dir, err)
	}
	if st.Version != stateVersion {
		return nil, fmt.Errorf("%s/state.json is of version %d, this checkout reads %d; restart the stack", dir, st.Version, stateVersion)
	}
	return &st, st.Settings.Validate()
}

// ShellEnv prints the state as shell assignments for the scripts: every
// LOCAL_* setting, LOCAL_REAL_NODES_RUNNING (how many real nodes run) and
// LOCAL_REAL_NODE_RUNNING (1 when any does).
func (s *State) ShellEnv() string {
	var b strings.Builder
	for _, kv := range s.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s=%s\n", name, spec.ShellQuote(value))
	}
	return b.String()
}

// Environ is the state as NAME=VALUE pairs, as ShellEnv prints them: the settings, then what runs.
func (s *State) Environ() []string {
	env := s.Settings.Env()
	running := 0
	if len(s.Nodes) > 0 {
		running = 1
	}
	var names []string
	for _, n := range s.Nodes {
		names = append(names, n.Name)
	}
	return append(env, fmt.Sprintf("LOCAL_REAL_NODES_RUNNING=%d", len(s.Nodes)),
		fmt.Sprintf("LOCAL_REAL_NODE_RUNNING=%d", running), "LOCAL_REAL_NODE_NAMES="+strings.Join(names, " "))
}
