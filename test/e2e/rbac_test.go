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
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	clientset "tensorstack.dev/training/pkg/generated/clientset/versioned"
	"tensorstack.dev/training/test/e2e/framework"
)

var viewJobsRule = rbacv1.PolicyRule{
	APIGroups: []string{v1beta1.GroupName},
	Resources: []string{v1beta1.TensorFlowTrainingJobResource, v1beta1.PyTorchTrainingJobResource, v1beta1.XGBoostTrainingJobResource,
		v1beta1.GenericJobResource, v1beta1.MPIJobResource},
	Verbs: []string{"get", "list", "watch"},
}

// TestRBACThroughAggregator: a user bound to a Role that only reads jobs can
// list them but not pause them, until create on the pause subresource is
// granted; the grant covers pause only. Users are impersonated (alice,
// through kubectl --as) or authenticated with a client certificate signed
// by the cluster CA (bob, through the clientset).
func TestRBACThroughAggregator(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "rbac")
	ref := f.Create(framework.NewTFJob("guarded").WithReplicas("worker", 1))
	ctx := f.Context()
	roles := f.Kube.RbacV1().Roles(f.Namespace)
	_, err := roles.Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "job-viewer"},
		Rules:      []rbacv1.PolicyRule{viewJobsRule},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Kube.RbacV1().RoleBindings(f.Namespace).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "job-viewer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "job-viewer"},
		Subjects: []rbacv1.Subject{
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"},
			{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "bob"},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	as := "--as=alice"

	// RBAC reaches the authorizers through informers: wait for the binding.
	f.Eventually(framework.Timeout, "alice can list tj", func(context.Context) (bool, error) {
		r := framework.RunKubectl(context.Background(), framework.KubectlTimeout, "", "-n", f.Namespace, as, "get", "tj", "-o", "name")
		return r.Err == nil && strings.Contains(r.Stdout, "tensorflowtrainingjob.batch.tensorstack.dev/guarded"), nil
	})
	f.MustKubectl(as, "get", "tj", "guarded")
	f.MustKubectl(as, "get", "pj")
	f.MustKubectl(as, "get", "trainingjobs")
	if out := strings.TrimSpace(f.KubectlNS(as, "auth", "can-i", "create", "tensorflowtrainingjobs", "--subresource=pause").Stdout); out != "no" {
		t.Errorf("kubectl auth can-i create tensorflowtrainingjobs/pause as alice: %q, want no", out)
	}
	for _, args := range [][]string{
		{"get", "pods"},
		{"delete", "tj", "guarded"},
		{"label", "tj", "guarded", "owner=alice"},
	} {
		if r := f.KubectlNS(append([]string{as}, args...)...); r.Err == nil || !strings.Contains(r.Stderr, "forbidden") {
			t.Errorf("alice: kubectl %s: want forbidden, got %s", strings.Join(args, " "), r)
		}
	}
	r := f.Action(ref, "pause", "", as)
	if r.Err == nil || !strings.Contains(r.Stderr, "Forbidden") {
		t.Fatalf("alice pausing without the pause grant: want Forbidden, got %s", r)
	}
	if pauseEnabled(f.MustGetJob(ref)) {
		t.Fatalf("a forbidden pause paused the job")
	}

	// bob, with his own certificate, through the generated clientset.
	bob, err := clientset.NewForConfig(f.UserConfig("bob", "e2e-users"))
	if err != nil {
		t.Fatal(err)
	}
	list, err := bob.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("bob listing tj: %v (%d items), want the one job", err, len(list.Items))
	}
	_, err = bob.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).Pause(ctx, ref.Name, &v1beta1.PauseRequest{}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("bob pausing without the grant: %v, want 403 Forbidden", err)
	}
	if _, err := bob.BatchV1beta1().TensorFlowTrainingJobs("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("bob listing tj in another namespace: %v, want 403 Forbidden", err)
	}

	// Grant pause (only pause) on TensorFlow jobs.
	role, err := roles.Get(ctx, "job-viewer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role.Rules = append(role.Rules, rbacv1.PolicyRule{
		APIGroups: []string{v1beta1.GroupName},
		Resources: []string{v1beta1.TensorFlowTrainingJobResource + "/pause"},
		Verbs:     []string{"create"},
	})
	if _, err := roles.Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Eventually(framework.Timeout, "alice's pause to be allowed", func(context.Context) (bool, error) {
		r := f.Action(ref, "pause", "", as)
		if r.Err != nil && !strings.Contains(r.Stderr, "Forbidden") {
			return false, fmt.Errorf("%s", r)
		}
		return r.Err == nil, nil
	})
	f.WaitForPhase(ref, v1beta1.JobPaused)
	if r := f.Action(ref, "resume", "", as); r.Err == nil || !strings.Contains(r.Stderr, "Forbidden") {
		t.Errorf("alice resuming with only the pause grant: want Forbidden, got %s", r)
	}
	if !pauseEnabled(f.MustGetJob(ref)) {
		t.Errorf("the job is no longer paused after a forbidden resume")
	}
	if _, err := bob.BatchV1beta1().TensorFlowTrainingJobs(f.Namespace).Pause(ctx, ref.Name, &v1beta1.PauseRequest{}, metav1.CreateOptions{}); err != nil {
		t.Errorf("bob pausing with the grant: %v", err)
	}
}

// TestAnonymousRequestsRefused: requests without credentials are refused
// (401 or 403), both through kube-apiserver and straight at the
// training-apiserver, which delegates authentication and authorization.
func TestAnonymousRequestsRefused(t *testing.T) {
	t.Parallel()
	f := framework.New(t, "anonymous")
	ref := f.Create(framework.NewTFJob("private").WithReplicas("worker", 1))
	base := "/apis/batch.tensorstack.dev/v1beta1/namespaces/" + f.Namespace + "/tensorflowtrainingjobs"
	type request struct{ method, path, body string }
	requests := []request{
		{http.MethodGet, base, ""},
		{http.MethodGet, base + "/" + ref.Name, ""},
		{http.MethodPost, ref.ActionPath("pause"), framework.ActionBody("pause")},
		{http.MethodDelete, base + "/" + ref.Name, ""},
	}
	servers := []struct {
		name, url string
		client    *http.Client
	}{
		{"kube-apiserver", strings.TrimRight(f.Config.Host, "/"), f.AnonymousHTTPClient("")},
		{"training-apiserver", "https://127.0.0.1:" + f.LocalSetting("LOCAL_TRAINING_PORT"),
			f.AnonymousHTTPClient(filepath.Join(f.Env.LocalDir, "pki", "training-ca.crt"))},
	}
	for _, s := range servers {
		for _, rq := range requests {
			req, err := http.NewRequestWithContext(f.Context(), rq.method, s.url+rq.path, strings.NewReader(rq.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := s.client.Do(req)
			if err != nil {
				t.Errorf("%s %s %s: %v", s.name, rq.method, rq.path, err)
				continue
			}
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			t.Logf("%s: anonymous %s %s: %d", s.name, rq.method, rq.path, resp.StatusCode)
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: anonymous %s %s answered %d, want 401 or 403: %s", s.name, rq.method, rq.path, resp.StatusCode, body)
			}
		}
	}
	job := f.MustGetJob(ref)
	if pauseEnabled(job) || job.GetDeletionTimestamp() != nil {
		t.Errorf("anonymous requests changed the job")
	}
}
