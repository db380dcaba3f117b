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

package install

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// restoreClaim is the claim the snapshot is restored from, as
// components/etcd-restore and docs/install.md name it.
const restoreClaim = "training-etcd-restore"

// storedJob is what a restore must bring back of a job: the same object
// (its UID) with the same conditions.
type storedJob struct {
	uid        string
	conditions []string // type=status (reason)
}

func (e *env) storedJobs(t *testing.T) map[string]storedJob {
	t.Helper()
	list, err := e.jobs.BatchV1beta1().PyTorchTrainingJobs(jobsNamespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]storedJob{}
	for _, j := range list.Items {
		s := storedJob{uid: string(j.UID)}
		for _, c := range j.Status.Conditions {
			s.conditions = append(s.conditions, fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason))
		}
		slices.Sort(s.conditions)
		out[j.Name] = s
	}
	return out
}

// testBackup takes the etcd snapshot as docs/install.md says: a port
// forwarded to a member, and etcdctl snapshot save.
func testBackup(t *testing.T, e *env) {
	e.backedUp = e.storedJobs(t)
	start := time.Now()
	port, stop := e.portForward(t, "pod/training-etcd-0", 2379)
	defer stop()
	e.snapshot = filepath.Join(e.workDir, "snapshot.db")
	// etcd requires a client certificate of its CA: training-apiserver's,
	// from its Secret, as docs/install.md says.
	client := e.etcdClient(t)
	cmd := exec.Command(e.etcdctl, append(client.etcdctlArgs(), "--endpoints=https://127.0.0.1:"+port, "snapshot", "save", e.snapshot)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
	}
	info, err := os.Stat(e.snapshot)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd snapshot of %d jobs: %.1f MB in %.1fs", len(e.backedUp), float64(info.Size())/1e6, time.Since(start).Seconds())
}

var forwarding = regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)

// portForward runs kubectl port-forward to a random local port and returns
// the port, and a function that stops it.
func (e *env) portForward(t *testing.T, target string, port int) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, e.kubectl, "--kubeconfig", e.kubeconfig, "--namespace", systemNamespace,
		"port-forward", "--address=127.0.0.1", target, fmt.Sprintf(":%d", port))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { cancel(); _ = cmd.Wait() }
	found := make(chan string, 1)
	go func() {
		scanner := bufio.NewScanner(stdout)
		for scanner.Scan() {
			if m := forwarding.FindStringSubmatch(scanner.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case p := <-found:
		return p, stop
	case <-time.After(30 * time.Second):
		stop()
		t.Fatalf("kubectl port-forward %s: no port within 30s", target)
		return "", nil
	}
}

// stageSnapshot puts the snapshot on a new claim, as docs/install.md says:
// a pod that mounts it, kubectl cp, and the pod deleted again.
func (e *env) stageSnapshot(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNamespace}}
	if _, err := e.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: restoreClaim, Namespace: systemNamespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.kube.CoreV1().PersistentVolumeClaims(systemNamespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	loader := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "snapshot-loader", Namespace: systemNamespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "loader", Image: "localhost/tensorstack/training:v1", Command: []string{"sleep", "600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "restore", MountPath: "/restore"}},
			}},
			Volumes: []corev1.Volume{{Name: "restore", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: restoreClaim}}}},
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	if _, err := e.kube.CoreV1().Pods(systemNamespace).Create(ctx, loader, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the snapshot loader running", 3*time.Minute, time.Second, func(ctx context.Context) (bool, error) {
		p, err := e.kube.CoreV1().Pods(systemNamespace).Get(ctx, loader.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	e.run(t, nil, "cp", e.snapshot, systemNamespace+"/"+loader.Name+":/restore/snapshot.db")
	// etcdctl saves the file for its owner only; etcd runs as user 65532.
	e.run(t, nil, "exec", "--namespace", systemNamespace, loader.Name, "--", "chmod", "0644", "/restore/snapshot.db")
	e.run(t, nil, "delete", "pod", "--namespace", systemNamespace, loader.Name, "--wait=true")
}

// checkRestored: every job of the snapshot is back, the same object with
// the same conditions.
func (e *env) checkRestored(t *testing.T) {
	t.Helper()
	restored := e.storedJobs(t)
	missing, changed := 0, 0
	for name, want := range e.backedUp {
		got, ok := restored[name]
		switch {
		case !ok:
			missing++
			if missing <= 5 {
				t.Errorf("job %s of the snapshot was not restored", name)
			}
		case got.uid != want.uid || !slices.Equal(got.conditions, want.conditions):
			changed++
			if changed <= 5 {
				t.Errorf("job %s restored as uid %s, conditions %s; the snapshot had uid %s, conditions %s",
					name, got.uid, strings.Join(got.conditions, ", "), want.uid, strings.Join(want.conditions, ", "))
			}
		}
	}
	if missing+changed > 0 {
		t.Errorf("%d of the snapshot's %d jobs missing, %d changed", missing, len(e.backedUp), changed)
	}
}
