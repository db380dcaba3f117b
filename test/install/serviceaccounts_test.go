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
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// rightsDoc holds the table of what each ServiceAccount of the
// installation may do; the test reads it, so the two cannot drift.
const rightsDoc = "docs/install.md"

// rightsHeading starts the table in rightsDoc.
const rightsHeading = "### What the installation's ServiceAccounts may do"

// grant is one right: a verb on a resource of a group (a name, or any),
// or on a non-resource URL.
type grant struct {
	group, resource, name, url, verb string
}

func (g grant) String() string {
	if g.url != "" {
		return fmt.Sprintf("%s %s", g.verb, g.url)
	}
	s := fmt.Sprintf("%s %s", g.verb, g.resource)
	if g.group != "" {
		s += "." + g.group
	}
	if g.name != "" {
		s += "/" + g.name
	}
	return s
}

// docRights parses the table: by ServiceAccount, by where ("cluster" or a
// namespace), the rights granted there.
func docRights(t *testing.T) map[string]map[string]sets.Set[string] {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", rightsDoc))
	if err != nil {
		t.Fatal(err)
	}
	_, table, found := strings.Cut(string(data), rightsHeading+"\n")
	if !found {
		t.Fatalf("%s has no heading %q", rightsDoc, rightsHeading)
	}
	out := map[string]map[string]sets.Set[string]{}
	var header []string
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if header != nil {
				break // the table's end
			}
			continue
		}
		var cells []string
		for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
			cells = append(cells, strings.Trim(strings.TrimSpace(c), "`"))
		}
		switch {
		case header == nil:
			header = cells
			continue
		case strings.HasPrefix(cells[0], "---"):
			continue
		}
		cell := func(name string) string {
			i := slices.Index(header, name)
			if i < 0 || i >= len(cells) {
				t.Fatalf("%s: the table has no column %q: %q", rightsDoc, name, header)
			}
			return strings.Trim(cells[i], "` ")
		}
		sa, where := cell("ServiceAccount"), cell("Where")
		if out[sa] == nil {
			out[sa] = map[string]sets.Set[string]{}
		}
		if out[sa][where] == nil {
			out[sa][where] = sets.New[string]()
		}
		group := cell("API group")
		if group == "core" {
			group = ""
		}
		names := list(cell("Names"))
		if len(names) == 0 {
			names = []string{""}
		}
		for _, verb := range list(cell("Verbs")) {
			for _, resource := range list(cell("Resources")) {
				if strings.HasPrefix(resource, "/") {
					out[sa][where].Insert(grant{url: resource, verb: verb}.String())
					continue
				}
				for _, name := range names {
					out[sa][where].Insert(grant{group: group, resource: resource, name: name, verb: verb}.String())
				}
			}
		}
		rows++
	}
	if rows == 0 {
		t.Fatalf("%s: no rows under %q", rightsDoc, rightsHeading)
	}
	return out
}

// list splits a cell of comma- or space-separated words, backticks and
// "any" dropped.
func list(cell string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(cell, func(r rune) bool { return r == ',' || r == ' ' }) {
		w = strings.Trim(w, "`")
		if w != "" && w != "any" && w != "-" {
			out = append(out, w)
		}
	}
	return out
}

// canIList is kubectl auth can-i --list for a user in a namespace, as
// atomic grants.
func (e *env) canIList(t *testing.T, user, namespace string) sets.Set[string] {
	t.Helper()
	out := e.run(t, nil, "auth", "can-i", "--list", "--as="+user, "--namespace="+namespace)
	grants, err := parseCanIList(out)
	if err != nil {
		t.Fatalf("kubectl auth can-i --list --as=%s --namespace=%s: %v\n%s", user, namespace, err, out)
	}
	return grants
}

// parseCanIList reads kubectl auth can-i --list's table: one row per
// resource (<resource>.<group>[/<subresource>]) or non-resource URL, with
// its names and verbs in brackets, in columns under the header's.
func parseCanIList(out string) (sets.Set[string], error) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "Resources") {
		return nil, fmt.Errorf("no header")
	}
	header := lines[0]
	urlsAt, namesAt, verbsAt := strings.Index(header, "Non-Resource URLs"), strings.Index(header, "Resource Names"), strings.Index(header, "Verbs")
	if urlsAt < 0 || namesAt < 0 || verbsAt < 0 {
		return nil, fmt.Errorf("unexpected header %q", header)
	}
	column := func(line string, from, to int) string {
		if from >= len(line) {
			return ""
		}
		if to < 0 || to > len(line) {
			to = len(line)
		}
		return strings.TrimSpace(line[from:to])
	}
	brackets := func(s string) []string { return strings.Fields(strings.Trim(s, "[]")) }
	grants := sets.New[string]()
	for _, line := range lines[1:] {
		resources := column(line, 0, urlsAt)
		urls, names, verbs := brackets(column(line, urlsAt, namesAt)), brackets(column(line, namesAt, verbsAt)), brackets(column(line, verbsAt, -1))
		if len(verbs) == 0 {
			return nil, fmt.Errorf("a row without verbs: %q", line)
		}
		if len(names) == 0 {
			names = []string{""}
		}
		for _, verb := range verbs {
			for _, url := range urls {
				grants.Insert(grant{url: url, verb: verb}.String())
			}
			if resources == "" {
				continue
			}
			// Resource names hold no dot.
			resource, group, _ := strings.Cut(resources, ".")
			if g, sub, ok := strings.Cut(group, "/"); ok {
				group, resource = g, resource+"/"+sub
			}
			for _, name := range names {
				grants.Insert(grant{group: group, resource: resource, name: name, verb: verb}.String())
			}
		}
	}
	return grants, nil
}

// testServiceAccountRights: what kubectl auth can-i --list says each
// ServiceAccount of the installation may do, beyond what a ServiceAccount
// that does not exist may (everyone's rights, and those of every
// ServiceAccount, such as reporting progress), is the table in
// docs/install.md: cluster-wide rights in every namespace, and a
// namespace's rights there only.
func testServiceAccountRights(t *testing.T, e *env) {
	want := docRights(t)
	accounts, err := e.kube.CoreV1().ServiceAccounts(systemNamespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=tensorstack-training"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sa := range accounts.Items {
		names = append(names, sa.Name)
	}
	if len(names) < 3 {
		t.Fatalf("the installation has ServiceAccounts %q, want at least training-apiserver, -controller-manager and -etcd", names)
	}
	for sa := range want {
		if !slices.Contains(names, sa) {
			t.Errorf("%s lists rights of %s, which the installation does not create", rightsDoc, sa)
		}
	}
	for _, namespace := range []string{systemNamespace, "kube-system", jobsNamespace} {
		baseline := e.canIList(t, "system:serviceaccount:"+systemNamespace+":no-such-account", namespace)
		for _, sa := range names {
			got := e.canIList(t, "system:serviceaccount:"+systemNamespace+":"+sa, namespace).Difference(baseline)
			expected := sets.New[string]()
			if w := want[sa]["cluster"]; w != nil {
				expected = expected.Union(w)
			}
			if w := want[sa][namespace]; w != nil {
				expected = expected.Union(w)
			}
			for _, g := range sets.List(got.Difference(expected)) {
				t.Errorf("%s may %s in %s, which %s does not say", sa, g, namespace, rightsDoc)
			}
			for _, g := range sets.List(expected.Difference(got)) {
				t.Errorf("%s says %s may %s in %s; kubectl auth can-i --list does not", rightsDoc, sa, g, namespace)
			}
			t.Logf("%s in %s: %d rights beyond every ServiceAccount's, as %s says", sa, namespace, got.Len(), rightsDoc)
		}
	}
}

// TestRightsTableParses: the table is there and reads as rights, without a
// cluster; the install test compares it with one.
func TestRightsTableParses(t *testing.T) {
	rights := docRights(t)
	for _, sa := range []string{"training-apiserver", "training-controller-manager"} {
		if rights[sa]["cluster"].Len() == 0 {
			t.Errorf("%s lists no cluster-wide rights of %s", rightsDoc, sa)
		}
	}
	want := []string{
		"update secrets/training-etcd-ca",
		"create pods",
		"patch tensorflowtrainingjobs/status.batch.tensorstack.dev",
		"get configmaps/extension-apiserver-authentication",
	}
	all := sets.New[string]()
	for _, byWhere := range rights {
		for _, g := range byWhere {
			all = all.Union(g)
		}
	}
	for _, w := range want {
		if !all.Has(w) {
			t.Errorf("%s: no right %q in %d", rightsDoc, w, all.Len())
		}
	}
}
