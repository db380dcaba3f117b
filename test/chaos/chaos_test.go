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
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// namespace holds the whole workload; the audit policy of
// hack/test-chaos.sh logs writes in it.
const namespace = "chaos"

// Bounds of the assertions.
const (
	// maxRecovery: after an outage ends, every job reflects its pods and
	// has the pods it should within this time.
	maxRecovery = 20 * time.Second
	// maxFailover: from kill -9 of the leader until a job created right
	// after has its pods (lease 6s + retry 1s + reconcile).
	maxFailover = 20 * time.Second
	// etcdStop is how long each etcd is stopped (SIGSTOP .. SIGCONT).
	etcdStop = 30 * time.Second
	// cmKills is how often the stack's controller-manager is killed.
	cmKills = 3
)

var (
	clients    *framework.Clients
	repoRoot   string
	localDir   string
	chaosDir   string
	kubeconfig string
	auditLog   string
	// trainingEtcdPid is the external etcd of the training-apiserver.
	trainingEtcdPid int
	metaGet         = metav1.GetOptions{}
)

func TestMain(m *testing.M) {
	flag.Parse()
	if !framework.Enabled() || os.Getenv("CHAOS_DIR") == "" {
		skipReason = "the chaos suite needs a stack of its own: E2E_LOCAL_DIR or CHAOS_DIR is not set; run it with make test-chaos (hack/test-chaos.sh)"
		os.Exit(m.Run())
	}
	if err := framework.Setup(); err != nil {
		fmt.Fprintln(os.Stderr, "chaos setup:", err)
		os.Exit(1)
	}
	env := framework.Environment()
	clients = framework.AdminClients()
	repoRoot, localDir, kubeconfig = env.RepoRoot, env.LocalDir, env.Kubeconfig
	chaosDir = os.Getenv("CHAOS_DIR")
	auditLog = os.Getenv("CHAOS_AUDIT_LOG")
	pid, err := strconv.Atoi(os.Getenv("CHAOS_TRAINING_ETCD_PID"))
	if err != nil || auditLog == "" {
		fmt.Fprintln(os.Stderr, "chaos setup: CHAOS_TRAINING_ETCD_PID and CHAOS_AUDIT_LOG must be set (hack/test-chaos.sh)")
		os.Exit(1)
	}
	trainingEtcdPid = pid
	os.Exit(m.Run())
}

// suite is the state shared by the phases.
type suite struct {
	t       *testing.T
	f       *framework.Framework
	history *framework.PodHistory
	check   *checker
	figs    *figures
	created map[string]time.Time
	mu      sync.Mutex
	cms     []*controllerManager
}

// TestChaos runs about 120 jobs of mixed outcomes through controller-manager
// crashes, a training-apiserver restart, both etcds frozen, a leader
// failover and a frozen leader, and pods deleted behind the controller's
// back; then checks every job's exact outcome and every pod's history.
// skipReason, when set, is why the suite cannot run here.
var skipReason string

func TestChaos(t *testing.T) {
	if skipReason != "" {
		t.Skip(skipReason)
	}
	begin := time.Now()
	figs := &figures{}
	defer func() {
		figs.add("total duration of the test", time.Since(begin).Round(time.Second).String())
		figs.print(t)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
	defer cancel()
	if _, err := clients.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: namespace},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", namespace, err)
	}
	f := &framework.Framework{Clients: clients, Env: framework.Environment(), T: t, Namespace: namespace}
	history, err := framework.WatchPodHistory(ctx, clients.Kube, namespace)
	if err != nil {
		t.Fatal(err)
	}
	defer history.Stop()
	s := &suite{t: t, f: f, history: history, check: &checker{f: f, history: history}, figs: figs, created: map[string]time.Time{}}
	t.Cleanup(s.stopControllerManagers)

	jobs := workload()
	s.createWorkload(jobs)

	t.Run("delete-pods-behind-the-controller", s.deletePods)
	t.Run("kill-controller-manager", s.killControllerManager)
	t.Run("restart-training-apiserver", s.restartTrainingAPIServer)
	t.Run("stop-kube-etcd", func(t *testing.T) {
		pid, err := stackPid("etcd")
		if err != nil {
			t.Fatalf("kube-apiserver's etcd: %v", err)
		}
		s.stopEtcd(t, "kube-apiserver's etcd", pid)
	})
	t.Run("stop-training-etcd", func(t *testing.T) {
		s.stopEtcd(t, "training-apiserver's etcd", trainingEtcdPid)
	})
	t.Run("leader-failover", s.leaderFailover)
	t.Run("frozen-leader", s.frozenLeader)
	t.Run("outcomes", s.outcomes)
}

func (s *suite) stopControllerManagers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.cms {
		m.stop()
	}
}

func (s *suite) startControllerManager(t *testing.T, slot int) *controllerManager {
	t.Helper()
	m, err := startControllerManager(slot)
	if err != nil {
		t.Fatalf("starting controller-manager %d: %v", slot, err)
	}
	s.mu.Lock()
	s.cms = append(s.cms, m)
	s.mu.Unlock()
	t.Logf("started %s, health on 127.0.0.1:%d, log %s", m, m.healthPort, m.logFile)
	return m
}

// create creates jobs with a few requests in flight.
func (s *suite) create(t *testing.T, jobs []*chaosJob) {
	t.Helper()
	work := make(chan *chaosJob)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				ctx, cancel := context.WithTimeout(context.Background(), framework.Timeout)
				err := clients.CreateJob(ctx, j.builder.Build(namespace))
				cancel()
				mu.Lock()
				if err != nil {
					errs = append(errs, fmt.Errorf("creating %s: %w", j.ref, err))
				} else {
					s.created[j.ref.Name] = time.Now()
				}
				mu.Unlock()
				if err == nil {
					s.check.add(j)
				}
			}
		}()
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

func (s *suite) createWorkload(jobs []*chaosJob) {
	t := s.t
	start := time.Now()
	s.create(t, jobs)
	pods := 0
	count := map[class]int{}
	for _, j := range jobs {
		pods += len(j.pods)
		count[j.class]++
	}
	created := time.Since(start)
	r := s.check.waitCaughtUp(start, 2*time.Minute)
	if r.err != nil {
		t.Fatalf("the workload did not start: %v", r.err)
	}
	t.Logf("created %d jobs (%d replica pods) in %s; all reconciled with their pods after %s",
		len(jobs), pods, created.Round(time.Millisecond), r.took.Round(time.Millisecond))
	s.figs.add("jobs", fmt.Sprintf("%d (%s)", len(jobs), classCounts(count)))
	s.figs.add("replica pods at start", strconv.Itoa(pods))
	s.figs.add("workload created / reconciled", fmt.Sprintf("%s / %s", created.Round(100*time.Millisecond), r.took.Round(100*time.Millisecond)))
}

func classCounts(count map[class]int) string {
	out := ""
	for _, c := range classes {
		if count[c] == 0 {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s %d", c, count[c])
	}
	return out
}

// recovered checks and records a recovery.
func (s *suite) recovered(t *testing.T, what string, start time.Time, timeout time.Duration) recovery {
	t.Helper()
	r := s.check.waitCaughtUp(start, timeout)
	s.figs.add("recovery after "+what, fmt.Sprintf("%s (backlog %d)", r.took.Round(100*time.Millisecond), r.backlog))
	switch {
	case r.err != nil:
		t.Errorf("after %s: %v", what, r.err)
	case r.took > maxRecovery:
		t.Errorf("after %s: every job reconciled only %s after recovery (bound %s)", what, r.took.Round(100*time.Millisecond), maxRecovery)
	default:
		t.Logf("after %s: every job reconciled %s after recovery (%d differences at the first read)",
			what, r.took.Round(100*time.Millisecond), r.backlog)
	}
	return r
}

// deletePods deletes, behind the controller's back, the succeeded
// worker's pod of the delete-succeeded jobs (once the status records the
// success) and the running worker's pod of the delete-running jobs.
func (s *suite) deletePods(t *testing.T) {
	pending := map[string]*chaosJob{}
	for _, j := range s.check.all() {
		if j.class == classDeleteSucceeded || j.class == classDeleteRunning {
			pending[j.ref.Name] = j
		}
	}
	start := time.Now()
	deadline := start.Add(90 * time.Second)
	for len(pending) > 0 && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		snap, err := s.check.read(ctx)
		cancel()
		if err != nil {
			t.Logf("reading the namespace: %v", err)
			time.Sleep(500 * time.Millisecond)
			continue
		}
		for name, j := range pending {
			job := snap.jobs[name]
			if job == nil {
				continue
			}
			var pod *corev1.Pod
			for i := range snap.pods[name] {
				if snap.pods[name][i].Name == j.target {
					pod = &snap.pods[name][i]
				}
			}
			rs := replicaStatus(job, j.target)
			if pod == nil || pod.DeletionTimestamp != nil || rs == nil || rs.UID != pod.UID {
				continue
			}
			want, phase := corev1.PodRunning, v1beta1.ReplicaRunning
			if j.class == classDeleteSucceeded {
				want, phase = corev1.PodSucceeded, v1beta1.ReplicaSucceeded
			}
			if pod.Status.Phase != want || rs.Phase != phase {
				continue
			}
			uid := pod.UID
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := clients.Kube.CoreV1().Pods(namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &uid},
			})
			cancel()
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("deleting pod %s: %v", pod.Name, err)
				continue
			}
			t.Logf("deleted the %s pod %s (uid %s) of %s", pod.Status.Phase, pod.Name, uid, j.ref)
			delete(pending, name)
		}
		time.Sleep(500 * time.Millisecond)
	}
	for name := range pending {
		t.Errorf("could not delete the target pod of job %s within 90s\n%s", name, s.f.DumpJob(pending[name].ref))
	}
	s.figs.add("pod deletions behind the controller", time.Since(start).Round(100*time.Millisecond).String())
	s.recovered(t, "pod deletions", time.Now(), time.Minute)
}

// killControllerManager kills the stack's controller-manager with SIGKILL
// cmKills times, restarting it each time a few seconds later.
func (s *suite) killControllerManager(t *testing.T) {
	f := s.f.For(t)
	for i := 1; i <= cmKills; i++ {
		pid, err := stackPid("training-controller-manager")
		if err != nil {
			t.Fatalf("controller-manager pid: %v", err)
		}
		if err := signal(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill -9 %d: %v", pid, err)
		}
		killed := time.Now()
		for alive(pid) && time.Since(killed) < 10*time.Second {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("kill %d/%d: killed training-controller-manager (pid %d)", i, cmKills, pid)
		time.Sleep(2 * time.Second)
		f.RestartComponent("--start", "training-controller-manager")
		up := time.Now()
		s.figs.add(fmt.Sprintf("controller-manager kill %d: down", i), up.Sub(killed).Round(100*time.Millisecond).String())
		s.recovered(t, fmt.Sprintf("controller-manager kill %d", i), up, time.Minute)
		time.Sleep(time.Second)
	}
}

// restartTrainingAPIServer restarts the aggregated apiserver.
func (s *suite) restartTrainingAPIServer(t *testing.T) {
	f := s.f.For(t)
	start := time.Now()
	f.RestartComponent("training-apiserver")
	f.WaitForAPIServiceAvailable()
	up := time.Now()
	s.figs.add("training-apiserver restart: down", up.Sub(start).Round(100*time.Millisecond).String())
	s.recovered(t, "training-apiserver restart", up, time.Minute)
}

// stopEtcd freezes an etcd with SIGSTOP for etcdStop, then resumes it.
func (s *suite) stopEtcd(t *testing.T, what string, pid int) {
	if !alive(pid) {
		t.Fatalf("%s (pid %d) is not running", what, pid)
	}
	if err := signal(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP %s: %v", what, err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_ = signal(pid, syscall.SIGCONT)
		}
	}()
	t.Logf("SIGSTOP %s (pid %d) for %s", what, pid, etcdStop)
	time.Sleep(etcdStop)
	if err := signal(pid, syscall.SIGCONT); err != nil {
		t.Fatalf("SIGCONT %s: %v", what, err)
	}
	resumed = true
	up := time.Now()
	t.Logf("SIGCONT %s", what)
	s.recovered(t, what+" frozen "+etcdStop.String(), up, 90*time.Second)
}

// probe creates a probe job and returns when it was created.
func (s *suite) probe(t *testing.T, name string) (*chaosJob, time.Time) {
	t.Helper()
	j := probeJob(name)
	s.create(t, []*chaosJob{j})
	return j, s.created[name]
}

// podsExist says whether every replica pod of j exists.
func podsExist(ctx context.Context, j *chaosJob) (bool, error) {
	pods, err := clients.ListPods(ctx, j.ref)
	if err != nil {
		return false, err
	}
	have := map[string]bool{}
	for _, p := range pods {
		have[p.Name] = true
	}
	for _, n := range j.pods {
		if !have[n] {
			return false, nil
		}
	}
	return true, nil
}

// takeover waits until the Lease names another holder than old and the
// probe job has its pods; it returns when each happened.
func (s *suite) takeover(t *testing.T, old string, j *chaosJob, timeout time.Duration) (holder string, leaseAt, podsAt time.Time) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && (leaseAt.IsZero() || podsAt.IsZero()) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if leaseAt.IsZero() {
			if h, err := leaseHolder(ctx); err == nil && h != "" && h != old {
				holder, leaseAt = h, time.Now()
			}
		}
		if podsAt.IsZero() {
			if ok, err := podsExist(ctx, j); err == nil && ok {
				podsAt = time.Now()
			}
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
	if leaseAt.IsZero() || podsAt.IsZero() {
		t.Fatalf("no takeover within %s: lease holder %q (old %q), probe pods created at %v\n%s",
			timeout, holder, old, podsAt, s.f.DumpJob(j.ref))
	}
	return holder, leaseAt, podsAt
}
