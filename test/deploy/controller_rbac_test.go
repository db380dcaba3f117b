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

package deploy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
	"tensorstack.dev/training/test/deploy/rbaccheck"
)

// finalizersResources are the rule the controller needs only where the
// OwnerReferencesPermissionEnforcement admission plugin runs: no request
// uses it, so the audit log cannot show it; TestControllerRoleIsLeastPrivilege
// shows it is needed another way.
var finalizersResources = func() []string {
	var out []string
	for _, k := range batch.Kinds {
		out = append(out, k.Resource+"/finalizers")
	}
	return out
}()

// TestControllerRoleIsLeastPrivilege drives the controller, running as its
// ServiceAccount with the RBAC of artifacts/deploy/base, through everything
// it does (jobs that finish and expire, pausing, adoption of orphans, name
// conflicts, TensorBoard created, changed and removed), then reads
// kube-apiserver's audit log:
//   - no request of the controller was refused (a missing rule);
//   - every (group, resource, verb) of its ClusterRole and leader-election
//     Role was used by at least one allowed request (a rule too many).
//
// The stack's informers list and then watch (KUBE_FEATURE_WatchListClient=false,
// set by hack/verify-deploy.sh), as they do against servers without
// streaming lists; with streaming lists they need watch only, a subset.
//
// The rest of the suite can call rbaccheck the same way after its own
// scenarios (see the package documentation of rbaccheck).
func TestControllerRoleIsLeastPrivilege(t *testing.T) {
	e := clusterEnv(t)
	if e.auditLog == "" {
		t.Skip("the stack writes no audit log of the controller (start it with hack/verify-deploy.sh)")
	}
	ctx := context.Background()
	c := e.clients(t)
	base := e.render(t, overlayByName(t, "base"))
	clusterRole := mustGet[rbacv1.ClusterRole](t, base, "ClusterRole", "", controllerRoleName)
	role := mustGet[rbacv1.Role](t, base, "Role", systemNamespace, leaderElectionRole)

	// The controller must be acting as its ServiceAccount.
	if err := eventually(ctx, 60*time.Second, time.Second, func(context.Context) (bool, error) {
		reqs, err := rbaccheck.ReadAuditLog(e.auditLog)
		return slices.ContainsFunc(reqs, func(r rbaccheck.Request) bool {
			return r.User == controllerUser && r.Resource == "tensorflowtrainingjobs" && r.Verb == "watch"
		}), err
	}); err != nil {
		t.Fatalf("no request of %s in %s: is the controller running as its ServiceAccount? %v", controllerUser, e.auditLog, err)
	}

	ns := "deploy-ctrl-" + rand.String(5)
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	if err := eventually(ctx, 30*time.Second, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := c.kube.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("no default ServiceAccount in %s: %v", ns, err)
	}

	s := &scenarios{t: t, c: c, ns: ns}
	start := time.Now()
	t.Run("finish-and-expire", s.finishAndExpire)
	t.Run("pause", s.pause)
	t.Run("adopt-orphans", s.adoptOrphans)
	t.Run("name-conflicts", s.nameConflicts)
	t.Run("tensorboard", s.tensorBoard)
	t.Run("stall", s.stall)
	t.Run("tuning", s.tuning)
	backends := gangBackends()
	if len(backends) > 0 {
		t.Run("gang", s.gang)
	}
	t.Logf("scenarios took %s", time.Since(start).Round(time.Millisecond))

	reqs, err := rbaccheck.ReadAuditLog(e.auditLog)
	if err != nil {
		t.Fatal(err)
	}
	own := 0
	for _, r := range reqs {
		if r.User == controllerUser {
			own++
		}
	}
	t.Logf("%d audited requests of %s", own, controllerUser)
	for _, f := range rbaccheck.Forbidden(reqs, controllerUser) {
		t.Errorf("the controller was refused (a rule is missing): %s", f)
	}
	if t.Failed() {
		// A scenario that did not finish leaves rules unused.
		t.FailNow()
	}

	var walked []rbacv1.PolicyRule
	finalizerRules := 0
	for _, rule := range clusterRole.Rules {
		if slices.Equal(rule.Resources, finalizersResources) {
			finalizerRules++
			continue
		}
		// The training-apiserver checks this rule with a SubjectAccessReview
		// of its own when a trial names a runtime; the tuning scenario shows
		// it is needed (its trials from runtimes are created).
		if slices.Equal(rule.Resources, runtimeResources) {
			continue
		}
		if backend, isGang := gangBackendOfRule(rule); isGang && !slices.Contains(backends, backend) {
			t.Logf("not walked: %v of %v, for the gang scheduling backend %s, which this stack's controller did not run", rule.Verbs, rule.Resources, backend)
			continue
		}
		walked = append(walked, rule)
	}
	if finalizerRules != 1 {
		t.Fatalf("expected exactly one rule on %v in ClusterRole %s", finalizersResources, controllerRoleName)
	}
	perms := append(rbaccheck.Expand(walked, ""), rbaccheck.Expand(role.Rules, role.Namespace)...)
	counts := rbaccheck.Used(perms, reqs, controllerUser)
	for _, p := range rbaccheck.Unused(perms, reqs, controllerUser) {
		t.Errorf("never used by the controller, remove it or add a scenario that needs it: %s", p)
	}
	var summary []string
	for _, p := range perms {
		summary = append(summary, fmt.Sprintf("%s=%d", p, counts[p]))
	}
	t.Logf("requests per permission: %s", strings.Join(summary, ", "))

	t.Run("finalizers", func(t *testing.T) { s.finalizersNeeded(t, clusterRole) })
}

// gangBackendGroups are the API groups of each gang scheduling backend's
// objects.
var gangBackendGroups = map[string]string{"workload": "scheduling.k8s.io", "coscheduling": "scheduling.x-k8s.io"}

// gangBackends are the gang scheduling backends the stack's controller ran
// while the audit log was written: hack/test-e2e.sh runs it on both,
// hack/verify-deploy.sh on the one its --gang-scheduler=auto picked.
func gangBackends() []string {
	return strings.Fields(os.Getenv("DEPLOY_GANG_BACKENDS"))
}

// gangBackendOfRule names the backend a rule of the controller's role is for.
func gangBackendOfRule(rule rbacv1.PolicyRule) (string, bool) {
	for backend, group := range gangBackendGroups {
		if slices.Equal(rule.APIGroups, []string{group}) {
			return backend, true
		}
	}
	return "", false
}

type scenarios struct {
	t  *testing.T
	c  *clients
	ns string
}

// kwok runs the pods: they terminate with the exit code of this annotation
// after the duration of the other one (hack/local/kwok-stages).
func podTemplate(container string, exitCode int, runFor string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			"kwok.tensorstack.dev/exit-code":    fmt.Sprint(exitCode),
			"kwok.tensorstack.dev/run-duration": runFor,
		}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: container, Image: "registry.example/train:1"}}},
	}
}

func tfJob(name string, runFor string) *v1beta1.TensorFlowTrainingJob {
	return &v1beta1.TensorFlowTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.TensorFlowTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: []v1beta1.ReplicaSpec{{Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To[int32](1),
				Template: podTemplate("tensorflow", 0, runFor)}},
		}},
	}
}

func ptJob(name string, runFor string) *v1beta1.PyTorchTrainingJob {
	return &v1beta1.PyTorchTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.PyTorchTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: []v1beta1.ReplicaSpec{{Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To[int32](1),
				Template: podTemplate("pytorch", 0, runFor)}},
		}},
	}
}

func xgbJob(name string, runFor string) *v1beta1.XGBoostTrainingJob {
	return &v1beta1.XGBoostTrainingJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.XGBoostTrainingJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: []v1beta1.ReplicaSpec{{Type: v1beta1.ReplicaTypeMaster, Replicas: ptr.To[int32](1),
				Template: podTemplate("xgboost", 0, runFor)}},
		}},
	}
}

func genericJob(name string, runFor string) *v1beta1.GenericJob {
	return &v1beta1.GenericJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.GenericJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: []v1beta1.ReplicaSpec{{Type: "coordinator", Replicas: ptr.To[int32](1),
				Template: podTemplate("main", 0, runFor)}},
		}},
	}
}

func mpiJob(name string, runFor string) *v1beta1.MPIJob {
	return &v1beta1.MPIJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.MPIJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
			ReplicaSpecs: []v1beta1.ReplicaSpec{
				{Type: v1beta1.ReplicaTypeLauncher, Replicas: ptr.To[int32](1), Template: podTemplate("main", 0, runFor)},
				{Type: v1beta1.ReplicaTypeWorker, Replicas: ptr.To[int32](1), Template: podTemplate("main", 0, "30s")},
			},
		}},
	}
}

func (s *scenarios) wait(what string, cond func(context.Context) (bool, error)) {
	s.t.Helper()
	if err := eventually(context.Background(), 90*time.Second, 250*time.Millisecond, cond); err != nil {
		s.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// finishAndExpire: jobs of every kind run, succeed, and are deleted by the
// controller once ttlSecondsAfterFinished passes. Pods, the headless
// Service, status updates, events and job deletion.
func (s *scenarios) finishAndExpire(t *testing.T) {
	s.t = t
	ctx := context.Background()
	tf := tfJob("tf-expire", "1s")
	tf.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	if _, err := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns).Create(ctx, tf, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pt := ptJob("pt-expire", "1s")
	pt.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	if _, err := s.c.jobs.BatchV1beta1().PyTorchTrainingJobs(s.ns).Create(ctx, pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	xgb := xgbJob("xgb-expire", "1s")
	xgb.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	if _, err := s.c.jobs.BatchV1beta1().XGBoostTrainingJobs(s.ns).Create(ctx, xgb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	generic := genericJob("generic-expire", "1s")
	generic.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	if _, err := s.c.jobs.BatchV1beta1().GenericJobs(s.ns).Create(ctx, generic, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// An MPI job also gets its SSH key pair Secret.
	mpi := mpiJob("mpi-expire", "1s")
	mpi.Spec.RunPolicy.TTLSecondsAfterFinished = ptr.To[int32](2)
	created, err := s.c.jobs.BatchV1beta1().MPIJobs(s.ns).Create(ctx, mpi, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.wait("mpi-expire's SSH key pair", func(ctx context.Context) (bool, error) {
		_, err := s.c.kube.CoreV1().Secrets(s.ns).Get(ctx, podbuilder.SSHSecretName(created), metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	s.wait("mpi-expire to succeed and be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.jobs.BatchV1beta1().MPIJobs(s.ns).Get(ctx, mpi.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	s.wait("generic-expire to succeed and be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.jobs.BatchV1beta1().GenericJobs(s.ns).Get(ctx, generic.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	s.wait("xgb-expire to succeed and be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.jobs.BatchV1beta1().XGBoostTrainingJobs(s.ns).Get(ctx, xgb.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	s.wait("tf-expire to succeed and be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns).Get(ctx, tf.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	s.wait("pt-expire to succeed and be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.jobs.BatchV1beta1().PyTorchTrainingJobs(s.ns).Get(ctx, pt.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
}

// pause: pausing a running job makes the controller delete its pods.
func (s *scenarios) pause(t *testing.T) {
	s.t = t
	ctx := context.Background()
	jobs := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns)
	if _, err := jobs.Create(ctx, tfJob("tf-pause", "1h"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := "tf-pause-worker-0"
	s.wait("the pod of tf-pause", func(ctx context.Context) (bool, error) {
		_, err := s.c.kube.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if _, err := jobs.Pause(ctx, "tf-pause", &v1beta1.PauseRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait("the pod of the paused job to be deleted", func(ctx context.Context) (bool, error) {
		p, err := s.c.kube.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && p.DeletionTimestamp != nil), ignoreNotFound(err)
	})
}

// stall: a job whose pods run without reporting progress past its
// deadline, under stallPolicy Fail: the controller reads the end of each
// replica's log into the status before it fails the job (pods/log).
func (s *scenarios) stall(t *testing.T) {
	s.t = t
	ctx := context.Background()
	jobs := s.c.jobs.BatchV1beta1().PyTorchTrainingJobs(s.ns)
	job := ptJob("pt-stall", "1h")
	job.Spec.RunPolicy.ProgressDeadlineSeconds = ptr.To[int64](1)
	job.Spec.RunPolicy.StallPolicy = v1beta1.StallPolicyFail
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait("pt-stall to fail as Stalled, its log tails kept", func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return j.Status.Phase == v1beta1.JobFailed && j.Status.Stall != nil && len(j.Status.Stall.Logs) == 1, nil
	})
}

// kueueLocalQueue makes, on a stack that runs Kueue, the LocalQueue a job
// names, in the stack's ClusterQueue "cluster-queue" (hack/local/kueue):
// the controller then queues the job with Kueue before it runs.
func (s *scenarios) kueueLocalQueue(ctx context.Context, name string) {
	s.t.Helper()
	if _, err := s.c.kube.Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2"); err != nil {
		return
	}
	lq := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": name, "namespace": s.ns},
		"spec":     map[string]any{"clusterQueue": "cluster-queue"},
	}}
	gvr := schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	if _, err := s.c.dynamic.Resource(gvr).Namespace(s.ns).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating LocalQueue %s: %v", name, err)
	}
}

// gang: a gang-scheduled job, resized while paused and then run to its
// end: the controller creates its group, patches it to the new size and
// deletes it when the job finishes.
func (s *scenarios) gang(t *testing.T) {
	s.t = t
	ctx := context.Background()
	jobs := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns)
	job := tfJob("tf-gang", "1h")
	job.Spec.ReplicaSpecs[0].Replicas = ptr.To[int32](2)
	job.Spec.Scheduler = &v1beta1.SchedulePolicy{T9kScheduler: &v1beta1.T9kScheduler{Queue: "default"}}
	s.kueueLocalQueue(ctx, "default")
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := "tf-gang-worker-1"
	s.wait("the pods of tf-gang", func(ctx context.Context) (bool, error) {
		_, err := s.c.kube.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	})
	if _, err := jobs.Pause(ctx, "tf-gang", &v1beta1.PauseRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait("the pods of the paused gang job to be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.kube.CoreV1().Pods(s.ns).Get(ctx, pod, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
	// One worker, which exits at once: the gang shrinks, then finishes.
	resize := []byte(`{"spec":{"replicaSpecs":[{"type":"worker","replicas":1,"template":{"metadata":{"annotations":{"kwok.tensorstack.dev/run-duration":"1s"}}}}]}}`)
	if _, err := jobs.Patch(ctx, "tf-gang", types.StrategicMergePatchType, resize, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := jobs.Resume(ctx, "tf-gang", &v1beta1.ResumeRequest{}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait("tf-gang to succeed and its group to be deleted", func(ctx context.Context) (bool, error) {
		j, err := jobs.Get(ctx, "tf-gang", metav1.GetOptions{})
		if err != nil || j.Status.Phase != v1beta1.JobSucceeded {
			return false, err
		}
		for _, backend := range gangBackends() {
			groups := schema.GroupVersionResource{Group: gangBackendGroups[backend], Version: "v1beta1", Resource: "podgroups"}
			if backend == "coscheduling" {
				groups.Version = "v1alpha1"
			}
			if _, err := s.c.dynamic.Resource(groups).Namespace(s.ns).Get(ctx, "tf-gang", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return false, ignoreNotFound(err)
			}
		}
		return true, nil
	})
}

// adoptOrphans: a pod and a Service that carry a job's labels but no owner
// are taken over: the controller re-reads the job (get) and patches them.
func (s *scenarios) adoptOrphans(t *testing.T) {
	s.t = t
	ctx := context.Background()
	orphans := func(name, kind, container string) {
		t.Helper()
		labels := map[string]string{v1beta1.LabelJobName: name, v1beta1.LabelJobKind: kind}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-worker-0", Labels: labels},
			Spec:       podTemplate(container, 0, "1h").Spec,
		}
		if _, err := s.c.kube.CoreV1().Pods(s.ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{v1beta1.LabelJobName: name},
				Ports: []corev1.ServicePort{{Name: "train", Port: 2222}}},
		}
		if _, err := s.c.kube.CoreV1().Services(s.ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	orphans("tf-adopt", "TensorFlowTrainingJob", "tensorflow")
	orphans("pt-adopt", "PyTorchTrainingJob", "pytorch")
	tf, err := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns).Create(ctx, tfJob("tf-adopt", "1h"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pt, err := s.c.jobs.BatchV1beta1().PyTorchTrainingJobs(s.ns).Create(ctx, ptJob("pt-adopt", "1h"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, job := range []metav1.Object{tf, pt} {
		s.wait("the orphans of "+job.GetName()+" to be adopted", func(ctx context.Context) (bool, error) {
			pod, err := s.c.kube.CoreV1().Pods(s.ns).Get(ctx, job.GetName()+"-worker-0", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			svc, err := s.c.kube.CoreV1().Services(s.ns).Get(ctx, job.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return controlledBy(pod, job) && controlledBy(svc, job), nil
		})
	}
}

// nameConflicts: a pod and a Service hold the names of a job's replica and
// Service without being the job's. The controller looks at them (get) and
// reports it, again at every retry: the event recorder patches the repeats.
func (s *scenarios) nameConflicts(t *testing.T) {
	s.t = t
	ctx := context.Background()
	name := "tf-conflict"
	if _, err := s.c.kube.CoreV1().Pods(s.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-worker-0"},
		Spec:       podTemplate("other", 0, "1h").Spec,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.kube.CoreV1().Services(s.ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "other", Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns).Create(ctx, tfJob(name, "1h"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.wait("repeated NameConflict events about the pod", func(ctx context.Context) (bool, error) {
		events, err := s.c.kube.CoreV1().Events(s.ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err
		}
		pod, svc := false, false
		for _, ev := range events.Items {
			if ev.Reason != "NameConflict" {
				continue
			}
			pod = pod || (strings.Contains(ev.Message, "Pod") && ev.Count >= 2)
			svc = svc || strings.Contains(ev.Message, "Service")
		}
		return pod && svc, nil
	})
}

// tensorBoard: created with the job, updated when the spec changes,
// removed when the spec drops it.
func (s *scenarios) tensorBoard(t *testing.T) {
	s.t = t
	ctx := context.Background()
	jobs := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns)
	job := tfJob("tf-board", "1h")
	job.Spec.TensorboardSpec = &v1beta1.TensorBoardSpec{
		Image:               "registry.example/tensorboard:1",
		TrainingLogFilesets: []string{"t9k://pvc/logs/train"},
	}
	if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dep := "tf-board-tensorboard"
	image := func(ctx context.Context) (string, error) {
		d, err := s.c.kube.AppsV1().Deployments(s.ns).Get(ctx, dep, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		return tensorBoardImage(d), nil
	}
	s.wait("the TensorBoard Deployment and Service", func(ctx context.Context) (bool, error) {
		if _, err := image(ctx); err != nil {
			return false, err
		}
		_, err := s.c.kube.CoreV1().Services(s.ns).Get(ctx, dep, metav1.GetOptions{})
		return err == nil, err
	})
	update := func(change func(*v1beta1.TensorFlowTrainingJob)) {
		t.Helper()
		if err := eventually(ctx, 30*time.Second, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
			cur, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			change(cur)
			_, err = jobs.Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(j *v1beta1.TensorFlowTrainingJob) {
		j.Spec.TensorboardSpec.Image = "registry.example/tensorboard:2"
	})
	s.wait("the TensorBoard Deployment to get the new image", func(ctx context.Context) (bool, error) {
		img, err := image(ctx)
		return img == "registry.example/tensorboard:2", err
	})
	update(func(j *v1beta1.TensorFlowTrainingJob) { j.Spec.TensorboardSpec = nil })
	s.wait("the TensorBoard Deployment and Service to be deleted", func(ctx context.Context) (bool, error) {
		_, err := s.c.kube.AppsV1().Deployments(s.ns).Get(ctx, dep, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, ignoreNotFound(err)
		}
		_, err = s.c.kube.CoreV1().Services(s.ns).Get(ctx, dep, metav1.GetOptions{})
		return apierrors.IsNotFound(err), ignoreNotFound(err)
	})
}

func tensorBoardImage(d *appsv1.Deployment) string {
	if cs := d.Spec.Template.Spec.Containers; len(cs) > 0 {
		return cs[0].Image
	}
	return ""
}

// finalizersNeeded: the controller's pods name their job as owner with
// blockOwnerDeletion=true. With OwnerReferencesPermissionEnforcement (on in
// this stack), creating such a pod needs update on the job's finalizers: the
// ServiceAccount can, a copy of its role without that rule cannot. Both
// attempts are dry runs, made by impersonation (rbaccheck does not count
// them as the controller's own requests).
func (s *scenarios) finalizersNeeded(t *testing.T, role *rbacv1.ClusterRole) {
	ctx := context.Background()
	job, err := s.c.jobs.BatchV1beta1().TensorFlowTrainingJobs(s.ns).Create(ctx, tfJob("tf-owner", "1h"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "owned-by-tf-owner",
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job,
				v1beta1.SchemeGroupVersion.WithKind("TensorFlowTrainingJob"))},
		},
		Spec: podTemplate("tensorflow", 0, "1h").Spec,
	}
	as := func(user string) kubernetes.Interface {
		cfg := rest.CopyConfig(s.c.config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
		return kubernetes.NewForConfigOrDie(cfg)
	}
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := as(controllerUser).CoreV1().Pods(s.ns).Create(ctx, pod, dryRun); err != nil {
		t.Fatalf("the controller's ServiceAccount cannot create a pod its job blocks the deletion of: %v", err)
	}

	const user = "deploy-test-controller-without-finalizers"
	weaker := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}}
	for _, rule := range role.Rules {
		if !slices.Equal(rule.Resources, finalizersResources) {
			weaker.Rules = append(weaker.Rules, rule)
		}
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	rbac := s.c.kube.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, weaker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
	if _, err := rbac.ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rbac.ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{}) })
	var last error
	if err := eventually(ctx, 30*time.Second, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, last = as(user).CoreV1().Pods(s.ns).Create(ctx, pod, dryRun)
		// Until the binding is seen, the refusal is about creating pods at all.
		return last != nil && strings.Contains(last.Error(), "blockOwnerDeletion"), nil
	}); err != nil {
		t.Fatalf("without update on %v, creating the pod should be refused for blockOwnerDeletion; last: %v", finalizersResources, last)
	}
	t.Logf("without the finalizers rule: %v", last)
}

func controlledBy(obj metav1.Object, owner metav1.Object) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner.GetUID()
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
