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
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/e2e/framework"
)

// The tests of this file check, through kube-apiserver and real RBAC, which
// action needs which right (issue 24): pause, resume and debug with the
// default command need only their subresource; a debug command of the
// caller's choosing and template or replica-count edits need create on pods.
//
// Each allowed request follows at once a refusal of the same user. Refusals
// by RBAC come from kube-apiserver; refusals naming pods come from the
// training-apiserver's admission, whose delegated authorizer caches the
// denied SubjectAccessReview: neither may leak into the next request.

var debugCommand = []string{"sh", "-c", "echo hi; sleep 3600"}

// customDebugBody debugs the workers with debugCommand.
const customDebugBody = `{"kind":"DebugRequest","apiVersion":"batch.tensorstack.dev/v1beta1",` +
	`"replicaSpecs":[{"type":"worker","command":["sh","-c","echo hi; sleep 3600"]}]}`

// tfSubresourceRule grants create on a subresource of TensorFlow jobs.
func tfSubresourceRule(subresources ...string) rbacv1.PolicyRule {
	rule := rbacv1.PolicyRule{APIGroups: []string{v1beta1.GroupName}, Verbs: []string{"create"}}
	for _, s := range subresources {
		rule.Resources = append(rule.Resources, v1beta1.TensorFlowTrainingJobResource+"/"+s)
	}
	return rule
}

var createPodsRule = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"create"}}

// bindRole gives user a Role of its own, named after the user, in the
// test's namespace.
func bindRole(f *framework.Framework, user string, rules ...rbacv1.PolicyRule) {
	f.T.Helper()
	ctx := f.Context()
	if _, err := f.Kube.RbacV1().Roles(f.Namespace).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules,
	}, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	if _, err := f.Kube.RbacV1().RoleBindings(f.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

// waitUntilUserReads waits until RBAC lets user get the job: the Role
// reached the authorizers. It polls a read, so no denial of the actions
// under test is ever cached.
func waitUntilUserReads(f *framework.Framework, user string, ref framework.JobRef) {
	f.T.Helper()
	f.Eventually(framework.Timeout, user+" reads "+ref.Name, func(context.Context) (bool, error) {
		r := framework.RunKubectl(context.Background(), framework.KubectlTimeout, "",
			"-n", f.Namespace, "--as="+user, "get", "tj", ref.Name, "-o", "name")
		return r.Err == nil, nil
	})
}

// wantForbidden checks that kubectl was refused with 403.
func wantForbidden(t *testing.T, r framework.KubectlResult) {
	t.Helper()
	if r.Err == nil || !strings.Contains(strings.ToLower(r.Stderr), "forbidden") {
		t.Errorf("want forbidden, got %s", r)
	}
}

// wantPodsRefused checks that a request was refused by
// TrainingJobPodAuthorization: 403 naming create on pods.
func wantPodsRefused(t *testing.T, what string, forbidden bool, msg, user string) {
	t.Helper()
	if !forbidden || !strings.Contains(msg, fmt.Sprintf(`User %q cannot create resource "pods"`, user)) ||
		!strings.Contains(msg, "would create pods") {
		t.Errorf("%s: want 403 naming create on pods, got: %s", what, msg)
		return
	}
	t.Logf("%s refused: %s", what, strings.TrimSpace(msg))
}

// mustSucceed fails the test unless kubectl exited 0.
func mustSucceed(t *testing.T, what string, r framework.KubectlResult) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("%s: %s", what, r)
	}
}

// runsCommand says whether the job has one running pod, not one of old,
// whose training container runs command.
func runsCommand(ref framework.JobRef, old []corev1.Pod, command []string) func([]corev1.Pod) (bool, error) {
	replaced := allReplaced(podUIDs(old), 1)
	return func(pods []corev1.Pod) (bool, error) {
		if ok, err := replaced(pods); !ok || err != nil {
			return ok, err
		}
		return slices.Equal(framework.TrainingContainer(ref.Kind, &pods[0]).Command, command), nil
	}
}

// TestActionRBACPauseResume: a pause-only user pauses a running job and a
// job debugged with a custom command (issue 24); a resume-only user resumes
// a paused and a debugged job. Neither may edit the job or take the other
// action.
func TestActionRBACPauseResume(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "action-rbac")
	const pauser, resumer = "pauser-24", "resumer-24"
	running := f.Create(framework.NewTFJob("running").WithReplicas("worker", 1))
	debugged := f.Create(framework.NewTFJob("debugged").WithReplicas("worker", 1))
	bindRole(f, pauser, viewJobsRule, tfSubresourceRule("pause"))
	bindRole(f, resumer, viewJobsRule, tfSubresourceRule("resume"))

	// The admin debugs one job with a command of its choosing.
	pods := f.WaitForRunningPods(debugged, 1)
	f.MustAction(debugged, "debug", customDebugBody)
	f.WaitForPods(debugged, "a running pod with the debug command", framework.Timeout, runsCommand(debugged, pods, debugCommand))
	f.WaitForRunningPods(running, 1)
	waitUntilUserReads(f, pauser, running)
	waitUntilUserReads(f, resumer, running)

	editor := f.WriteFile("editor.sh", fmt.Sprintf("#!/bin/sh\nsed -i 's#image: %s#image: busybox:edited#' \"$1\"\n", framework.Image))
	refuseEdits := func(user string, ref framework.JobRef) {
		t.Helper()
		as := "--as=" + user
		wantForbidden(t, f.KubectlNS(as, "patch", "tj", ref.Name, "--type=merge", "-p", `{"spec":{"runPolicy":{"backoffLimit":9}}}`))
		wantForbidden(t, f.KubectlEnv([]string{"KUBE_EDITOR=sh " + editor}, as, "edit", ref.KubectlName()))
		wantForbidden(t, f.KubectlNS(as, "label", "tj", ref.Name, "owner="+user))
	}

	as := "--as=" + pauser
	refuseEdits(pauser, running)
	mustSucceed(t, "pause by the pause-only user right after refused edits", f.Action(running, "pause", "", as))
	wantForbidden(t, f.Action(running, "resume", "", as))
	mustSucceed(t, "pause of a job in debug mode by the pause-only user", f.Action(debugged, "pause", "", as))
	for _, ref := range []framework.JobRef{running, debugged} {
		job := f.WaitForPhase(ref, v1beta1.JobPaused)
		if !pauseEnabled(job) || debugEnabled(job) {
			t.Errorf("%s: runMode %+v after the pause, want pause on and debug off", ref, job.CommonSpec().RunMode)
		}
	}

	// The admin debugs the paused job again, for the resume-only user.
	f.MustAction(debugged, "debug", customDebugBody)
	pods = f.WaitForPods(debugged, "a running pod with the debug command", framework.Timeout, runsCommand(debugged, nil, debugCommand))

	as = "--as=" + resumer
	refuseEdits(resumer, running)
	mustSucceed(t, "resume of a paused job by the resume-only user right after refused edits", f.Action(running, "resume", "", as))
	wantForbidden(t, f.Action(debugged, "pause", "", as))
	mustSucceed(t, "resume of a job in debug mode by the resume-only user", f.Action(debugged, "resume", "", as))
	wantForbidden(t, f.Action(running, "pause", "", as))

	f.WaitForPods(debugged, "a running pod with the training command", framework.Timeout,
		runsCommand(debugged, pods, []string{"python", "/workspace/train.py"}))
	for _, ref := range []framework.JobRef{running, debugged} {
		job := f.WaitForPhase(ref, v1beta1.JobRunning)
		if pauseEnabled(job) || debugEnabled(job) {
			t.Errorf("%s: runMode %+v after the resume, want pause and debug off", ref, job.CommonSpec().RunMode)
		}
		limit := job.CommonSpec().RunPolicy.BackoffLimit
		if _, ok := job.GetLabels()["owner"]; ok || limit != nil && *limit == 9 ||
			job.CommonSpec().ReplicaSpecs[0].Template.Spec.Containers[0].Image != framework.Image {
			t.Errorf("%s: a refused edit changed the job: labels %v, runPolicy %+v", ref, job.GetLabels(), job.CommonSpec().RunPolicy)
		}
	}
}

// TestActionRBACDebug: a debug-only user may debug with the default command
// but not with one of its choosing; once also granted create on pods, with
// both.
func TestActionRBACDebug(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "debug-rbac")
	const debugger = "debugger-24"
	ref := f.Create(framework.NewTFJob("debuggable").WithReplicas("worker", 1))
	bindRole(f, debugger, viewJobsRule, tfSubresourceRule("debug"))
	// The debugger authenticates with a client certificate.
	cs, err := clientset.NewForConfig(f.UserConfig(debugger))
	if err != nil {
		t.Fatal(err)
	}
	jobs := cs.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace)
	ctx := f.Context()
	custom := &v1beta1.DebugRequest{ReplicaSpecs: []v1beta1.ReplicaDebugSpec{{Type: v1beta1.ReplicaTypeWorker, Command: debugCommand}}}
	pods := f.WaitForRunningPods(ref, 1)
	waitUntilUserReads(f, debugger, ref)

	_, err = jobs.Debug(ctx, ref.Name, custom, metav1.CreateOptions{})
	wantPodsRefused(t, "custom debug command without the pods right", apierrors.IsForbidden(err), fmt.Sprint(err), debugger)
	if debugEnabled(f.MustGetJob(ref)) {
		t.Fatalf("a refused debug request switched debug mode on")
	}
	// Right after the admission's denial of create on pods.
	job, err := jobs.Debug(ctx, ref.Name, &v1beta1.DebugRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("debug with the default command by the debug-only user: %v", err)
	}
	if !debugEnabled(job) {
		t.Errorf("runMode %+v after the debug request, want debug on", job.Spec.RunMode)
	}
	f.WaitForPods(ref, "a running pod with the default debug command", framework.Timeout,
		runsCommand(ref, pods, v1beta1.DefaultDebugCommand))
	_, err = jobs.Debug(ctx, ref.Name, custom, metav1.CreateOptions{})
	wantPodsRefused(t, "custom debug command from default debug mode", apierrors.IsForbidden(err), fmt.Sprint(err), debugger)

	roles := f.Kube.RbacV1().Roles(f.Namespace)
	role, err := roles.Get(ctx, debugger, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, createPodsRule)
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The grant reaches kube-apiserver's RBAC through informers, and the
	// training-apiserver's cached denial of create on pods expires: a dry
	// run polls without changing the job.
	f.Eventually(framework.Timeout, "a dry run of the custom debug command to be allowed", func(ctx context.Context) (bool, error) {
		_, err := jobs.Debug(ctx, ref.Name, custom, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil, err
	})
	job, err = jobs.Debug(ctx, ref.Name, custom, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("custom debug command with the pods right: %v", err)
	}
	if specs := job.Spec.RunMode.Debug.ReplicaSpecs; len(specs) != 1 || !slices.Equal(specs[0].Command, debugCommand) {
		t.Errorf("debug replicaSpecs %+v, want the worker with %q", specs, debugCommand)
	}
	// A debug pod keeps running with the command it started with (the
	// controller replaces pods on a change of run mode only): the spec
	// shows what was allowed.
	job, err = jobs.Debug(ctx, ref.Name, &v1beta1.DebugRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("debug with the default command with the pods right: %v", err)
	}
	if specs := job.Spec.RunMode.Debug.ReplicaSpecs; !debugEnabled(job) || len(specs) != 0 {
		t.Errorf("debug replicaSpecs %+v, want none (the default command)", specs)
	}
}

// TestActionRBACTemplateEdits: a user who may edit jobs and take every
// action, but not create pods, cannot change a template or a replica count
// (as before issue 24's fix) nor debug with a command of its choosing, and
// still may do everything else right after such a refusal.
func TestActionRBACTemplateEdits(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "edit-rbac")
	const editor = "editor-24"
	ref := f.Create(framework.NewTFJob("paused").WithReplicas("worker", 1).Paused())
	bindRole(f, editor,
		rbacv1.PolicyRule{APIGroups: []string{v1beta1.GroupName}, Resources: []string{v1beta1.TensorFlowTrainingJobResource},
			Verbs: []string{"get", "list", "watch", "update", "patch"}},
		tfSubresourceRule("pause", "resume", "debug"))
	f.WaitForPhase(ref, v1beta1.JobPaused)
	waitUntilUserReads(f, editor, ref)
	as := "--as=" + editor

	// Templates and counts may change while paused: only the pods right
	// is missing.
	image := fmt.Sprintf(`{"spec":{"replicaSpecs":[{"type":"worker","template":{"spec":{"containers":[{"name":%q,"image":"busybox:evil"}]}}}]}}`,
		ref.Kind.ContainerName())
	r := f.KubectlNS(as, "patch", "tj", ref.Name, "-p", image)
	wantPodsRefused(t, "template edit", r.Err != nil && strings.Contains(r.Stderr, "Forbidden"), r.Stderr, editor)
	r = f.KubectlNS(as, "patch", "tj", ref.Name, "--type=json", "-p", `[{"op":"replace","path":"/spec/replicaSpecs/0/replicas","value":2}]`)
	wantPodsRefused(t, "replica count change", r.Err != nil && strings.Contains(r.Stderr, "Forbidden"), r.Stderr, editor)
	mustSucceed(t, "label edit right after refused template edits", f.KubectlNS(as, "label", "tj", ref.Name, "team=vision"))
	mustSucceed(t, "resume right after refused template edits", f.Action(ref, "resume", "", as))
	pods := f.WaitForRunningPods(ref, 1)
	if c := framework.TrainingContainer(ref.Kind, &pods[0]); c.Image != framework.Image {
		t.Errorf("the resumed pod runs image %q, want the template's %q", c.Image, framework.Image)
	}

	r = f.Action(ref, "debug", customDebugBody, as)
	wantPodsRefused(t, "custom debug command", r.Err != nil && strings.Contains(r.Stderr, "Forbidden"), r.Stderr, editor)
	mustSucceed(t, "pause right after a refused debug command", f.Action(ref, "pause", "", as))
	job := f.WaitForPhase(ref, v1beta1.JobPaused)
	if debugEnabled(job) || job.GetLabels()["team"] != "vision" || *job.CommonSpec().ReplicaSpecs[0].Replicas != 1 {
		t.Errorf("job after the pause: labels %v, runMode %+v, replicas %d; want the label, no debug and 1 replica",
			job.GetLabels(), job.CommonSpec().RunMode, *job.CommonSpec().ReplicaSpecs[0].Replicas)
	}
}
