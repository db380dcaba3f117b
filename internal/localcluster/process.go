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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pidAlive: the process exists and is not a zombie.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// hold anything.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	state := stat[i+2]
	return state != 'Z' && state != 'X'
}

// processExe is the binary a process runs.
func processExe(pid int) string {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(exe, " (deleted)")
}

// processCmdline is its arguments.
func processCmdline(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
}

// runsFor: pid runs binary with an argument under dir (this stack's state),
// which guards against a pid reused by another process.
func runsFor(pid int, binary, dir string) bool {
	if !pidAlive(pid) || processExe(pid) != binary {
		return false
	}
	args := processCmdline(pid)
	// A process that is still in execve has its new binary but not yet its
	// arguments (the kernel sets them last, after mapping the binary, which
	// on a busy machine takes a while), for a moment after the starter
	// returns: look again, for up to two seconds.
	for i := 0; i < 1000 && len(args) == 0 && pidAlive(pid); i++ {
		time.Sleep(2 * time.Millisecond)
		args = processCmdline(pid)
	}
	for _, arg := range args {
		if strings.Contains(arg, dir+"/") || strings.HasSuffix(arg, dir) {
			return true
		}
	}
	return false
}

func readPID(file string) int {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return pid
}

// allPIDs lists the processes of the machine.
func allPIDs() []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

var nsenterOnce struct {
	sync.Once
	path string
}

// nsenterPath is where nsenter is, as /proc shows a process running it.
func nsenterPath() string {
	nsenterOnce.Do(func() {
		if p, err := exec.LookPath("nsenter"); err == nil {
			nsenterOnce.path, _ = filepath.EvalSymlinks(p)
		}
	})
	return nsenterOnce.path
}

// stopPID sends SIGTERM, and SIGKILL after timeout.
func stopPID(h Host, name string, pid int, timeout time.Duration) {
	_ = syscall.Kill(pid, syscall.SIGTERM)
	// A process frozen on purpose (Cluster.Freeze) acts on the SIGTERM only
	// once it runs again.
	_ = syscall.Kill(pid, syscall.SIGCONT)
	deadline := time.Now().Add(timeout)
	for pidAlive(pid) {
		if time.Now().After(deadline) {
			h.Logf("%s (pid %d) did not exit within %s of SIGTERM; sending SIGKILL", name, pid, timeout)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			deadline = time.Now().Add(5 * time.Second)
			for pidAlive(pid) && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// portInUse: something listens on the TCP port on any IPv4 or IPv6 address
// of this network namespace.
func portInUse(port int) bool {
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			// local_address is ADDR:PORT in hex; state 0A is LISTEN.
			if len(f) < 4 || f[3] != "0A" {
				continue
			}
			i := strings.LastIndexByte(f[1], ':')
			if p, err := strconv.ParseInt(f[1][i+1:], 16, 32); err == nil && int(p) == port {
				return true
			}
		}
	}
	return false
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir() && info.Mode()&0o111 != 0
}
