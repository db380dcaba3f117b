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
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestDocMapsEveryFile keeps doc.go's map of the package whole: a reader looks there for where a policy lives,
// so every file of the package, and every package under it, must be named in it.
func TestDocMapsEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	// The package comment's words, whatever the line breaks between them.
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", " ")), " ")
	named := func(word string) bool {
		return regexp.MustCompile(`(^|[\s(,])` + regexp.QuoteMeta(word) + `([\s),:;.]|$)`).MatchString(text)
	}

	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			if matches, _ := filepath.Glob(filepath.Join(name, "*.go")); len(matches) > 0 && !named(name) {
				missing = append(missing, name+"/")
			}
		case strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") && name != "doc.go":
			if !named(name) {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("doc.go's map does not name these; add each where it belongs: %s", strings.Join(missing, ", "))
	}
}

// TestDocNamesEveryReason keeps doc.go's list of reasons whole and true: every
// Reason constant the controller's code (this package and those under it)
// refers to, its own or the API's, is named in the list, and the list names
// no reason the code does not give. Reasons are constants named Reason...
// with a string value, read from the code as written.
func TestDocNamesEveryReason(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "// Reasons:")
	end := strings.Index(text, "\npackage controller")
	if start < 0 || end < start {
		t.Fatal("doc.go has no list that starts with \"// Reasons:\" before the package clause")
	}
	listed := map[string]bool{}
	for _, item := range regexp.MustCompile(`\b[A-Z][A-Za-z]+\b`).FindAllString(text[start:end], -1) {
		listed[item] = true
	}

	values := map[string]string{} // package.ReasonName -> its value
	used := map[string]bool{}     // package.ReasonName the code refers to
	dirs := []string{filepath.Join("..", "apis", "batch", "v1beta1")}
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && !strings.HasPrefix(d.Name(), "testdata") {
			dirs = append(dirs, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			collectReasons(file, values)
			if !strings.HasPrefix(dir, "..") {
				collectReasonUses(file, used)
			}
		}
	}

	given := map[string]bool{}
	for ref := range used {
		v, ok := values[ref]
		if !ok {
			t.Errorf("%s: no constant of that name with a string value; declare reasons as string constants", ref)
			continue
		}
		given[v] = true
	}
	var missing []string
	for v := range given {
		if !listed[v] {
			missing = append(missing, v)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("doc.go's list of reasons leaves out %s; add each to its group", strings.Join(missing, ", "))
	}
	all := map[string]bool{}
	for _, v := range values {
		all[v] = true
	}
	var stale []string
	for item := range listed {
		if all[item] && !given[item] {
			stale = append(stale, item)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("doc.go's list of reasons names %s, which the controller no longer gives", strings.Join(stale, ", "))
	}
	if len(given) < 20 {
		t.Errorf("found only %d reasons in the code: the scan is broken", len(given))
	}
}

// collectReasons records the string constants named Reason... that a file
// declares, under its package's name.
func collectReasons(file *ast.File, values map[string]string) {
	for _, decl := range file.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if !isReasonName(n.Name) || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if v, err := strconv.Unquote(lit.Value); err == nil {
						values[file.Name.Name+"."+n.Name] = v
					}
				}
			}
		}
	}
}

// collectReasonUses records the Reason... names a file refers to: its own
// package's by name, another's by its qualifier (the packages' names are
// their directories', as here).
func collectReasonUses(file *ast.File, used map[string]bool) {
	var visit func(n ast.Node) bool
	visit = func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			// A field or method is no constant of this package: only a
			// package's qualifier, or what the selector is taken of, counts.
			if pkg, ok := x.X.(*ast.Ident); ok && isImported(file, pkg.Name) {
				if isReasonName(x.Sel.Name) {
					used[pkg.Name+"."+x.Sel.Name] = true
				}
			} else {
				ast.Inspect(x.X, visit)
			}
			return false
		case *ast.Ident:
			if isReasonName(x.Name) {
				used[file.Name.Name+"."+x.Name] = true
			}
		}
		return true
	}
	ast.Inspect(file, visit)
}

func isReasonName(name string) bool {
	return len(name) > len("Reason") && strings.HasPrefix(name, "Reason") &&
		name[len("Reason")] >= 'A' && name[len("Reason")] <= 'Z'
}

// isImported says whether a file imports a package of that name from this
// module.
func isImported(file *ast.File, name string) bool {
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(path, "tensorstack.dev/training/") {
			continue
		}
		if (imp.Name != nil && imp.Name.Name == name) || (imp.Name == nil && filepath.Base(path) == name) {
			return true
		}
	}
	return false
}
