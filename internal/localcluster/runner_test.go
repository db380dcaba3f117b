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

package localcluster

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestEveryStepAndProbeIsCarriedOut: each step and probe type of the
// specification has its case in the runner's switch, so none falls through
// to the error a new one would meet only on a real machine.
func TestEveryStepAndProbeIsCarriedOut(t *testing.T) {
	for _, tc := range []struct{ marker, specFile, runnerFile, runnerFunc string }{
		{"isStep", "steps.go", "runner.go", "do"},
		{"isProbe", "probes.go", "probes.go", "probe"},
	} {
		declared := markedTypes(t, filepath.Join("spec", tc.specFile), tc.marker)
		if len(declared) == 0 {
			t.Fatalf("no type of spec/%s has %s", tc.specFile, tc.marker)
		}
		handled := switchCases(t, tc.runnerFile, tc.runnerFunc)
		for name := range declared {
			if !handled[name] {
				t.Errorf("runner.%s has no case for spec.%s", tc.runnerFunc, name)
			}
		}
	}
}

// markedTypes are the receivers of the marker method in a file.
func markedTypes(t *testing.T, file, marker string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == marker && fn.Recv != nil {
			if id, ok := fn.Recv.List[0].Type.(*ast.Ident); ok {
				out[id.Name] = true
			}
		}
	}
	return out
}

// switchCases are the spec.X types the method's type switches name.
func switchCases(t *testing.T, file, method string) map[string]bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != method || fn.Recv == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if sel, ok := e.(*ast.SelectorExpr); ok {
						if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "spec" {
							out[sel.Sel.Name] = true
						}
					}
				}
			}
			return true
		})
	}
	return out
}
