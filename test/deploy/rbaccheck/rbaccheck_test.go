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

package rbaccheck

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testdata/audit.log was recorded from kube-apiserver on the local stack of
// hack/verify-deploy.sh (a few events of training-controller-manager and
// training-apiserver, trimmed), plus two written by hand: a delete made by
// impersonating the controller, and a non-resource request.
const (
	recorded   = "testdata/audit.log"
	controller = "system:serviceaccount:tensorstack-system:training-controller-manager"
	apiserver  = "system:serviceaccount:tensorstack-system:training-apiserver"
	jobsGroup  = "batch.tensorstack.dev"
)

func rule(groups, resources, verbs []string, names ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
}

func list(s ...string) []string { return s }

// usedRules are exactly what the recorded controller requests used.
var usedRules = []rbacv1.PolicyRule{
	rule(list(jobsGroup), list("tensorflowtrainingjobs"), list("watch")),
	rule(list(jobsGroup), list("pytorchtrainingjobs"), list("delete")),
	rule(list(jobsGroup), list("tensorflowtrainingjobs/status"), list("update")),
	// The 409 of a create that found the name taken was authorized: used.
	rule(list(""), list("pods"), list("list", "create")),
	rule(list(""), list("events"), list("create", "patch")),
}

func readRecorded(t *testing.T) []Request {
	t.Helper()
	reqs, err := ReadAuditLog(recorded)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func TestReadAuditLog(t *testing.T) {
	reqs := readRecorded(t)
	if len(reqs) != 16 {
		t.Fatalf("read %d requests, want 16", len(reqs))
	}
	status := reqs[5]
	if status.User != controller || status.Verb != "update" || status.APIGroup != jobsGroup ||
		status.FullResource() != "tensorflowtrainingjobs/status" || status.Name != "tf-expire" || status.Code != 200 ||
		status.Decision != "allow" {
		t.Errorf("status update read as %+v", status)
	}
	imp := reqs[14]
	if imp.User != controller || imp.ImpersonatedBy != "local-admin" {
		t.Errorf("impersonated request read as %+v", imp)
	}
	if nr := reqs[15]; nr.Resource != "" || nr.Path != "/metrics" {
		t.Errorf("non-resource request read as %+v", nr)
	}

	// RequestReceived carries no outcome and is skipped; broken lines are
	// errors that say where.
	reqs, err := ParseAuditLog(strings.NewReader(`{"kind":"Event","stage":"RequestReceived","verb":"get","user":{"username":"a"}}` + "\n\n"))
	if err != nil || len(reqs) != 0 {
		t.Errorf("RequestReceived: %v, %v", reqs, err)
	}
	if _, err := ParseAuditLog(strings.NewReader("{\"kind\":\"Event\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("a broken line: %v", err)
	}
	if _, err := ParseAuditLog(strings.NewReader(`{"kind":"Policy"}`)); err == nil {
		t.Errorf("a Policy was taken for an audit event")
	}
	if _, err := ReadAuditLog("testdata/missing.log"); err == nil {
		t.Errorf("a missing file gave no error")
	}
}

func TestAuthorizedAndAllowed(t *testing.T) {
	reqs := readRecorded(t)
	find := func(verb, resource string, code int32) Request {
		t.Helper()
		i := slices.IndexFunc(reqs, func(r Request) bool { return r.Verb == verb && r.Resource == resource && r.Code == code })
		if i < 0 {
			t.Fatalf("no %s %s %d in %s", verb, resource, code, recorded)
		}
		return reqs[i]
	}
	for _, c := range []struct {
		name                string
		r                   Request
		authorized, allowed bool
	}{
		{"created", find("create", "pods", 201), true, true},
		{"name taken (409)", find("create", "pods", 409), true, true},
		{"lease not found (404)", find("get", "leases", 404), true, true},
		{"refused by RBAC", find("get", "services", 403), false, false},
		{"refused by admission: namespace terminating", find("create", "pods", 403), true, false},
		// The aggregated server's own authorizer answers 403 behind an
		// "allow" of kube-apiserver.
		{"refused behind the proxy", Request{User: "u", Decision: "allow", Code: 403,
			Message: `tensorflowtrainingjobs.batch.tensorstack.dev is forbidden: User "u" cannot list resource`}, false, false},
	} {
		if got := c.r.Authorized(); got != c.authorized {
			t.Errorf("%s: Authorized() = %v", c.name, got)
		}
		if got := c.r.Allowed(); got != c.allowed {
			t.Errorf("%s: Allowed() = %v", c.name, got)
		}
	}
}

func TestUnusedRules(t *testing.T) {
	role := func(rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Rules: rules}
	}
	for _, c := range []struct {
		name  string
		rules []rbacv1.PolicyRule
		want  []string
	}{
		{name: "every rule used", rules: usedRules},
		{name: "a verb too many", rules: append(slices.Clone(usedRules), rule(list(""), list("pods"), list("deletecollection"))),
			want: list("deletecollection core/pods")},
		{name: "only refused requests", rules: append(slices.Clone(usedRules), rule(list(""), list("services"), list("get"))),
			want: list("get core/services")},
		{name: "only requests by impersonation", rules: append(slices.Clone(usedRules), rule(list(""), list("pods"), list("delete"))),
			want: list("delete core/pods")},
		{name: "a group not used", rules: append(slices.Clone(usedRules), rule(list("apps"), list("deployments"), list("list", "watch"))),
			want: list("list apps/deployments", "watch apps/deployments")},
		{name: "status is not the job", rules: append(slices.Clone(usedRules), rule(list(jobsGroup), list("tensorflowtrainingjobs"), list("update"))),
			want: list("update batch.tensorstack.dev/tensorflowtrainingjobs")},
		{name: "names limit", rules: []rbacv1.PolicyRule{rule(list(jobsGroup), list("pytorchtrainingjobs"), list("delete"), "pt-expire", "other")},
			want: list("delete batch.tensorstack.dev/pytorchtrainingjobs named other")},
		{name: "wildcards match", rules: []rbacv1.PolicyRule{
			rule(list("*"), list("tensorflowtrainingjobs"), list("watch")),
			rule(list(jobsGroup), list("*/status"), list("update")),
			rule(list(""), list("*"), list("*")),
		}},
		{name: "subresource wildcard needs a subresource", rules: []rbacv1.PolicyRule{rule(list(""), list("pods/*"), list("create"))},
			want: list("create core/pods/*")},
	} {
		t.Run(c.name, func(t *testing.T) {
			unused, err := UnusedRules(role(c.rules...), recorded, controller)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range unused {
				got = append(got, p.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("unused: %q, want %q", got, c.want)
			}
		})
	}

	// Another identity used none of the controller's rules.
	unused, err := UnusedRules(role(usedRules...), recorded, apiserver)
	if err != nil {
		t.Fatal(err)
	}
	if len(unused) != len(Expand(usedRules, "")) {
		t.Errorf("the apiserver's requests counted for the controller: %v", unused)
	}

	if _, err := UnusedRules(&rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}}, recorded, controller); err == nil {
		t.Errorf("an aggregated ClusterRole was walked")
	}
	if _, err := UnusedRules(role(usedRules...), "testdata/missing.log", controller); err == nil {
		t.Errorf("a missing audit log gave no error")
	}
}

func TestUnusedRoleRules(t *testing.T) {
	leases := []rbacv1.PolicyRule{
		rule(list("coordination.k8s.io"), list("leases"), list("create")),
		rule(list("coordination.k8s.io"), list("leases"), list("get", "update"), "training-controller-manager"),
	}
	for _, c := range []struct {
		name, namespace string
		rules           []rbacv1.PolicyRule
		want            []string
	}{
		{name: "leader election", namespace: "tensorstack-system", rules: leases},
		{name: "another namespace", namespace: "kube-system", rules: leases[:1],
			want: list("create coordination.k8s.io/leases in kube-system")},
		{name: "another name", namespace: "tensorstack-system",
			rules: []rbacv1.PolicyRule{rule(list("coordination.k8s.io"), list("leases"), list("update"), "someone-else")},
			want:  list("update coordination.k8s.io/leases named someone-else in tensorstack-system")},
		// RBAC cannot limit create by name: the request has none.
		{name: "create limited by name", namespace: "tensorstack-system",
			rules: []rbacv1.PolicyRule{rule(list("coordination.k8s.io"), list("leases"), list("create"), "training-controller-manager")},
			want:  list("create coordination.k8s.io/leases named training-controller-manager in tensorstack-system")},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: c.namespace}, Rules: c.rules}
			unused, err := UnusedRoleRules(r, recorded, controller)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range unused {
				got = append(got, p.String())
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("unused: %q, want %q", got, c.want)
			}
		})
	}
}

func TestForbidden(t *testing.T) {
	reqs := readRecorded(t)
	got := Forbidden(reqs, controller)
	if len(got) != 1 || got[0].Verb != "get" || got[0].Resource != "services" || got[0].Name != "tf-conflict" {
		t.Errorf("forbidden: %v, want only the refused get of Service tf-conflict", got)
	}
	if f := Forbidden(append(reqs, reqs...), controller); len(f) != 1 {
		t.Errorf("repeats are reported once: %v", f)
	}
	if f := Forbidden(reqs, apiserver); len(f) != 0 {
		t.Errorf("forbidden for the apiserver: %v", f)
	}
}

func TestNonResourceURLs(t *testing.T) {
	reqs := readRecorded(t)
	perms := Expand([]rbacv1.PolicyRule{
		{NonResourceURLs: list("/metrics", "/healthz", "/met*"), Verbs: list("get")},
		{NonResourceURLs: list("/metrics"), Verbs: list("post")},
	}, "")
	var got []string
	for _, p := range Unused(perms, reqs, "metrics-reader") {
		got = append(got, p.String())
	}
	if want := list("get /healthz", "post /metrics"); !slices.Equal(got, want) {
		t.Errorf("unused: %q, want %q", got, want)
	}
	// A resource rule never covers a non-resource request, nor the reverse.
	if n := Used(Expand([]rbacv1.PolicyRule{rule(list("*"), list("*"), list("get"))}, ""), reqs, "metrics-reader"); len(n) != 1 {
		t.Fatalf("Used: %v", n)
	} else {
		for p, count := range n {
			if count != 0 {
				t.Errorf("%s covered the non-resource request", p)
			}
		}
	}
}

func TestExpand(t *testing.T) {
	perms := Expand([]rbacv1.PolicyRule{rule(list("", "apps"), list("pods", "deployments"), list("get", "list"), "a", "b")}, "ns")
	if len(perms) != 16 {
		t.Errorf("2 groups x 2 resources x 2 verbs x 2 names: got %d", len(perms))
	}
	for _, p := range perms {
		if p.Namespace != "ns" || p.ResourceName == "" {
			t.Errorf("%+v", p)
		}
	}
}

// TestReadRoles reads the controller's roles from the manifests and walks
// them against the recorded log: the leader-election Role was used in full.
func TestReadRoles(t *testing.T) {
	clusterRoles, roles, err := ReadRoles("../../../artifacts/deploy/base/rbac-controller-manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(clusterRoles) != 1 || clusterRoles[0].Name != "tensorstack:training-controller-manager" || len(clusterRoles[0].Rules) == 0 {
		t.Fatalf("ClusterRoles: %+v", clusterRoles)
	}
	if len(roles) != 1 || roles[0].Namespace != "tensorstack-system" {
		t.Fatalf("Roles: %+v", roles)
	}
	unused, err := UnusedRoleRules(&roles[0], recorded, controller)
	if err != nil {
		t.Fatal(err)
	}
	if len(unused) != 0 {
		t.Errorf("unused: %v", unused)
	}
	if _, _, err := ReadRoles("testdata/audit.log"); err != nil {
		t.Errorf("a file of other objects: %v", err)
	}
	if _, _, err := ReadRoles("testdata/missing.yaml"); err == nil {
		t.Errorf("a missing file gave no error")
	}
}
