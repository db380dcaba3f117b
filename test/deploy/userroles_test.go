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
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch"
)

// runtimeReader is the ClusterRole, and its binding, that lets every
// authenticated user read the cluster's runtimes.
const runtimeReader = "tensorstack:training-runtime-reader"

// TestUserRolesAggregate applies the user roles of artifacts/deploy, binds
// one user to the cluster's view, one to edit and one to admin in a
// namespace, and asks kube-apiserver (kubectl auth can-i, impersonating each
// user) what they may do with training jobs there: the aggregation labels
// must have folded our rules into the built-in roles, and no more than
// intended.
func TestUserRolesAggregate(t *testing.T) {
	e := clusterEnv(t)
	ctx := context.Background()
	c := e.clients(t)
	r := e.render(t, overlayByName(t, "base"))

	var roles []any
	for _, u := range r.ofKind("ClusterRole") {
		labels := u.GetLabels()
		if labels[aggregateToView] == "true" || labels[aggregateToEdit] == "true" || labels[aggregateToAdmin] == "true" {
			roles = append(roles, u.Object)
		}
	}
	if len(roles) != 2 {
		t.Fatalf("want 2 aggregated ClusterRoles (view, edit), found %d", len(roles))
	}
	// And the cluster's runtimes, which every authenticated user reads.
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding"} {
		for _, u := range r.ofKind(kind) {
			if u.GetName() == runtimeReader {
				roles = append(roles, u.Object)
			}
		}
	}
	if len(roles) != 4 {
		t.Fatalf("want the ClusterRole and ClusterRoleBinding %s besides view and edit, found %d objects", runtimeReader, len(roles))
	}
	list := mustJSON(t, map[string]any{"apiVersion": "v1", "kind": "List", "items": roles})
	if _, _, err := e.kubectlCluster(ctx, bytes.NewReader(list), "apply", "-f", "-"); err != nil {
		t.Fatalf("applying the user roles: %v", err)
	}

	const (
		ns       = "deploy-user-roles"
		otherNS  = "deploy-user-roles-other"
		viewer   = "deploy-test-viewer"
		editor   = "deploy-test-editor"
		owner    = "deploy-test-admin"
		stranger = "deploy-test-stranger"
	)
	for _, n := range []string{ns, otherNS} {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating namespace %s: %v", n, err)
		}
		t.Cleanup(func() { _ = c.kube.CoreV1().Namespaces().Delete(context.Background(), n, metav1.DeleteOptions{}) })
	}
	for user, role := range map[string]string{viewer: "view", editor: "edit", owner: "admin"} {
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if _, err := c.kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatalf("binding %s to %s: %v", user, role, err)
		}
	}

	canI := func(ctx context.Context, user, namespace, verb, resource, subresource string) (bool, error) {
		args := []string{"auth", "can-i", verb, resource + ".batch.tensorstack.dev", "-n", namespace,
			"--as=" + user, "--as-group=system:authenticated"}
		if subresource != "" {
			args = append(args, "--subresource="+subresource)
		}
		out, _, err := e.kubectlCluster(ctx, nil, args...)
		answer := strings.TrimSpace(string(out))
		var exit *exec.ExitError
		switch {
		case err == nil && answer == "yes":
			return true, nil
		case errors.As(err, &exit) && exit.ExitCode() == 1 && strings.HasPrefix(answer, "no"):
			return false, nil
		}
		return false, fmt.Errorf("kubectl %s: %q: %w", strings.Join(args, " "), answer, err)
	}

	// The clusterrole-aggregation controller folds the rules in shortly
	// after the roles appear.
	if err := eventually(ctx, 60*time.Second, 500*time.Millisecond, func(ctx context.Context) (bool, error) {
		ok, err := canI(ctx, editor, ns, "create", "pytorchtrainingjobs", "debug")
		if err != nil {
			return false, err
		}
		viewOK, err := canI(ctx, viewer, ns, "watch", "pytorchtrainingjobs", "status")
		return ok && viewOK, err
	}); err != nil {
		t.Fatalf("the user roles were not aggregated into view and edit: %v", err)
	}

	type check struct {
		user, namespace, verb, subresource string
		want                               bool
	}
	var checks []check
	for _, u := range []string{viewer, editor, owner} {
		writer := u != viewer
		for _, v := range []string{"get", "list", "watch"} {
			checks = append(checks, check{u, ns, v, "", true})
		}
		checks = append(checks, check{u, ns, "get", "status", true})
		for _, v := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			checks = append(checks, check{u, ns, v, "", writer})
		}
		for _, action := range []string{"pause", "resume", "debug"} {
			checks = append(checks, check{u, ns, "create", action, writer})
		}
		// Status is the controller's, also for editors and admins.
		checks = append(checks, check{u, ns, "update", "status", false}, check{u, ns, "patch", "status", false})
		// Only in the namespace of the binding.
		checks = append(checks, check{u, otherNS, "get", "", false}, check{u, otherNS, "create", "pause", false})
	}
	checks = append(checks, check{stranger, ns, "get", "", false}, check{stranger, ns, "create", "pause", false})

	// The runtimes: a team's are read by view and written by edit, in the
	// namespace of the binding; the cluster's are read by every
	// authenticated user and written by none of these.
	type runtimeCheck struct {
		user, namespace, verb, resource string
		want                            bool
	}
	var runtimeChecks []runtimeCheck
	for _, u := range []string{viewer, editor, owner, stranger} {
		for _, v := range []string{"get", "list", "watch"} {
			runtimeChecks = append(runtimeChecks, runtimeCheck{u, ns, v, "trainingruntimes", u != stranger},
				runtimeCheck{u, otherNS, v, "trainingruntimes", false},
				runtimeCheck{u, ns, v, "clustertrainingruntimes", true})
		}
		for _, v := range []string{"create", "update", "patch", "delete"} {
			runtimeChecks = append(runtimeChecks, runtimeCheck{u, ns, v, "trainingruntimes", u == editor || u == owner},
				runtimeCheck{u, otherNS, v, "trainingruntimes", false},
				runtimeCheck{u, ns, v, "clustertrainingruntimes", false})
		}
		// The records of deleted jobs: read by view, deleted by edit,
		// written by the server alone.
		for _, v := range []string{"get", "list", "watch"} {
			runtimeChecks = append(runtimeChecks, runtimeCheck{u, ns, v, "trainingjobrecords", u != stranger},
				runtimeCheck{u, otherNS, v, "trainingjobrecords", false})
		}
		for _, v := range []string{"delete", "deletecollection"} {
			runtimeChecks = append(runtimeChecks, runtimeCheck{u, ns, v, "trainingjobrecords", u == editor || u == owner},
				runtimeCheck{u, otherNS, v, "trainingjobrecords", false})
		}
		for _, v := range []string{"create", "update", "patch"} {
			runtimeChecks = append(runtimeChecks, runtimeCheck{u, ns, v, "trainingjobrecords", false})
		}
	}

	var (
		mu       sync.Mutex
		failures []string
		wg       sync.WaitGroup
		sem      = make(chan struct{}, 4)
	)
	// Every kind of the table: a kind the roles leave out fails here.
	var resources []string
	for _, k := range batch.Kinds {
		resources = append(resources, k.Resource)
	}
	// And the searches, which have every action but debug.
	resources = append(resources, "tuningjobs")
	for _, resource := range resources {
		for _, ch := range checks {
			if resource == "tuningjobs" && ch.subresource == "debug" {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				got, err := canI(ctx, ch.user, ch.namespace, ch.verb, resource, ch.subresource)
				what := resource
				if ch.subresource != "" {
					what += "/" + ch.subresource
				}
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					failures = append(failures, err.Error())
				case got != ch.want:
					failures = append(failures, fmt.Sprintf("%s can %s %s in %s: %v, want %v", ch.user, ch.verb, what, ch.namespace, got, ch.want))
				}
			})
		}
	}
	for _, ch := range runtimeChecks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			got, err := canI(ctx, ch.user, ch.namespace, ch.verb, ch.resource, "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				failures = append(failures, err.Error())
			case got != ch.want:
				failures = append(failures, fmt.Sprintf("%s can %s %s in %s: %v, want %v", ch.user, ch.verb, ch.resource, ch.namespace, got, ch.want))
			}
		})
	}
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}
	t.Logf("%d kubectl auth can-i checks", len(resources)*len(checks)+len(runtimeChecks))
}
