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

package controller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// reconcilerFiles are the files that may declare methods of the
// reconciler: the reconcile's steps and the glue that applies a policy's
// decision to one job. A rule goes in a *_policy.go file, as a function of
// values, and its glue in one of these; a new file of reconciler methods
// is a step of the reconcile, and joins this list (and doc.go's map) on
// purpose.
var reconcilerFiles = []string{
	"act.go", "attempts.go", "gang.go",
	"inplace.go", "pods.go", "plan.go", "queue.go", "reconcile.go", "replicas.go",
	"restarts.go", "stall.go", "statusderive.go", "stops.go",
}

// TestControllerKeepsItsShape guards the split between rules and I/O: a
// *_policy.go file neither declares reconciler methods nor takes a context
// (what it decides is a function of its arguments, tested by tables), and
// only the files of reconcilerFiles declare reconciler methods.
func TestControllerKeepsItsShape(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		policy := strings.HasSuffix(name, "_policy.go")
		for _, imp := range file.Imports {
			if policy && imp.Path.Value == `"context"` {
				t.Errorf("%s imports context: a policy decides from values it is given; its I/O goes in act.go or the glue", name)
			}
		}
		for _, decl := range file.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || !isReconciler(fn.Recv.List[0].Type) {
				continue
			}
			switch {
			case policy:
				t.Errorf("%s declares the reconciler method %s: a policy is a function of values; its glue goes in a file of reconcilerFiles",
					name, fn.Name.Name)
			case !slices.Contains(reconcilerFiles, name):
				t.Errorf("%s declares the reconciler method %s, and is not in reconcilerFiles: put a rule in a *_policy.go file "+
					"as a function, and its glue beside the step that applies it", name, fn.Name.Name)
			}
		}
	}
}

// isReconciler says whether a receiver's type is reconciler or *reconciler.
func isReconciler(expr ast.Expr) bool {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	id, ok := expr.(*ast.Ident)
	return ok && id.Name == "reconciler"
}
