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
	"os"
	"path/filepath"
	"testing"

	"tensorstack.dev/training/internal/localcluster/spec"
)

// Two stacks side by side share the machine's sysctls: the second records the machine's values that the first
// recorded (not the kubelet's, which it reads now), and only the last to stop would put them back.
func TestSysctlHoldsAreShared(t *testing.T) {
	saved := sysctlsDir
	sysctlsDir = t.TempDir()
	t.Cleanup(func() { sysctlsDir = saved })

	first := nodeHost{cfg: spec.Config{Paths: Paths{Dir: "/stacks/e2e"}}}
	second := nodeHost{cfg: spec.Config{Paths: Paths{Dir: "/stacks/install"}}}
	// The host's current values: were the first stop to restore them after all, the host would not change.
	var original string
	for _, name := range spec.NodeSysctls {
		value, err := execOutput("sysctl", "-n", name)
		if err != nil {
			t.Skipf("sysctl -n %s: %v", name, err)
		}
		original += name + "=" + value + "\n"
	}
	if err := os.WriteFile(first.sysctlsFile(), []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	// What saveSysctls does for the second stack, without reading the machine's sysctls.
	if err := withSysctlsLock(func() error {
		holders, err := sysctlHolders()
		if err != nil || len(holders) != 1 {
			t.Fatalf("holders %v, %v: want the first stack's", holders, err)
		}
		data, err := os.ReadFile(holders[0])
		if err != nil {
			return err
		}
		return os.WriteFile(second.sysctlsFile(), data, 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(second.sysctlsFile()); string(got) != original {
		t.Errorf("the second stack recorded %q, want the machine's values %q", got, original)
	}

	// The first stops while the second runs: it lets go and restores nothing, which restoreSysctls could only
	// show by failing on the sysctl command; its hold is gone, the second's stays.
	if err := first.restoreSysctls(); err != nil {
		t.Fatalf("the first stack's stop: %v", err)
	}
	if fileExists(first.sysctlsFile()) || !fileExists(second.sysctlsFile()) {
		t.Errorf("after the first stop: holders %v, want the second stack's only", list(t))
	}
	if _, err := os.Stat(filepath.Join(sysctlsDir, ".lock")); err != nil {
		t.Errorf("the lock file: %v", err)
	}
}

// A stack that never held the sysctls (no real nodes) stops without touching the machine-wide directory.
func TestRestoreWithoutHoldIsNothing(t *testing.T) {
	saved := sysctlsDir
	sysctlsDir = filepath.Join(t.TempDir(), "absent")
	t.Cleanup(func() { sysctlsDir = saved })
	if err := (nodeHost{cfg: spec.Config{Paths: Paths{Dir: "/stacks/kwok-only"}}}).restoreSysctls(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sysctlsDir); !os.IsNotExist(err) {
		t.Errorf("%s was made: %v", sysctlsDir, err)
	}
}

func list(t *testing.T) []string {
	holders, err := sysctlHolders()
	if err != nil {
		t.Fatal(err)
	}
	return holders
}
