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
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var testKinds = []kind{
	{Kind: "AJob", Resource: "ajobs", ShortName: "aj"},
	{Kind: "BJob", Resource: "bjobs", ShortName: "bj", TrainingContainer: "b", Scalable: true},
}

func TestRewrite(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"a flow list": {
			in:   "rules:\n  # kinds (hack/update-codegen.sh): {resource} {resource}/status\n  resources: [old]\n  verbs: [get]\n",
			want: "rules:\n  # kinds (hack/update-codegen.sh): {resource} {resource}/status\n  resources: [ajobs, ajobs/status, bjobs, bjobs/status]\n  verbs: [get]\n",
		},
		"a block replaced whole, scalable kinds only where asked": {
			in:   "r:\n# kinds (hack/update-codegen.sh): {resource}/scale:scalable {shortName}\n- x\n- y\n- z\nnext: 1\n",
			want: "r:\n# kinds (hack/update-codegen.sh): {resource}/scale:scalable {shortName}\n- aj\n- bjobs/scale\n- bj\nnext: 1\n",
		},
		"a block of keyed items": {
			in:   "  # kinds (hack/update-codegen.sh): {kind}.v1\n  - name: old\n  - name: older\n  other: 2\n",
			want: "  # kinds (hack/update-codegen.sh): {kind}.v1\n  - name: AJob.v1\n  - name: BJob.v1\n  other: 2\n",
		},
		"a deeper block ends the list": {
			in:   "# kinds (hack/update-codegen.sh): {kind}\n- old\n  - child\n",
			want: "# kinds (hack/update-codegen.sh): {kind}\n- AJob\n- BJob\n  - child\n",
		},
		"unmarked lists stay": {
			in:   "resources: [a, b]\n- c\n",
			want: "resources: [a, b]\n- c\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Rewrite(tc.in, testKinds)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
			if again, _ := Rewrite(got, testKinds); again != got {
				t.Errorf("a second rewrite changed it:\n%s", again)
			}
		})
	}
}

func TestRewriteRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"no template":      "# kinds (hack/update-codegen.sh):\n- a\n",
		"an unknown field": "# kinds (hack/update-codegen.sh): {plural}\n- a\n",
		"nothing after it": "# kinds (hack/update-codegen.sh): {kind}",
		"no list after it": "# kinds (hack/update-codegen.sh): {kind}\nkey: value\n",
	} {
		if _, err := Rewrite(in, testKinds); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestTheManifestsAreFresh: every marked list in the repository is as the
// table of kinds writes it (hack/update-codegen.sh rewrites them).
func TestTheManifestsAreFresh(t *testing.T) {
	marked := 0
	for _, root := range []string{"../../artifacts", "../../hack/local"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil || !marker.Match(data) && !strings.Contains(string(data), "# kinds (hack/update-codegen.sh)") {
				return err
			}
			marked++
			got, err := Rewrite(string(data), tableKinds())
			if err != nil {
				t.Errorf("%s: %v", path, err)
			} else if got != string(data) {
				t.Errorf("%s: its lists of kinds are stale: run hack/update-codegen.sh", path)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if marked < 4 {
		t.Errorf("%d files with lists of kinds, want the roles and the Kueue configuration (4)", marked)
	}
	const python = "../../python/src/tensorstack/training/_kinds.py"
	data, err := os.ReadFile(python)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != Python(tableKinds()) {
		t.Errorf("%s is stale: run hack/update-codegen.sh", python)
	}
}

func TestPython(t *testing.T) {
	got := Python(testKinds)
	for _, want := range []string{
		pythonHeader,
		`    "AJob": ("ajobs", None),`,
		`    "BJob": "bj",`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the Python table lacks %q:\n%s", want, got)
		}
	}
}
