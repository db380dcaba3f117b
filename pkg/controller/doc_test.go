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
	"os"
	"path/filepath"
	"regexp"
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
