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

// Package rbaccheck holds RBAC rules against what an identity actually did,
// as kube-apiserver's audit log recorded it, to show that a role grants no
// more than is used: UnusedRules lists every (group, resource, verb) of a
// role that no allowed request of the identity exercised, and Forbidden
// lists the requests the identity was refused.
//
// The audit log must be in JSON lines format (--audit-log-format=json) and
// record the identity at level Metadata or above, for example:
//
//	apiVersion: audit.k8s.io/v1
//	kind: Policy
//	omitStages: [RequestReceived]
//	rules:
//	- level: Metadata
//	  users: ["system:serviceaccount:tensorstack-system:training-controller-manager"]
//	- level: None
//
// After a suite has driven the identity through its scenarios:
//
//	clusterRoles, roles, err := rbaccheck.ReadRoles("artifacts/deploy/base/rbac-controller-manager.yaml")
//	unused, err := rbaccheck.UnusedRules(&clusterRoles[0], auditLogPath, user)
//	unused, err = rbaccheck.UnusedRoleRules(&roles[0], auditLogPath, user)
//	reqs, err := rbaccheck.ReadAuditLog(auditLogPath)
//	refused := rbaccheck.Forbidden(reqs, user)
//
// Only requests show in an audit log: a permission that an admission plugin
// checks on the identity's behalf (OwnerReferencesPermissionEnforcement and
// update on .../finalizers, for one) is never "used" and must be shown
// needed another way.
package rbaccheck

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Permission is one grant of a rule: a verb on a resource of a group, or on
// a non-resource URL, possibly limited to named objects or to a namespace.
type Permission struct {
	APIGroup string
	// Resource as RBAC spells it: "pods", or "pods/status" for a subresource.
	Resource string
	Verb     string
	// ResourceName is set when the rule lists resourceNames.
	ResourceName string
	// Namespace is set for the rules of a Role: they apply there only.
	Namespace string
	// NonResourceURL is set for nonResourceURLs rules (then Resource is empty).
	NonResourceURL string
}

func (p Permission) String() string {
	if p.NonResourceURL != "" {
		return fmt.Sprintf("%s %s", p.Verb, p.NonResourceURL)
	}
	group := p.APIGroup
	if group == "" {
		group = "core"
	}
	s := fmt.Sprintf("%s %s/%s", p.Verb, group, p.Resource)
	if p.ResourceName != "" {
		s += " named " + p.ResourceName
	}
	if p.Namespace != "" {
		s += " in " + p.Namespace
	}
	return s
}

// Expand lists the permissions a set of rules grants, one per combination of
// group, resource, verb and resource name. namespace is the namespace of a
// Role, empty for a ClusterRole. Wildcards ("*") are kept as they are; they
// match any request.
func Expand(rules []rbacv1.PolicyRule, namespace string) []Permission {
	var out []Permission
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, verb := range r.Verbs {
			for _, u := range r.NonResourceURLs {
				out = append(out, Permission{Verb: verb, NonResourceURL: u})
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						out = append(out, Permission{APIGroup: g, Resource: res, Verb: verb, ResourceName: n, Namespace: namespace})
					}
				}
			}
		}
	}
	return out
}

// Request is what matters of one audited request.
type Request struct {
	// User is the identity the request acted as (the impersonated one, if
	// any).
	User string
	// ImpersonatedBy is the identity that authenticated when User was
	// impersonated. Such requests are not counted as the User's own.
	ImpersonatedBy string
	Verb           string
	APIGroup       string
	Resource       string
	Subresource    string
	Namespace      string
	Name           string
	// Path is the URL path, for non-resource requests.
	Path string
	// Code is the HTTP status of the response; 0 when none was recorded.
	Code int32
	// Message is the message of the response status, for failures.
	Message string
	// Decision is kube-apiserver's authorization decision ("allow",
	// "forbid"), when recorded.
	Decision string
	Reason   string
}

// decisionAnnotation is where kube-apiserver records its authorization decision.
const decisionAnnotation = "authorization.k8s.io/decision"

// reasonAnnotation holds the authorizer's reason for its decision.
const reasonAnnotation = "authorization.k8s.io/reason"

// FullResource is "resource" or "resource/subresource", as RBAC spells it.
func (r Request) FullResource() string {
	if r.Subresource != "" {
		return r.Resource + "/" + r.Subresource
	}
	return r.Resource
}

// Authorized says whether authorization let the request through: neither
// kube-apiserver's authorizer nor that of the aggregated server behind it
// refused it. (A 403 can also come from admission, such as a namespace
// being deleted: that request was authorized.)
func (r Request) Authorized() bool {
	if r.Decision == "forbid" {
		return false
	}
	// The refusal of an authorizer reads `... is forbidden: User "<name>" cannot <verb> ...`.
	return r.Code != http.StatusForbidden || !strings.Contains(r.Message, `User "`+r.User+`" cannot `)
}

// Allowed says whether the request was authorized and not answered with 403
// at all: the permissions it needed were used successfully.
func (r Request) Allowed() bool {
	return r.Authorized() && r.Code != http.StatusForbidden
}

func (r Request) String() string {
	var what string
	if r.Resource == "" {
		what = r.Path
	} else {
		group := r.APIGroup
		if group == "" {
			group = "core"
		}
		what = group + "/" + r.FullResource()
		if r.Name != "" {
			what += " " + r.Name
		}
		if r.Namespace != "" {
			what += " in " + r.Namespace
		}
	}
	s := fmt.Sprintf("%s %s %s: %d", r.User, r.Verb, what, r.Code)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

// ReadAuditLog reads the requests recorded in a JSON-lines audit log. Each
// request appears once per recorded stage (a watch: when its response starts
// and when it ends); RequestReceived events, which carry no outcome, are
// skipped.
func ReadAuditLog(path string) ([]Request, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	reqs, err := ParseAuditLog(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return reqs, nil
}

// ParseAuditLog is ReadAuditLog on a reader.
func ParseAuditLog(r io.Reader) ([]Request, error) {
	var out []Request
	sc := bufio.NewScanner(r)
	// Events of level Request and above carry whole objects.
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal([]byte(text), &ev); err != nil {
			return nil, fmt.Errorf("line %d: not a JSON audit event: %w", line, err)
		}
		if ev.Kind != "" && ev.Kind != "Event" {
			return nil, fmt.Errorf("line %d: kind %q, expected an audit Event", line, ev.Kind)
		}
		if ev.Stage == auditv1.StageRequestReceived {
			continue
		}
		out = append(out, requestOf(&ev))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	return out, nil
}

func requestOf(ev *auditv1.Event) Request {
	r := Request{
		User:     ev.User.Username,
		Verb:     ev.Verb,
		Decision: ev.Annotations[decisionAnnotation],
		Reason:   ev.Annotations[reasonAnnotation],
	}
	if ev.ImpersonatedUser != nil {
		r.User, r.ImpersonatedBy = ev.ImpersonatedUser.Username, ev.User.Username
	}
	if ev.ResponseStatus != nil {
		r.Code, r.Message = ev.ResponseStatus.Code, ev.ResponseStatus.Message
	}
	if o := ev.ObjectRef; o != nil && o.Resource != "" {
		r.APIGroup, r.Resource, r.Subresource = o.APIGroup, o.Resource, o.Subresource
		r.Namespace, r.Name = o.Namespace, o.Name
	} else if u, err := url.Parse(ev.RequestURI); err == nil {
		r.Path = u.Path
	} else {
		r.Path = ev.RequestURI
	}
	return r
}

// Grants says whether the permission covers the request, the way the RBAC
// authorizer matches a rule.
func (p Permission) Grants(r Request) bool {
	if !matches(p.Verb, r.Verb) {
		return false
	}
	if p.NonResourceURL != "" {
		if r.Resource != "" {
			return false
		}
		if strings.HasSuffix(p.NonResourceURL, "*") {
			return strings.HasPrefix(r.Path, strings.TrimSuffix(p.NonResourceURL, "*"))
		}
		return p.NonResourceURL == r.Path
	}
	if r.Resource == "" {
		return false
	}
	if !matches(p.APIGroup, r.APIGroup) || !resourceMatches(p.Resource, r) {
		return false
	}
	// The audit log names the object of a create (from its body), but the
	// authorizer sees no name in a create's URL: a rule limited to names
	// never grants create.
	if p.ResourceName != "" && (p.ResourceName != r.Name || r.Verb == "create") {
		return false
	}
	return p.Namespace == "" || p.Namespace == r.Namespace
}

func matches(rule, value string) bool { return rule == rbacv1.VerbAll || rule == value }

// resourceMatches follows the RBAC authorizer: "*", "*/sub", "res/*" and
// exact spellings.
func resourceMatches(rule string, r Request) bool {
	full := r.FullResource()
	switch {
	case rule == rbacv1.ResourceAll || rule == full:
		return true
	case strings.HasPrefix(rule, "*/"):
		return r.Subresource != "" && rule[2:] == r.Subresource
	case strings.HasSuffix(rule, "/*"):
		return r.Subresource != "" && strings.TrimSuffix(rule, "/*") == r.Resource
	}
	return false
}

// own says whether the request is one user made itself: impersonated
// requests were made by someone else on the user's behalf.
func (r Request) own(user string) bool { return r.User == user && r.ImpersonatedBy == "" }

// Unused returns the permissions that no allowed request of user (made by
// user itself, not impersonated) used, sorted.
func Unused(perms []Permission, reqs []Request, user string) []Permission {
	var out []Permission
	for _, p := range perms {
		used := false
		for _, r := range reqs {
			if r.own(user) && r.Allowed() && p.Grants(r) {
				used = true
				break
			}
		}
		if !used {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// UnusedRules reads an audit log and returns the permissions of a
// ClusterRole that user never used successfully (without a 403). An empty
// result means that every rule was needed by something the identity did.
func UnusedRules(role *rbacv1.ClusterRole, auditLogPath, user string) ([]Permission, error) {
	if role == nil {
		return nil, errors.New("no ClusterRole given")
	}
	if role.AggregationRule != nil {
		return nil, fmt.Errorf("ClusterRole %s is aggregated: its rules are not its own", role.Name)
	}
	reqs, err := ReadAuditLog(auditLogPath)
	if err != nil {
		return nil, err
	}
	return Unused(Expand(role.Rules, ""), reqs, user), nil
}

// UnusedRoleRules is UnusedRules for a Role: only requests in the Role's
// namespace count.
func UnusedRoleRules(role *rbacv1.Role, auditLogPath, user string) ([]Permission, error) {
	if role == nil {
		return nil, errors.New("no Role given")
	}
	reqs, err := ReadAuditLog(auditLogPath)
	if err != nil {
		return nil, err
	}
	return Unused(Expand(role.Rules, role.Namespace), reqs, user), nil
}

// Forbidden returns the requests of user that were refused by authorization
// (not by admission), each distinct request once, in the order first seen.
func Forbidden(reqs []Request, user string) []Request {
	seen := map[Request]bool{}
	var out []Request
	for _, r := range reqs {
		if !r.own(user) || r.Authorized() || seen[r] {
			continue
		}
		seen[r] = true
		out = append(out, r)
	}
	return out
}

// ReadRoles reads the ClusterRoles and Roles of a YAML or JSON file of
// Kubernetes objects (other kinds are skipped), such as
// artifacts/deploy/base/rbac-controller-manager.yaml.
func ReadRoles(path string) ([]rbacv1.ClusterRole, []rbacv1.Role, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = f.Close() }()
	var (
		clusterRoles []rbacv1.ClusterRole
		roles        []rbacv1.Role
	)
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return clusterRoles, roles, nil
			}
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		var meta metav1.TypeMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		if meta.APIVersion != rbacv1.SchemeGroupVersion.String() {
			continue
		}
		switch meta.Kind {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			clusterRoles = append(clusterRoles, r)
		case "Role":
			var r rbacv1.Role
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			roles = append(roles, r)
		}
	}
}

// Used reports, for every permission, how many allowed requests of user it
// covers; handy in test failure messages.
func Used(perms []Permission, reqs []Request, user string) map[Permission]int {
	counts := make(map[Permission]int, len(perms))
	for _, p := range perms {
		counts[p] = 0
		for _, r := range reqs {
			if r.own(user) && r.Allowed() && p.Grants(r) {
				counts[p]++
			}
		}
	}
	return counts
}
