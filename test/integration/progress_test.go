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

package integration

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/apiserver"
	"tensorstack.dev/training/test/integration/framework"
)

func stepReport(step, total int64) *v1beta1.ProgressReport {
	return &v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{
		Step: &step, TotalSteps: &total, Metrics: []v1beta1.ProgressMetric{{Name: "loss", Value: fmt.Sprint(1000 - step)}},
	}}
}

// withProgressInterval starts a server whose progress writes are at least
// interval apart.
func withProgressInterval(t *testing.T, interval time.Duration) *framework.TestServer {
	return framework.StartTestServerWith(t, "", func(c *apiserver.Config) { c.Progress.Interval = interval })
}

// TestProgressBurstReachesEtcdOncePerInterval: 50 reports 100 ms apart
// reach etcd once at once and then once per interval, counted as puts of
// the job's key in etcd itself; the last put holds the last report, and
// the reports that never reached etcd are counted in coalescedReports.
func TestProgressBurstReachesEtcdOncePerInterval(t *testing.T) {
	const interval = time.Second
	s := withProgressInterval(t, interval)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("burst")
	if _, err := jobs.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	etcd := s.EtcdClient()
	key := etcdKey(t, etcd, "pytorchtrainingjobs", "burst", "train")
	watchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	puts := etcd.Watch(watchCtx, key)

	const reports = 50
	start := time.Now()
	for i := int64(1); i <= reports; i++ {
		if _, err := jobs.ReportProgress(ctx, "train", stepReport(i, 100), metav1.CreateOptions{}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	burst := time.Since(start)

	// Every put of the job's key until none came for two intervals: the
	// last held report is written at the end of its interval.
	writes := 0
	for quiet := false; !quiet; {
		select {
		case resp := <-puts:
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypePut {
					writes++
				}
			}
		case <-time.After(2 * interval):
			quiet = true
		}
	}
	most := 2 + int(burst/interval)
	t.Logf("%d reports in %s: %d etcd writes (at most %d allowed; %d without coalescing)", reports, burst.Round(time.Millisecond), writes, most, reports)
	if writes < 2 || writes > most {
		t.Errorf("%d reports in %s: %d etcd writes, want between 2 and %d", reports, burst, writes, most)
	}
	job, err := jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := job.Status.Progress
	if want := int64(reports - writes); last == nil || last.CoalescedReports != want || ptr.Deref(last.Step, 0) != reports ||
		last.Metrics[0].Value != "950" || ptr.Deref(last.Percent, 0) != 50 {
		t.Errorf("stored progress %+v: want step %d, coalescedReports %d, loss 950, percent 50", last, reports, want)
	}
}

// TestProgressFinalReportIsNotHeld: within an interval of an hour, the
// report of the last step is stored at once, replacing the one held, so
// that it is in the status when the job finishes right after.
func TestProgressFinalReportIsNotHeld(t *testing.T) {
	s := withProgressInterval(t, time.Hour)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("final")
	if _, err := jobs.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first, err := jobs.ReportProgress(ctx, "train", stepReport(38, 40), metav1.CreateOptions{})
	if err != nil || !first.Status.Stored {
		t.Fatalf("first report: %+v, %v; want it stored", first, err)
	}
	held, err := jobs.ReportProgress(ctx, "train", stepReport(39, 40), metav1.CreateOptions{})
	if err != nil || held.Status.Stored {
		t.Fatalf("second report: %+v, %v; want it held", held, err)
	}
	final, err := jobs.ReportProgress(ctx, "train", stepReport(40, 40), metav1.CreateOptions{})
	if err != nil || !final.Status.Stored {
		t.Fatalf("final report: %+v, %v; want it stored at once", final, err)
	}
	job, err := jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := job.Status.Progress; p == nil || ptr.Deref(p.Step, 0) != 40 || ptr.Deref(p.Percent, 0) != 100 || p.CoalescedReports != 1 {
		t.Errorf("stored progress %+v: want step 40 at 100%%, the held report counted as coalesced", p)
	}
}

// TestProgressRefusals: what a report may not be, and where it may not go.
func TestProgressRefusals(t *testing.T) {
	s := withProgressInterval(t, time.Hour)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("refusals")
	job, err := jobs.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	for name, tc := range map[string]struct {
		report *v1beta1.ProgressReport
		fields []string
	}{
		"empty":            {&v1beta1.ProgressReport{}, []string{"percent"}},
		"beyond the total": {stepReport(101, 100), []string{"step"}},
		"bad metrics": {&v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{Metrics: []v1beta1.ProgressMetric{
			{Name: "1loss", Value: "0.1"}, {Name: "acc", Value: "high"},
		}}}, []string{"metrics[0].name", "metrics[1].value"}},
		"a long message": {&v1beta1.ProgressReport{ProgressValues: v1beta1.ProgressValues{Message: strings.Repeat("x", 257)}}, []string{"message"}},
	} {
		_, err := jobs.ReportProgress(ctx, "train", tc.report, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want 422", name, err)
			continue
		}
		var fields []string
		for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
			fields = append(fields, cause.Field)
		}
		for _, f := range tc.fields {
			if !contains(fields, f) {
				t.Errorf("%s: error names %v, want %s", name, fields, f)
			}
		}
	}
	if _, err := jobs.ReportProgress(ctx, "missing", stepReport(1, 2), metav1.CreateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a report for a job that does not exist: %v, want 404", err)
	}
	named := stepReport(1, 2)
	named.Name = "other"
	if _, err := jobs.ReportProgress(ctx, "train", named, metav1.CreateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("a report naming another job: %v, want 400", err)
	}
	if answer, err := jobs.ReportProgress(ctx, "train", stepReport(1, 2), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil || answer.Status.Stored {
		t.Errorf("dry run: %v, %+v; want accepted and not stored", err, answer)
	}
	if got, _ := jobs.Get(ctx, "train", metav1.GetOptions{}); got.ResourceVersion != job.ResourceVersion {
		t.Errorf("refused and dry-run reports changed the job: resourceVersion %s, was %s", got.ResourceVersion, job.ResourceVersion)
	}

	// The status subresource leaves the progress as it is, and a finished
	// job takes no report.
	if _, err := jobs.ReportProgress(ctx, "train", stepReport(1, 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job, err = jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil || job.Status.Progress == nil {
		t.Fatalf("after a report: %v, progress %+v", err, job.Status.Progress)
	}
	job.Status.Progress = nil
	job.Status.Phase = v1beta1.JobSucceeded
	now := metav1.Now()
	job.Status.StartTime, job.Status.CompletionTime = &now, &now
	job.Status.Conditions = []metav1.Condition{{Type: v1beta1.ConditionCompleted, Status: metav1.ConditionTrue, Reason: "Succeeded", LastTransitionTime: now}}
	finished, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("finishing the job: %v", err)
	}
	if p := finished.Status.Progress; p == nil || ptr.Deref(p.Step, 0) != 1 {
		t.Errorf("a status write without progress removed it: %+v", p)
	}
	// The handler judges a report by the watch cache; a read at the
	// finished version waits until the cache has it. (A report that comes
	// within moments of the finish may be held back instead, and is then
	// dropped by the write, which judges the stored job.)
	if _, err := jobs.Get(ctx, "train", metav1.GetOptions{ResourceVersion: finished.ResourceVersion}); err != nil {
		t.Fatal(err)
	}
	_, err = jobs.ReportProgress(ctx, "train", stepReport(2, 2), metav1.CreateOptions{})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Succeeded") {
		t.Errorf("a report for a succeeded job: %v, want 409 saying it Succeeded", err)
	}
}

// TestProgressPythonHelper runs the helper of the training image,
// tensorstack.training.progress of the Python package, against the server as a pod
// would: the API address, the job and the token come from its environment
// and files.
func TestProgressPythonHelper(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	s := withProgressInterval(t, time.Hour)
	ctx := context.Background()
	jobs := s.Client.BatchV1beta1().PyTorchTrainingJobs("helper")
	if _, err := jobs.Create(ctx, pytorchKind(s).newJob("train"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(s.Config.BearerToken), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), servingCA(t, s.Config.Host), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "-m", "tensorstack.training.progress", "step=25", "total_steps=100", "epoch=1", "loss=0.125", "message=from python")
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+helperDir(t),
		"PYTHONDONTWRITEBYTECODE=1",
		"TENSORSTACK_API_SERVER="+s.Config.Host,
		"TENSORSTACK_SERVICE_ACCOUNT_DIR="+dir,
		"TENSORSTACK_JOB_NAME=train",
		"TENSORSTACK_JOB_NAMESPACE=helper",
		"TENSORSTACK_JOB_RESOURCE="+v1beta1.PyTorchTrainingJobResource,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the helper failed: %v\n%s", err, out)
	}
	var answer struct{ Stored bool }
	if err := json.Unmarshal(out, &answer); err != nil || !answer.Stored {
		t.Errorf("the helper printed %q, want the answer's status with stored true", out)
	}
	job, err := jobs.Get(ctx, "train", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := job.Status.Progress
	if p == nil || ptr.Deref(p.Step, 0) != 25 || ptr.Deref(p.Percent, 0) != 25 || ptr.Deref(p.Epoch, -1) != 1 ||
		len(p.Metrics) != 1 || p.Metrics[0] != (v1beta1.ProgressMetric{Name: "loss", Value: "0.125"}) || p.Message != "from python" {
		t.Errorf("status.progress after the helper's report: %+v", p)
	}

	// Outside a job's pod the helper says why, and the training goes on.
	cmd = exec.Command(python, "-c", "import tensorstack.training.progress as p; print(p.report(step=1, total_steps=2))")
	cmd.Env = []string{"PYTHONPATH=" + helperDir(t), "PYTHONDONTWRITEBYTECODE=1", "PATH=" + os.Getenv("PATH")}
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "not in a TensorStack training job's pod") || !strings.HasSuffix(strings.TrimSpace(string(out)), "None") {
		t.Errorf("the helper outside a pod: %v\n%s", err, out)
	}
}

// helperDir is where the helper's module is, from this package.
func helperDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "python", "src"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// servingCA is the certificate that signed the server's serving
// certificate, as the server presents it.
func servingCA(t *testing.T, host string) []byte {
	t.Helper()
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only to read the chain
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	chain := conn.ConnectionState().PeerCertificates
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: chain[len(chain)-1].Raw})
}
