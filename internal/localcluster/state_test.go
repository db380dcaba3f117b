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
	"slices"
	"strings"
	"testing"
)

func TestStateRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s, err := SettingsFromEnv(func(name string) (string, bool) {
		v, ok := map[string]string{"LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS": "--x='a b'"}[name]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	c := New(s, Paths{Repo: dir, Dir: dir}, &RealHost{Out: io.Discard}, 2)
	if err := c.SaveState(); err != nil {
		t.Fatal(err)
	}
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.RealNodes() != 2 || st.Nodes[1].Name != "real-node2" || st.Nodes[1].PodCIDR != "10.244.1.0/24" || st.Nodes[1].Rack != "real-rack-1" {
		t.Errorf("nodes = %+v", st.Nodes)
	}
	if st.Components[0] != "files" || !slices.Contains(st.Components, "kubelet-real-node2") {
		t.Errorf("components = %v", st.Components)
	}
	sh := st.ShellEnv()
	for _, want := range []string{"LOCAL_REAL_NODES_RUNNING=2\n", "LOCAL_REAL_NODE_RUNNING=1\n", `LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS='--x='\''a b'\'''`} {
		if !strings.Contains(sh, want) {
			t.Errorf("shell environment lacks %q:\n%s", want, sh)
		}
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no local stack") {
		t.Errorf("Load of an empty directory: %v", err)
	}
}
