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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tensorstack.dev/training/internal/localcluster/spec"
	"tensorstack.dev/training/internal/skips"
)

// nodeHost is what the real nodes do on the machine: their namespaces,
// cgroups, image stores and sysctls, and what is left of them.
type nodeHost struct {
	host Host
	cfg  spec.Config
}

// run runs a command on the host.
func (m nodeHost) run(ctx context.Context, path string, args ...string) error {
	_, err := m.host.Run(ctx, Command{Path: path, Args: args})
	return err
}

// SignalContainer sends a signal (SIGKILL, say) to a container of a real
// node of the stack whose state is in stackDir, through that node's
// containerd and the ctr binary given: the process gets it from the kernel,
// as it would from the OOM killer. containerID is the one a pod's status
// gives, with or without its containerd:// prefix.
func SignalContainer(ctx context.Context, ctr, stackDir, node, containerID, signal string) error {
	id := strings.TrimPrefix(containerID, "containerd://")
	sock := spec.ContainerdSocket(spec.NodeDir(stackDir, node))
	out, err := exec.CommandContext(ctx, ctr, "--address", sock, "-n", "k8s.io", "task", "kill", "--signal", signal, id).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr task kill --signal %s %s on %s: %v: %s", signal, id, node, err, out)
	}
	return nil
}

// RealNodesAllowed says why real nodes cannot run here, or "" when they can.
func RealNodesAllowed() string {
	if os.Geteuid() != 0 {
		return "it needs root (network and mount namespaces, cgroups)"
	}
	for _, c := range []string{"cpu", "memory", "pids", "devices", "freezer"} {
		if !fileExists("/sys/fs/cgroup/"+c) && !fileExists("/sys/fs/cgroup/cpu,cpuacct") {
			return "no cgroup v1 hierarchy for " + c + " under /sys/fs/cgroup (the kubelet runs here with cgroupfs on cgroup v1)"
		}
	}
	if fs, err := os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fs), "overlay") {
		return "the kernel has no overlay file system (containerd's snapshotter)"
	}
	return ""
}

// WhyNoRealNodes says why a stack started with this environment runs no real nodes, or "" when it runs them:
// LOCAL_REAL_NODE=0, or what the machine lacks (RealNodesAllowed).
func WhyNoRealNodes(getenv func(string) string) string {
	if getenv("LOCAL_REAL_NODE") == "0" {
		return "LOCAL_REAL_NODE=0 turns them off"
	}
	if why := RealNodesAllowed(); why != "" {
		return "they cannot run here: " + why
	}
	return ""
}

// SkipWithoutRealNodes is what a suite that needs real nodes does (make node, make test-install): nothing where
// they run. Where they do not, it returns the line that says the suite is skipped and why, the skip noted for
// make test; or, under CI=true or REQUIRE_REAL_NODES=1, an error naming the reason (internal/skips).
func SkipWithoutRealNodes(suite string) (string, error) {
	why := WhyNoRealNodes(os.Getenv)
	if why == "" {
		return "", nil
	}
	why = "no real nodes: " + why
	if err := skips.Suite(suite, why, skips.RequireRealNodes); err != nil {
		return "", err
	}
	return suite + ": skipped, " + why, nil
}

// DefaultRealNodes is how many real nodes the machine holds: two with 2
// CPUs and 6 GiB of memory or more (a node idles at about 250 MiB, a
// 2-rank DDP job takes about 1.5 GiB), else one.
func DefaultRealNodes() int {
	if runtime.NumCPU() >= 2 && memTotalGiB() >= 6 {
		return 2
	}
	return 1
}

func memTotalGiB() int {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.Atoi(f[1])
			return kb >> 20
		}
	}
	return 0
}

// holdMountNamespace makes the node's private mount namespace, kept by a sleeping
// process, with /var/lib and /var/log overlaid and /run bound to the node's
// own: the paths containerd and the kubelet write whatever their flags say
// stay off the host, and their mounts end with the namespace.
func (m nodeHost) holdMountNamespace(ctx context.Context, n spec.Node) error {
	if _, err := m.host.Start(Process{
		Name: n.ComponentName("holder"), Path: "unshare", Args: []string{"--mount", "--propagation", "private", "--", "sleep", "infinity"},
		LogFile: m.cfg.Paths.LogFile(n.ComponentName("holder")), PIDFile: n.HolderPIDFile,
	}); err != nil {
		return err
	}
	for _, d := range []string{"var-lib/upper", "var-lib/work", "var-log/upper", "var-log/work"} {
		if err := m.host.MkdirAll(n.Path("overlay", d), 0o755); err != nil {
			return err
		}
	}
	if err := m.host.MkdirAll(n.Path("run"), 0o755); err != nil {
		return err
	}
	if !m.host.DryRun() {
		// unshare has made its namespace once the process's differs from ours.
		pid := readPID(n.HolderPIDFile)
		self, _ := os.Readlink("/proc/self/ns/mnt")
		for i := 0; i < 100; i++ {
			if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid)); ns != "" && ns != self {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	script := fmt.Sprintf(`mount -t overlay overlay -o lowerdir=/var/lib,upperdir=%[1]s/var-lib/upper,workdir=%[1]s/var-lib/work /var/lib
mount -t overlay overlay -o lowerdir=/var/log,upperdir=%[1]s/var-log/upper,workdir=%[1]s/var-log/work /var/log
mount --bind %[2]s /run
mount --make-rshared /`, n.Path("overlay"), spec.ShellQuote(n.Path("run")))
	return m.run(ctx, "nsenter", "--mount="+m.mountNS(n.Namespace()), "--", "sh", "-ec", script)
}

// mountNS is the node's mount namespace, held by its holder process.
func (m nodeHost) mountNS(ns *spec.Namespace) string {
	pid := readPID(ns.HolderPIDFile)
	if m.host.DryRun() || pid == 0 {
		return "/proc/<" + ns.Holder + ">/ns/mnt"
	}
	return fmt.Sprintf("/proc/%d/ns/mnt", pid)
}

// wrap is the command line that runs a program in the node's namespaces.
func (m nodeHost) wrap(ns *spec.Namespace) []string {
	return []string{"nsenter", "--net=/run/netns/" + ns.NetNS, "--mount=" + m.mountNS(ns), "--"}
}

// makeCgroups makes the kubelet's cgroupRoot in every v1 hierarchy.
func (m nodeHost) makeCgroups(cgroup string) error {
	if m.host.DryRun() {
		fmt.Fprintf(m.host.(*DryRunHost).Out, "mkdir /sys/fs/cgroup/*/%s\n", cgroup)
		return nil
	}
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*/cgroup.procs")
	for _, procs := range hierarchies {
		h := filepath.Dir(procs)
		if info, err := os.Lstat(h); err != nil || info.Mode()&os.ModeSymlink != 0 {
			continue
		}
		if err := os.MkdirAll(filepath.Join(h, cgroup), 0o755); err != nil {
			return err
		}
	}
	// cpuset takes tasks only once it has its parent's cpus and mems.
	for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
		if data, err := os.ReadFile("/sys/fs/cgroup/cpuset/" + f); err == nil {
			if err := os.WriteFile(filepath.Join("/sys/fs/cgroup/cpuset", cgroup, f), data, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// imported says whether the store holds the archive as it is now (its
// size and modification time), and the stamp that says so.
func (m nodeHost) imported(n spec.Node, archive string) (stamp string, kept bool) {
	if m.host.DryRun() {
		return archive + " <size> <modification time>\n", false
	}
	info, err := os.Stat(archive)
	if err != nil {
		return "", false
	}
	stamp = fmt.Sprintf("%s %d %d\n", archive, info.Size(), info.ModTime().UnixNano())
	old, err := os.ReadFile(n.StampFile(filepath.Base(archive)))
	return stamp, err == nil && string(old) == stamp
}

// openStore keeps a store marked clean and starts any other afresh; the
// mark goes while the node runs.
func (m nodeHost) openStore(n spec.Node) error {
	h := m.host
	if !fileExists(n.CleanMark()) || h.DryRun() {
		if err := h.RemoveAll(n.StoreDir); err != nil {
			return err
		}
	}
	if err := h.MkdirAll(n.StoreRoot(), 0o700); err != nil {
		return err
	}
	return h.RemoveAll(n.CleanMark())
}

// cleanContainers removes every container (pods' sandboxes among them) from
// the store of a node whose containerd still runs and whose processes are
// gone, keeping the images; it marks the store clean when that worked.
func (m nodeHost) cleanContainers(n spec.Node) {
	ctr := append(m.wrap(n.Namespace()), m.cfg.Bin("ctr"), "--address", n.Socket(), "-n", "k8s.io", "containers")
	ctx := context.Background()
	// The list on stdout; containerd's warnings go to stderr.
	list, err := m.host.Run(ctx, Command{Path: ctr[0], Args: append(ctr[1:], "ls", "-q"), Quiet: true})
	if err != nil {
		m.host.Logf("WARNING: %s: listing its containers: %v; its image store starts afresh next time", n.Name, err)
		return
	}
	if ids := strings.Fields(string(list)); len(ids) > 0 {
		if _, err := m.host.Run(ctx, Command{Path: ctr[0], Args: append(append(ctr[1:], "rm"), ids...), Quiet: true}); err != nil {
			m.host.Logf("WARNING: %s: removing its containers: %v; its image store starts afresh next time", n.Name, err)
			return
		}
	}
	_ = m.host.WriteFile(n.CleanMark(), []byte("no containers\n"), 0o644)
}

// teardown stops every real node and removes what they made on the
// machine: processes, namespaces (with their mounts, links and iptables
// rules), cgroups; and puts back the sysctls the kubelet changed. It is safe
// when no node ran, and finds what a crashed stack left.
func (m nodeHost) teardown(procs processTable) error {
	if m.host.DryRun() {
		return nil
	}
	for _, n := range m.cfg.Nodes {
		for _, part := range []string{"kubelet", "kube-proxy", "coredns"} {
			procs.stop(&spec.Component{Name: n.ComponentName(part), Binary: m.cfg.Bin(part), Home: n.Dir}, nil)
		}
		m.killCgroupTasks(n.Cgroup)
		procs.stop(&spec.Component{Name: n.ComponentName("containerd"), Binary: m.cfg.Bin("containerd"), Home: n.Dir}, nil)
	}
	for _, pid := range m.nodeProcesses() {
		_ = killPID(pid)
	}
	for _, n := range m.cfg.AllNodeSlots() {
		m.killCgroupTasks(n.Cgroup)
		removeCgroups(n.Cgroup)
	}
	var errs []string
	for _, ns := range m.stackNetNSes() {
		if out, err := execOutput("ip", "netns", "del", ns); err != nil {
			errs = append(errs, fmt.Sprintf("deleting network namespace %s: %v: %s", ns, err, out))
		}
	}
	if err := m.restoreSysctls(); err != nil {
		errs = append(errs, err.Error())
	}
	for _, n := range m.cfg.AllNodeSlots() {
		_ = os.Remove(n.HolderPIDFile)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// The machine-wide sysctls are shared by every stack with real nodes: the first to start records the machine's
// own values, and the last to stop puts them back, so that two stacks side by side (make test's lanes) neither
// restore them under each other nor leave the kubelet's values behind. Each stack that holds them has a file in
// sysctlsDir with the machine's values; /run is cleared by a reboot, as the sysctls are.
var sysctlsDir = "/run/tensorstack-localcluster/sysctls"

// sysctlsFile is this stack's hold on the machine-wide sysctls.
func (m nodeHost) sysctlsFile() string { return filepath.Join(sysctlsDir, m.cfg.StackID()) }

// withSysctlsLock runs fn holding the lock that orders the stacks' saves and restores.
func withSysctlsLock(fn func() error) error {
	if err := os.MkdirAll(sysctlsDir, 0o755); err != nil {
		return err
	}
	lock, err := os.OpenFile(filepath.Join(sysctlsDir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	return fn()
}

// sysctlHolders lists the stacks' files in sysctlsDir.
func sysctlHolders() ([]string, error) {
	entries, err := os.ReadDir(sysctlsDir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, filepath.Join(sysctlsDir, e.Name()))
		}
	}
	return files, nil
}

// saveSysctls records the machine's own values of the sysctls the kubelet changes: read now when no other stack
// holds them, else copied from a stack that does (the kubelet of that one has changed them since). An earlier
// record of this stack (one that crashed) is kept.
func (m nodeHost) saveSysctls(ctx context.Context, names []string) error {
	if m.host.DryRun() {
		_, err := m.host.Run(ctx, Command{Path: "sysctl", Args: append([]string{"-n"}, names...)})
		return err
	}
	return withSysctlsLock(func() error {
		file := m.sysctlsFile()
		if fileExists(file) {
			return nil
		}
		holders, err := sysctlHolders()
		if err != nil {
			return err
		}
		if len(holders) > 0 {
			original, err := os.ReadFile(holders[0])
			if err != nil {
				return err
			}
			return os.WriteFile(file, original, 0o644)
		}
		var b strings.Builder
		for _, name := range names {
			out, err := exec.Command("sysctl", "-n", name).Output()
			if err != nil {
				return fmt.Errorf("sysctl -n %s: %w", name, err)
			}
			fmt.Fprintf(&b, "%s=%s\n", name, strings.TrimSpace(string(out)))
		}
		return os.WriteFile(file, []byte(b.String()), 0o644)
	})
}

// restoreSysctls lets go of this stack's hold, and puts the machine's values back when no other stack holds them.
func (m nodeHost) restoreSysctls() error {
	if !fileExists(m.sysctlsFile()) {
		return nil // never held (no real nodes, no root): nothing to take the lock for
	}
	return withSysctlsLock(func() error {
		data, err := os.ReadFile(m.sysctlsFile())
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := os.Remove(m.sysctlsFile()); err != nil {
			return err
		}
		others, err := sysctlHolders()
		if err != nil || len(others) > 0 {
			return err
		}
		var errs []string
		for _, line := range strings.Fields(string(data)) {
			if out, err := execOutput("sysctl", "-qw", line); err != nil {
				errs = append(errs, fmt.Sprintf("restoring %s: %v: %s", line, err, out))
			}
		}
		if len(errs) > 0 {
			// Hold on to them, so that the next stop tries again and Leftovers names them.
			_ = os.WriteFile(m.sysctlsFile(), data, 0o644)
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	})
}

// killCgroupTasks kills every process in the node's cgroups.
func (m nodeHost) killCgroupTasks(cgroup string) {
	if m.host.DryRun() {
		return
	}
	for round := 0; round < 10; round++ {
		pids := cgroupPIDs(cgroup)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func cgroupPIDs(cgroup string) []int {
	seen := map[int]bool{}
	var pids []int
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroup)
	for _, root := range roots {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.Name() != "cgroup.procs" {
				return nil
			}
			data, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && !seen[pid] {
					seen[pid] = true
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the node's cgroups, deepest first.
func removeCgroups(cgroup string) {
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/" + cgroup)
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = syscall.Rmdir(dirs[i])
		}
	}
}

// nodeBinaries are what runs on a real node, by path.
func (m nodeHost) nodeBinaries() map[string]bool {
	out := map[string]bool{}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "kubelet", "kube-proxy", "coredns", "nodeproxy", "runc"} {
		out[m.cfg.Bin(b)] = true
	}
	return out
}

// nodeProcesses are the processes of this stack's nodes (containerd's
// shims a crash left among them) and their namespaces' holders: those whose
// command lines name its directory or namespaces.
func (m nodeHost) nodeProcesses() []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	bins := m.nodeBinaries()
	id := m.cfg.StackID()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe := processExe(pid)
		args := strings.Join(processCmdline(pid), " ")
		mine := strings.Contains(args, m.cfg.Paths.Dir+"/") || strings.Contains(args, id)
		holder := exe != "" && filepath.Base(exe) == "sleep" && args == "sleep infinity" && m.isHolder(pid)
		if (bins[exe] && mine) || holder {
			pids = append(pids, pid)
		}
	}
	return pids
}

// isHolder: pid is the holder of one of this stack's nodes' mount
// namespaces, by its pid file.
func (m nodeHost) isHolder(pid int) bool {
	for _, n := range m.cfg.AllNodeSlots() {
		if readPID(n.HolderPIDFile) == pid {
			return true
		}
	}
	return false
}

// stackNetNSes are the network namespaces of this stack that exist.
func (m nodeHost) stackNetNSes() []string {
	entries, _ := os.ReadDir("/run/netns")
	var out []string
	for _, e := range entries {
		if e.Name() == m.cfg.NetworkNetNS() || strings.HasPrefix(e.Name(), m.cfg.NodeNetNSPrefix()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func killPID(pid int) error {
	err := syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; i < 50 && pidAlive(pid); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

func execOutput(path string, args ...string) (string, error) {
	out, err := exec.Command(path, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// leftovers lists what the real nodes left on the machine, one line each:
// nothing after Down.
func (m nodeHost) leftovers() []string {
	var out []string
	for _, pid := range m.nodeProcesses() {
		out = append(out, fmt.Sprintf("process %d: %s", pid, strings.Join(processCmdline(pid), " ")))
	}
	for _, ns := range m.stackNetNSes() {
		out = append(out, "network namespace "+ns)
	}
	if links, err := execOutput("ip", "-o", "link", "show"); err == nil {
		for _, l := range strings.Split(links, "\n") {
			if strings.Contains(l, spec.VethPrefix) || strings.Contains(l, spec.BridgeName) || strings.Contains(l, "cni0") {
				out = append(out, "link on the host: "+l)
			}
		}
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mounts), "\n") {
			if strings.Contains(l, filepath.Join(m.cfg.Paths.Dir, "nodes")) {
				out = append(out, "mount on the host: "+l)
			}
		}
	}
	for _, n := range m.cfg.AllNodeSlots() {
		if dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + n.Cgroup); len(dirs) > 0 {
			out = append(out, "cgroup "+strings.Join(dirs, " "))
		}
	}
	if rules, err := execOutput("iptables-save"); err == nil {
		for _, l := range strings.Split(rules, "\n") {
			if strings.Contains(l, "KUBE-") || strings.Contains(l, "CNI-") {
				out = append(out, "iptables rule on the host: "+l)
				break
			}
		}
	}
	if fileExists(m.sysctlsFile()) {
		data, _ := os.ReadFile(m.sysctlsFile())
		out = append(out, "sysctls not restored: "+strings.Join(strings.Fields(string(data)), " "))
	}
	return out
}

// importImages imports the archives into the node's containerd, skipping
// those its store holds as they are now, and an optional one not built.
func (m nodeHost) importImages(ctx context.Context, s spec.ImportImages) error {
	n, repo := s.Node, m.cfg.Paths.Repo
	ctr := append(m.wrap(n.Namespace()), m.cfg.Bin("ctr"), "--address", n.Socket(), "-n", "k8s.io", "images", "import", "--local")
	archives := append(append([]string{}, s.Archives...), s.Optional...)
	for i, path := range archives {
		if i >= len(s.Archives) && (m.host.DryRun() || !fileExists(path)) {
			m.host.Logf("%s: %s is imported only when built (NODE_IMAGE_MPI5=1 make node)", n.Name, spec.RelTo(repo, path))
			continue
		}
		stamp, kept := m.imported(n, path)
		if kept {
			m.host.Logf("%s: %s is in its image store already", n.Name, spec.RelTo(repo, path))
			continue
		}
		start := time.Now()
		if err := m.run(ctx, ctr[0], append(ctr[1:], path)...); err != nil {
			return err
		}
		if err := m.host.WriteFile(n.StampFile(filepath.Base(path)), []byte(stamp), 0o644); err != nil {
			return err
		}
		m.host.Logf("%s: imported %s in %s", n.Name, spec.RelTo(repo, path), time.Since(start).Round(100*time.Millisecond))
	}
	return nil
}
