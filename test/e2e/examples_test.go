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

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/test/e2e/framework"
)

// replicaGroup is one replica type of a job as a test expects it.
type replicaGroup struct {
	typ      string
	replicas int
	port     int
}

func totalReplicas(groups []replicaGroup) int {
	n := 0
	for _, g := range groups {
		n += g.replicas
	}
	return n
}

// applyExample applies artifacts/examples/<file> in the test's namespace.
func applyExample(f *framework.Framework, file string) {
	f.T.Helper()
	path := filepath.Join(f.Env.RepoRoot, "artifacts", "examples", file)
	if _, err := os.Stat(path); err != nil {
		f.T.Fatal(err)
	}
	f.MustKubectl("apply", "-f", path)
}

// TestExampleTensorFlowMultiWorker: workers only; worker 0 decides; clean-up
// All removes every pod once it succeeded.
func TestExampleTensorFlowMultiWorker(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-tf-mw")
	applyExample(f, "tensorflow-multiworker.yaml")
	ref := f.Ref(framework.KindTF, "mnist-multiworker")
	groups := []replicaGroup{{"worker", 3, 2222}}
	pods := f.WaitForRunningPods(ref, 3)
	job := f.MustGetJob(ref)
	checkReplicaPods(t, f, job, ref, groups, pods)
	checkTFConfig(t, f, ref, groups, pods)

	job = f.WaitForPhase(ref, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
	// cleanUpPolicy All: nothing is left.
	f.WaitForNoPods(ref, framework.Timeout)
}

// TestExampleTensorFlowPS: chief, parameter servers and workers, each with
// its own TF_CONFIG task; the chief decides.
func TestExampleTensorFlowPS(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-tf-ps")
	applyExample(f, "tensorflow-ps.yaml")
	ref := f.Ref(framework.KindTF, "mnist-ps")
	groups := []replicaGroup{{"chief", 1, 2222}, {"ps", 2, 2222}, {"worker", 4, 2222}}
	pods := f.WaitForRunningPods(ref, 7)
	job := f.MustGetJob(ref)
	checkReplicaPods(t, f, job, ref, groups, pods)
	checkTFConfig(t, f, ref, groups, pods)

	job = f.WaitForPhase(ref, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
	if d := job.CommonSpec().RunPolicy.ActiveDeadlineSeconds; d == nil || *d != 7200 {
		t.Errorf("activeDeadlineSeconds = %v, want 7200 from the manifest", d)
	}
}

// TestExamplePyTorchDDP: on a stack without the real node, the DDP example's
// pods run on kwok nodes with torchrun's environment; node 0 hosts the
// rendezvous. Where the real node runs, TestRealNodeTorchrunDDP trains it.
func TestExamplePyTorchDDP(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-pt-ddp")
	if f.Env.RealNode {
		t.Skip("the real node runs this example: TestRealNodeTorchrunDDP")
	}
	applyExample(f, "pytorch-ddp.yaml")
	ref := f.Ref(framework.KindPyTorch, "pytorch-ddp")
	groups := []replicaGroup{{"node", 2, 23456}}
	pods := f.WaitForRunningPods(ref, 2)
	job := f.MustGetJob(ref)
	checkReplicaPods(t, f, job, ref, groups, pods)
	// The example names no rendezvous: a job that is not elastic gets static.
	checkPyTorchEnv(t, ref, groups, pods, &torchrunEnv{procPerNode: "1", backend: "static", maxRestarts: "0"})

	job = f.WaitForPhase(ref, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
}

// TestExamplePyTorchTorchrun: without a master type, node 0 hosts the
// rendezvous; the training container runs torchrun with the job's options
// and the PET_* variables; every pod must succeed.
func TestExamplePyTorchTorchrun(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-pt-run")
	applyExample(f, "pytorch-torchrun.yaml")
	ref := f.Ref(framework.KindPyTorch, "llm-finetune")
	groups := []replicaGroup{{"node", 2, 23456}}
	pods := f.WaitForRunningPods(ref, 2)
	job := f.MustGetJob(ref)
	checkReplicaPods(t, f, job, ref, groups, pods)
	checkPyTorchEnv(t, ref, groups, pods, &torchrunEnv{procPerNode: "gpu", backend: "c10d", maxRestarts: "3"})

	master := fmt.Sprintf("node-0.llm-finetune.%s.svc", f.Namespace)
	template := job.CommonSpec().ReplicaSpecs[0].Template.Spec.Containers[0]
	for i := range pods {
		c := framework.TrainingContainer(ref.Kind, &pods[i])
		if len(c.Command) == 0 || c.Command[0] != "torchrun" {
			t.Errorf("pod %s command %q does not start with torchrun", pods[i].Name, c.Command)
			continue
		}
		for _, opt := range []string{
			"--nnodes=2", "--nproc-per-node=gpu", "--rdzv-backend=c10d",
			"--rdzv-endpoint=" + master + ":23456", "--rdzv-id=" + string(job.GetUID()),
			"--max-restarts=3", "--no-python",
		} {
			if !slices.Contains(c.Command, opt) {
				t.Errorf("pod %s: torchrun command %q lacks %s", pods[i].Name, c.Command, opt)
			}
		}
		// The program (the template's args, as there is no command) comes
		// last, after the options.
		if n := len(template.Args); len(c.Command) < n || !slices.Equal(c.Command[len(c.Command)-n:], template.Args) {
			t.Errorf("pod %s: torchrun command %q does not end with the template's program %q", pods[i].Name, c.Command, template.Args)
		}
		if len(c.Args) != 0 {
			t.Errorf("pod %s: args %q, want none (they are part of the torchrun command)", pods[i].Name, c.Args)
		}
		if v, _ := framework.EnvOf(c, "NCCL_DEBUG"); v != "WARN" {
			t.Errorf("pod %s: the template's NCCL_DEBUG is %q, want WARN", pods[i].Name, v)
		}
	}

	job = f.WaitForPhase(ref, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
}

// TestExampleDebugMode: a job created in debug mode runs the debug
// commands; pods that exit are recreated and never decide the outcome.
func TestExampleDebugMode(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-debug")
	applyExample(f, "debug-mode.yaml")
	ref := f.Ref(framework.KindPyTorch, "mnist-debug")
	pods := f.WaitForRunningPods(ref, 2)
	job := f.MustGetJob(ref)
	groups := []replicaGroup{{"master", 1, 23456}, {"worker", 1, 23456}}
	checkReplicaPods(t, f, job, ref, groups, pods)
	checkPyTorchEnv(t, ref, groups, pods, nil)
	checkDebugCommands(t, ref, pods, map[string][]string{
		"master": {"sleep", "inf"},
		"worker": {"sh", "-c", "env | grep -E '^(MASTER_|WORLD_SIZE|RANK)'; sleep inf"},
	})

	// The simulated containers exit 0 after 5s: the pods are recreated (in
	// debug mode again) and the job keeps running.
	first := map[string]types.UID{}
	for _, p := range pods {
		first[p.Name] = p.UID
	}
	pods = f.WaitForPods(ref, "recreated after the debug pods exited", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		if len(pods) != 2 {
			return false, nil
		}
		for _, p := range pods {
			if p.UID == first[p.Name] || p.Status.Phase != corev1.PodRunning {
				return false, nil
			}
		}
		return true, nil
	})
	checkDebugCommands(t, ref, pods, map[string][]string{
		"master": {"sleep", "inf"},
		"worker": {"sh", "-c", "env | grep -E '^(MASTER_|WORLD_SIZE|RANK)'; sleep inf"},
	})
	job = f.MustGetJob(ref)
	if st := job.JobStatus(); st.Phase.IsFinished() || framework.Condition(job, v1beta1.ConditionCompleted) != nil &&
		framework.Condition(job, v1beta1.ConditionCompleted).Status == metav1.ConditionTrue {
		t.Errorf("the debug job finished (phase %s) after its debug pods exited", st.Phase)
	}
	if st := job.JobStatus(); st.Phase != v1beta1.JobRunning {
		t.Errorf("phase %s in debug mode with every pod running, want Running", st.Phase)
	}
	if got := job.JobStatus().BackoffCount; got != 0 {
		t.Errorf("backoffCount %d: recreated debug pods count against backoffLimit", got)
	}
}

func checkDebugCommands(t *testing.T, ref framework.JobRef, pods []corev1.Pod, want map[string][]string) {
	t.Helper()
	for i := range pods {
		typ := pods[i].Labels[v1beta1.LabelReplicaType]
		c := framework.TrainingContainer(ref.Kind, &pods[i])
		if !slices.Equal(c.Command, want[typ]) || len(c.Args) != 0 {
			t.Errorf("debug pod %s runs %q %q, want %q without args", pods[i].Name, c.Command, c.Args, want[typ])
		}
		if m := pods[i].Annotations[v1beta1.GroupName+"/run-mode"]; m != "Debug" {
			t.Errorf("debug pod %s has run-mode annotation %q, want Debug", pods[i].Name, m)
		}
	}
}

// TestExamplePaused: a job created paused has its Service and no pods; on
// resume the workers start with their resumeSpec's args, the chief with its
// template, and the job then succeeds.
func TestExamplePaused(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-paused")
	applyExample(f, "paused.yaml")
	ref := f.Ref(framework.KindTF, "mnist-paused")
	f.WaitForPhase(ref, v1beta1.JobPaused)
	job := f.WaitForCondition(ref, v1beta1.ConditionPaused, metav1.ConditionTrue, "")
	checkService(t, f, job, ref, []replicaGroup{{"chief", 1, 2222}, {"worker", 2, 2222}})
	f.Consistently(3*time.Second, "a paused job has no pods and stays paused", func(ctx context.Context) error {
		pods, err := f.ListPods(ctx, ref)
		if err != nil {
			return err
		}
		if len(pods) != 0 {
			return fmt.Errorf("%d pods", len(pods))
		}
		job, err := f.GetJob(ctx, ref)
		if err != nil {
			return err
		}
		if p := job.JobStatus().Phase; p != v1beta1.JobPaused {
			return fmt.Errorf("phase %s", p)
		}
		return nil
	})

	f.MustAction(ref, "resume", "")
	pods := f.WaitForPods(ref, "3 pods after resume", framework.Timeout, func(pods []corev1.Pod) (bool, error) {
		return len(pods) == 3, nil
	})
	for i := range pods {
		c := framework.TrainingContainer(ref.Kind, &pods[i])
		want := []string{"/workspace/train.py", "--epochs=10"}
		if pods[i].Labels[v1beta1.LabelReplicaType] == "worker" {
			want = []string{"/workspace/train.py", "--epochs=10", "--resume-from=/checkpoints/latest"}
		}
		if !slices.Equal(c.Command, []string{"python"}) || !slices.Equal(c.Args, want) {
			t.Errorf("resumed pod %s runs %q %q, want [python] %q", pods[i].Name, c.Command, c.Args, want)
		}
	}
	job = f.WaitForPhase(ref, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
}

// TestExampleTensorBoard: the job gets a TensorBoard Deployment and Service
// owned by it; the scheduler settings are kept. The PVC the example names
// does not exist here, so only the objects are checked (the TensorBoard pod
// stays Pending).
func TestExampleTensorBoard(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "ex-tb")
	if f.KueueServed() {
		// The example names the queue "default": with Kueue, a LocalQueue.
		f.NewKueueQueue(nil, 1000, "default")
	}
	applyExample(f, "tensorboard-scheduler.yaml")
	ref := f.Ref(framework.KindTF, "mnist-tb")
	job := f.MustGetJob(ref)
	if s := job.CommonSpec().Scheduler; s == nil || s.T9kScheduler == nil || s.T9kScheduler.Queue != "default" || s.T9kScheduler.Priority != 50 {
		t.Errorf("scheduler %+v, want queue default, priority 50", s)
	}
	deploy, svc := waitForTensorBoard(f, ref)
	if c := deploy.Spec.Template.Spec.Containers; len(c) == 0 || c[0].Image != "docker.io/tensorflow/tensorflow:2.16.1" {
		t.Errorf("TensorBoard containers %+v, want image docker.io/tensorflow/tensorflow:2.16.1", c)
	}
	var claims []string
	for _, v := range deploy.Spec.Template.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims = append(claims, v.PersistentVolumeClaim.ClaimName)
		}
	}
	if !slices.Equal(claims, []string{"mnist-logs"}) {
		t.Errorf("TensorBoard mounts PVCs %q, want [mnist-logs] once", claims)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 6006 {
		t.Errorf("TensorBoard Service ports %+v, want 6006", svc.Spec.Ports)
	}
	for _, o := range []metav1.Object{deploy, svc} {
		checkOwnedByJob(t, job, ref.Kind, o)
	}

	pods := f.WaitForRunningPods(ref, 2)
	checkTFConfig(t, f, ref, []replicaGroup{{"worker", 2, 2222}}, pods)
	job = f.WaitForPhase(ref, v1beta1.JobSucceeded)
	checkSucceeded(t, job)
	if tb := job.JobStatus().Tensorboard; tb == nil || tb.Name != "mnist-tb-tensorboard" && (tb.Dependent == nil || tb.Dependent.Name != "mnist-tb-tensorboard") {
		t.Errorf("status.tensorboard %+v does not report mnist-tb-tensorboard", tb)
	}
}

// waitForTensorBoard waits for the job's TensorBoard Deployment and Service.
func waitForTensorBoard(f *framework.Framework, ref framework.JobRef) (deploy *appsv1.Deployment, svc *corev1.Service) {
	f.T.Helper()
	name := ref.Name + "-tensorboard"
	f.Eventually(framework.Timeout, "TensorBoard Deployment and Service "+name, func(ctx context.Context) (bool, error) {
		d, err := f.Kube.AppsV1().Deployments(ref.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		s, err := f.Kube.CoreV1().Services(ref.Namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		deploy, svc = d, s
		return true, nil
	})
	return deploy, svc
}

// checkSucceeded checks the conditions of a Succeeded job.
func checkSucceeded(t *testing.T, job v1beta1.TrainingJob) {
	t.Helper()
	if !framework.HasCondition(job, v1beta1.ConditionCompleted, metav1.ConditionTrue, "Succeeded") {
		t.Errorf("%s: condition Completed %+v, want True with reason Succeeded", job.GetName(), framework.Condition(job, v1beta1.ConditionCompleted))
	}
	if c := framework.Condition(job, v1beta1.ConditionFailed); c != nil && c.Status == metav1.ConditionTrue {
		t.Errorf("%s: succeeded job has condition Failed %+v", job.GetName(), c)
	}
	st := job.JobStatus()
	if st.CompletionTime == nil || st.StartTime == nil || st.CompletionTime.Before(st.StartTime) {
		t.Errorf("%s: startTime %v, completionTime %v", job.GetName(), st.StartTime, st.CompletionTime)
	}
}

// checkOwnedByJob checks the object's controller reference names the job.
func checkOwnedByJob(t *testing.T, job v1beta1.TrainingJob, kind framework.Kind, o metav1.Object) {
	t.Helper()
	ref := metav1.GetControllerOf(o)
	if ref == nil {
		t.Errorf("%s has no controller reference", o.GetName())
		return
	}
	if ref.UID != job.GetUID() || ref.Name != job.GetName() || ref.APIVersion != v1beta1.SchemeGroupVersion.String() ||
		ref.Kind != string(kind) || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("%s: controller reference %+v does not point at %s (uid %s) with blockOwnerDeletion", o.GetName(), ref, job.GetName(), job.GetUID())
	}
	if o.GetLabels()[v1beta1.LabelJobName] != job.GetName() {
		t.Errorf("%s: labels %v lack %s=%s", o.GetName(), o.GetLabels(), v1beta1.LabelJobName, job.GetName())
	}
}

// checkReplicaPods checks names, hostnames, labels, owner and restart policy
// of a job's pods, and its headless Service.
func checkReplicaPods(t *testing.T, f *framework.Framework, job v1beta1.TrainingJob, ref framework.JobRef, groups []replicaGroup, pods []corev1.Pod) {
	t.Helper()
	if len(pods) != totalReplicas(groups) {
		t.Fatalf("%d pods, want %d", len(pods), totalReplicas(groups))
	}
	byName := map[string]*corev1.Pod{}
	for i := range pods {
		byName[pods[i].Name] = &pods[i]
	}
	for _, g := range groups {
		for i := 0; i < g.replicas; i++ {
			name := fmt.Sprintf("%s-%s-%d", ref.Name, g.typ, i)
			p := byName[name]
			if p == nil {
				t.Errorf("no pod %s among %v", name, keys(byName))
				continue
			}
			if host := fmt.Sprintf("%s-%d", g.typ, i); p.Spec.Hostname != host || p.Spec.Subdomain != ref.Name {
				t.Errorf("pod %s: hostname %q subdomain %q, want %q and %q", name, p.Spec.Hostname, p.Spec.Subdomain, host, ref.Name)
			}
			want := map[string]string{
				v1beta1.LabelJobName:      ref.Name,
				v1beta1.LabelJobKind:      string(ref.Kind),
				v1beta1.LabelReplicaType:  g.typ,
				v1beta1.LabelReplicaIndex: strconv.Itoa(i),
			}
			for k, v := range want {
				if p.Labels[k] != v {
					t.Errorf("pod %s: label %s=%q, want %q", name, k, p.Labels[k], v)
				}
			}
			ctrl := metav1.GetControllerOf(p)
			if ctrl == nil || ctrl.UID != job.GetUID() || ctrl.Kind != string(ref.Kind) || ctrl.Name != ref.Name ||
				ctrl.APIVersion != v1beta1.SchemeGroupVersion.String() {
				t.Errorf("pod %s: controller reference %+v, want %s %s uid %s", name, ctrl, ref.Kind, ref.Name, job.GetUID())
			}
			if p.Spec.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("pod %s: restartPolicy %s, want Never", name, p.Spec.RestartPolicy)
			}
		}
	}
	checkService(t, f, job, ref, groups)
}

// checkService checks the job's one headless Service. The only other
// Service carrying the job's labels may be its TensorBoard's.
func checkService(t *testing.T, f *framework.Framework, job v1beta1.TrainingJob, ref framework.JobRef, groups []replicaGroup) {
	t.Helper()
	svcs, err := f.Kube.CoreV1().Services(ref.Namespace).List(f.Context(), metav1.ListOptions{LabelSelector: framework.JobSelector(ref)})
	if err != nil {
		t.Fatal(err)
	}
	var svc *corev1.Service
	var names []string
	for i := range svcs.Items {
		s := &svcs.Items[i]
		names = append(names, s.Name)
		switch s.Name {
		case ref.Name:
			svc = s
		case ref.Name + "-tensorboard":
			if job.CommonSpec().TensorboardSpec == nil {
				t.Errorf("service %s exists, but the job has no tensorboardSpec", s.Name)
			}
		default:
			t.Errorf("service %s carries the labels of %s: the job must have one Service", s.Name, ref)
		}
	}
	if svc == nil {
		t.Fatalf("services of %s: %q, no %s", ref, names, ref.Name)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		t.Errorf("service %s: clusterIP %q publishNotReadyAddresses %v, want None and true", svc.Name, svc.Spec.ClusterIP, svc.Spec.PublishNotReadyAddresses)
	}
	if svc.Spec.Selector[v1beta1.LabelJobName] != ref.Name {
		t.Errorf("service %s: selector %v does not select the job's pods", svc.Name, svc.Spec.Selector)
	}
	ports := map[int32]bool{}
	for _, p := range svc.Spec.Ports {
		ports[p.Port] = true
	}
	for _, g := range groups {
		if !ports[int32(g.port)] {
			t.Errorf("service %s: ports %+v lack %d", svc.Name, svc.Spec.Ports, g.port)
		}
	}
	checkOwnedByJob(t, job, ref.Kind, svc)
}

func keys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// address is a replica's DNS name and port.
func address(ref framework.JobRef, typ string, i, port int) string {
	return fmt.Sprintf("%s-%d.%s.%s.svc:%d", typ, i, ref.Name, ref.Namespace, port)
}

// checkTFConfig parses every pod's TF_CONFIG.
func checkTFConfig(t *testing.T, f *framework.Framework, ref framework.JobRef, groups []replicaGroup, pods []corev1.Pod) {
	t.Helper()
	cluster := map[string][]string{}
	for _, g := range groups {
		if g.typ == "evaluator" {
			continue
		}
		for i := 0; i < g.replicas; i++ {
			cluster[g.typ] = append(cluster[g.typ], address(ref, g.typ, i, g.port))
		}
	}
	for i := range pods {
		p := &pods[i]
		raw, ok := f.ContainerEnv(p, framework.TrainingContainer(ref.Kind, p))["TF_CONFIG"]
		if !ok {
			t.Errorf("pod %s has no TF_CONFIG", p.Name)
			continue
		}
		var cfg struct {
			Cluster map[string][]string `json:"cluster"`
			Task    struct {
				Type  string `json:"type"`
				Index *int   `json:"index"`
			} `json:"task"`
			Environment string `json:"environment"`
		}
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Errorf("pod %s: TF_CONFIG %q: %v", p.Name, raw, err)
			continue
		}
		if len(cfg.Cluster) != len(cluster) {
			t.Errorf("pod %s: TF_CONFIG cluster %v, want %v", p.Name, cfg.Cluster, cluster)
		}
		for typ, addrs := range cluster {
			if !slices.Equal(cfg.Cluster[typ], addrs) {
				t.Errorf("pod %s: TF_CONFIG cluster[%s] = %q, want %q", p.Name, typ, cfg.Cluster[typ], addrs)
			}
		}
		wantType, wantIndex := p.Labels[v1beta1.LabelReplicaType], p.Labels[v1beta1.LabelReplicaIndex]
		if cfg.Task.Type != wantType || cfg.Task.Index == nil || strconv.Itoa(*cfg.Task.Index) != wantIndex {
			t.Errorf("pod %s: TF_CONFIG task %+v, want type %s index %s", p.Name, cfg.Task, wantType, wantIndex)
		}
		if cfg.Environment != "cloud" {
			t.Errorf("pod %s: TF_CONFIG environment %q, want cloud", p.Name, cfg.Environment)
		}
	}
}

// torchrunEnv is what a job's torchrunConfig should hand torchrun through
// the PET_* variables.
type torchrunEnv struct {
	procPerNode, backend, maxRestarts string
}

// checkPyTorchEnv checks the torch.distributed variables of every pod: the
// master is the first replica of the master type if there is one, else of
// the first type; ranks follow the list order. torchrun is nil for a job
// that does not start torchrun, which must get no PET_* variable.
func checkPyTorchEnv(t *testing.T, ref framework.JobRef, groups []replicaGroup, pods []corev1.Pod, torchrun *torchrunEnv) {
	t.Helper()
	ordered := slices.Clone(groups)
	for i, g := range ordered {
		if g.typ == "master" {
			ordered = append([]replicaGroup{g}, append(ordered[:i:i], ordered[i+1:]...)...)
			break
		}
	}
	master := ordered[0]
	masterAddr := fmt.Sprintf("%s-0.%s.%s.svc", master.typ, ref.Name, ref.Namespace)
	rank := map[string]int{}
	r := 0
	for _, g := range ordered {
		for i := 0; i < g.replicas; i++ {
			rank[fmt.Sprintf("%s-%s-%d", ref.Name, g.typ, i)] = r
			r++
		}
	}
	total := strconv.Itoa(totalReplicas(groups))
	for i := range pods {
		p := &pods[i]
		c := framework.TrainingContainer(ref.Kind, p)
		want := map[string]string{
			"MASTER_ADDR":      masterAddr,
			"MASTER_PORT":      strconv.Itoa(master.port),
			"WORLD_SIZE":       total,
			"RANK":             strconv.Itoa(rank[p.Name]),
			"PYTHONUNBUFFERED": "1",
		}
		if torchrun != nil {
			want["PET_NNODES"] = total
			want["PET_NODE_RANK"] = strconv.Itoa(rank[p.Name])
			want["PET_NPROC_PER_NODE"] = torchrun.procPerNode
			want["PET_MASTER_ADDR"] = masterAddr
			want["PET_MASTER_PORT"] = strconv.Itoa(master.port)
			want["PET_RDZV_BACKEND"] = torchrun.backend
			want["PET_MAX_RESTARTS"] = torchrun.maxRestarts
		}
		for k, v := range want {
			if got, ok := framework.EnvOf(c, k); !ok || got != v {
				t.Errorf("pod %s: %s=%q (set: %v), want %q", p.Name, k, got, ok, v)
			}
		}
		if torchrun == nil {
			if _, ok := framework.EnvOf(c, "PET_NNODES"); ok {
				t.Errorf("pod %s has PET_NNODES without torchrun", p.Name)
			}
		}
	}
}
