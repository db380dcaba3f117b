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

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// Leader election of the extra controller-managers: short, so that a
// failover fits the suite's time budget.
const (
	leaseDuration = 6 * time.Second
	renewDeadline = 4 * time.Second
	retryPeriod   = 1 * time.Second
	leaseNS       = "tensorstack-system"
	leaseName     = "training-controller-manager"
)

// readPid reads a pid file of the local stack.
func readPid(file string) (int, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// stackPid is the pid of a component of the local stack.
func stackPid(component string) (int, error) {
	return readPid(filepath.Join(localDir, "pids", component+".pid"))
}

func signal(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	return syscall.Kill(pid, sig)
}

// alive says whether pid runs and is not a zombie.
func alive(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndex(s, ") "); i >= 0 && len(s) > i+2 {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// controllerManager is an extra training-controller-manager the suite
// runs with leader election. It acts as its own user (impersonated by the
// admin credentials), so the audit log tells its writes from the others'.
type controllerManager struct {
	slot        int
	user        string
	cmd         *exec.Cmd
	healthPort  int
	metricsPort int
	logFile     string
	pidFile     string

	mu      sync.Mutex
	exited  bool
	exitErr error
	exitAt  time.Time
	done    chan struct{}
}

// startControllerManager writes the kubeconfig of slot and starts a
// controller-manager with leader election. Its files live under the
// stack's directory so that hack/local-down.sh stops a leftover.
func startControllerManager(slot int) (*controllerManager, error) {
	dir := filepath.Join(localDir, "chaos")
	if err := os.MkdirAll(filepath.Join(chaosDir, "pids"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	user := fmt.Sprintf("chaos-controller-manager-%d", slot)
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
		a.ImpersonateGroups = []string{"system:masters"}
	}
	kc := filepath.Join(dir, fmt.Sprintf("cm-%d.kubeconfig", slot))
	if err := clientcmd.WriteToFile(*cfg, kc); err != nil {
		return nil, err
	}
	m := &controllerManager{slot: slot, user: user, done: make(chan struct{}),
		logFile: filepath.Join(localDir, "logs", fmt.Sprintf("chaos-controller-manager-%d.log", slot)),
		pidFile: filepath.Join(chaosDir, "pids", fmt.Sprintf("controller-manager-%d.pid", slot))}
	if m.healthPort, err = freePort(); err != nil {
		return nil, err
	}
	if m.metricsPort, err = freePort(); err != nil {
		return nil, err
	}
	logf, err := os.OpenFile(m.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	m.cmd = exec.Command(filepath.Join(repoRoot, "_output", "bin", "training-controller-manager"),
		"--kubeconfig="+kc,
		"--leader-elect=true",
		"--leader-elect-lease-duration="+leaseDuration.String(),
		"--leader-elect-renew-deadline="+renewDeadline.String(),
		"--leader-elect-retry-period="+retryPeriod.String(),
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", m.metricsPort),
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", m.healthPort),
	)
	m.cmd.Stdout, m.cmd.Stderr = logf, logf
	// A session of its own: a Ctrl-C on the test's terminal must not
	// reach it; the suite and hack/test-chaos.sh stop it.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := m.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	_ = os.WriteFile(m.pidFile, []byte(strconv.Itoa(m.cmd.Process.Pid)+"\n"), 0o644)
	go func() {
		err := m.cmd.Wait()
		logf.Close()
		m.mu.Lock()
		m.exited, m.exitErr, m.exitAt = true, err, time.Now()
		m.mu.Unlock()
		close(m.done)
	}()
	return m, nil
}

func (m *controllerManager) pid() int { return m.cmd.Process.Pid }

func (m *controllerManager) String() string {
	return fmt.Sprintf("controller-manager %d (pid %d, user %s)", m.slot, m.pid(), m.user)
}

// exitState says whether the process ended, how and when.
func (m *controllerManager) exitState() (bool, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.exited, m.exitAt, m.exitErr
}

// readyz returns the body of /readyz: "ok" for a leader with synced
// caches, "ok: standby" for a standby.
func (m *controllerManager) readyz() (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", m.healthPort))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("/readyz: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return strings.TrimSpace(string(body)), nil
}

// waitReadyz waits until /readyz answers want.
func (m *controllerManager) waitReadyz(want string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last string
	var lastErr error
	for time.Now().Before(deadline) {
		if exited, _, err := m.exitState(); exited {
			return fmt.Errorf("%s exited: %v; see %s", m, err, m.logFile)
		}
		body, err := m.readyz()
		if err == nil && body == want {
			return nil
		}
		last, lastErr = body, err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: /readyz not %q within %s (last %q, %v)", m, want, timeout, last, lastErr)
}

// stop kills the process (resuming it first if it is stopped) and waits
// for it.
func (m *controllerManager) stop() {
	if exited, _, _ := m.exitState(); !exited {
		_ = m.cmd.Process.Signal(syscall.SIGCONT)
		_ = m.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-m.done:
		case <-time.After(10 * time.Second):
		}
	}
	_ = os.Remove(m.pidFile)
}

// leaseHolder reads the leader election Lease's holder.
func leaseHolder(ctx context.Context) (string, error) {
	lease, err := clients.Kube.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metaGet)
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// auditEvent is the part of a kube-apiserver audit event the suite reads.
type auditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	UserAgent  string `json:"userAgent"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
}

// actor is who made a request: the impersonated user of an extra
// controller-manager, else the user agent's program.
func (e *auditEvent) actor() string {
	if e.ImpersonatedUser != nil && e.ImpersonatedUser.Username != "" {
		return e.ImpersonatedUser.Username
	}
	ua := e.UserAgent
	if i := strings.IndexByte(ua, '/'); i > 0 {
		ua = ua[:i]
	}
	return ua
}

func (e *auditEvent) resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// readAudit reads the audit log's completed write requests, without dry
// runs (the training-apiserver's admission dry-runs the pods of every job
// it admits).
func readAudit() ([]auditEvent, error) {
	f, err := os.Open(auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue
		}
		if e.Stage != "ResponseComplete" || e.ObjectRef == nil || strings.Contains(e.RequestURI, "dryRun=") {
			continue
		}
		out = append(out, e)
	}
	return out, sc.Err()
}
