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

package batch

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func TestKindsAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, k := range Kinds {
		for _, name := range []string{k.Kind, k.Resource, k.Singular, k.ShortName} {
			if name == "" {
				t.Errorf("kind %q has an empty name: %+v", k.Kind, k)
			}
			if other, ok := seen[name]; ok {
				t.Errorf("%q names both %s and %s", name, other, k.Kind)
			}
			seen[name] = k.Kind
		}
		if k.Resource != strings.ToLower(k.Kind)+"s" || k.Singular != strings.ToLower(k.Kind) {
			t.Errorf("kind %s: resource %q and singular %q are not its name in lower case", k.Kind, k.Resource, k.Singular)
		}
		if got, ok := KindNamed(k.Kind); !ok || !reflect.DeepEqual(got, k) {
			t.Errorf("KindNamed(%s) = %+v, %v", k.Kind, got, ok)
		}
	}
	if _, ok := KindNamed("Pod"); ok {
		t.Error("KindNamed(Pod) found a kind")
	}
}

func TestKindsInProse(t *testing.T) {
	got := KindsInProse(true, true)
	for _, k := range Kinds {
		if !strings.Contains(got, k.Kind+"s ("+k.ShortName+")") {
			t.Errorf("KindsInProse(true, true) = %q, without %s", got, k.Kind)
		}
	}
	if want := " and " + Kinds[len(Kinds)-1].Kind; !strings.HasSuffix(KindsInProse(false, false), want) {
		t.Errorf("KindsInProse(false, false) = %q, want it to end with %q", KindsInProse(false, false), want)
	}
}

// listsOfSomeKinds are the files that may list some of the kinds, not all,
// with why.
var listsOfSomeKinds = map[string]string{
	"pkg/kubeflow/doc.go": "Kubeflow has four of the kinds; the converter takes those",
	"pkg/cli/convert.go":  "kubectl training convert takes Kubeflow's four kinds",
	"CHANGELOG.md":        "what changed when fewer kinds existed stays as it was",
}

// TestNoStaleListOfKinds fails on a hand-written list of kinds that leaves
// some out: a comment, doc or help text that lists two kinds or more (as
// "A, B" or "A and B") in one paragraph, and not every kind of the table.
// Such a list was true once and went stale with the next kind; name them
// all, say "every kind" and point at the table, or build the text from it
// (KindsInProse).
func TestNoStaleListOfKinds(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	var names []string
	for _, k := range Kinds {
		names = append(names, regexp.QuoteMeta(k.Kind))
	}
	kind := `\b(?:` + strings.Join(names, "|") + `)s?\b`
	list := regexp.MustCompile(kind + `(?:,| and| or) ` + kind)
	one := regexp.MustCompile(kind)
	paragraphs := regexp.MustCompile(`\n[ \t]*(?://|#)?[ \t]*\n`)
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "_output", "node_modules", "testdata", "generated", "app":
				return filepath.SkipDir
			}
			return nil
		}
		if _, ok := listsOfSomeKinds[rel]; ok || !prose(rel) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, p := range paragraphs.Split(string(data), -1) {
			if !list.MatchString(p) {
				continue
			}
			named := map[string]bool{}
			for _, m := range one.FindAllString(p, -1) {
				named[strings.TrimSuffix(m, "s")] = true
			}
			if len(named) < len(Kinds) {
				t.Errorf("%s lists %d of the %d kinds in:\n%s\nname every kind (pkg/apis/batch/kinds.go), or build the text from the table",
					rel, len(named), len(Kinds), strings.TrimSpace(p))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Errorf("read only %d files: the walk is broken", checked)
	}
}

// prose says whether a file's comments, docs or texts are read for lists of
// kinds: the source, docs and manifests people read, not tests and their
// data.
func prose(path string) bool {
	base := filepath.Base(path)
	if strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "test_") || strings.HasPrefix(base, "zz_generated") ||
		strings.HasSuffix(base, ".pb.go") || strings.HasPrefix(path, "test"+string(filepath.Separator)) {
		return false
	}
	switch filepath.Ext(base) {
	case ".go", ".md", ".yaml", ".ts", ".py", ".sh":
		return true
	}
	return false
}
