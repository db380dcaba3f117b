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

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"tensorstack.dev/training/pkg/apis/batch"
)

// The roles artifacts/deploy gives the controller, and what
// system:auth-delegator, a role every cluster has, adds.
var (
	controllerRoleFiles = []string{
		"artifacts/deploy/base/rbac-controller-manager.yaml",
		"artifacts/deploy/components/kueue/rbac-controller-manager-kueue.yaml",
	}
	authDelegator = []string{
		"authentication.k8s.io tokenreviews create",
		"authorization.k8s.io subjectaccessreviews create",
	}
)

// TestRBACTableMatchesTheRoles: doc.go's table of every API call the binary
// makes is the set of grants of its roles, no more and no less.
func TestRBACTableMatchesTheRoles(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	table := sets.New[string]()
	inTable := false
	for _, line := range strings.Split(string(doc), "\n") {
		fields := strings.Fields(strings.TrimPrefix(line, "//"))
		switch {
		case len(fields) >= 3 && fields[0] == "group" && fields[1] == "resource":
			inTable = true
		case inTable && len(fields) < 3:
			inTable = false
		case inTable:
			group := strings.Trim(fields[0], `"`)
			// RESOURCE stands for each kind's resource.
			resources := []string{fields[1]}
			if rest, ok := strings.CutPrefix(fields[1], "RESOURCE"); ok {
				resources = nil
				for _, k := range batch.Kinds {
					resources = append(resources, k.Resource+rest)
				}
			}
			for _, verb := range strings.Split(strings.Join(fields[2:], ""), ",") {
				for _, resource := range resources {
					table.Insert(group + " " + resource + " " + verb)
				}
			}
		}
	}
	if table.Len() == 0 {
		t.Fatal("doc.go has no RBAC table")
	}

	granted := sets.New(authDelegator...)
	for _, file := range controllerRoleFiles {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var role rbacv1.ClusterRole // a Role has the same rules
			if err := decoder.Decode(&role); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if role.Kind != "ClusterRole" && role.Kind != "Role" {
				continue
			}
			for _, rule := range role.Rules {
				for _, g := range rule.APIGroups {
					for _, r := range rule.Resources {
						for _, v := range rule.Verbs {
							granted.Insert(g + " " + r + " " + v)
						}
					}
				}
			}
		}
	}
	if missing := sets.List(granted.Difference(table)); len(missing) > 0 {
		t.Errorf("granted by the roles but not in doc.go's table: %v", missing)
	}
	if extra := sets.List(table.Difference(granted)); len(extra) > 0 {
		t.Errorf("in doc.go's table but granted by no role: %v", extra)
	}
}
