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

// Command kindlists writes the lists of job kinds in the manifests (the
// roles of artifacts/deploy/base, the local stack's Kueue configuration)
// from the table of kinds, pkg/apis/batch.Kinds, so that a new kind needs
// no edit there. A list is marked by a comment line before it:
//
//	# kinds (hack/update-codegen.sh): {resource} {resource}/status {resource}/scale:scalable
//
// Each word is a template written once per kind, in the table's order, kind
// by kind: {kind}, {resource} and {shortName} stand for the kind's names; a
// word ending in ":scalable" is written for the kinds with a scale
// subresource only. The list is the line after the comment: either a flow
// list ("resources: [a, b]"), or a block of "- item" lines (each may have a
// key, "- name: item"), which is replaced whole.
//
// With -python FILE it also writes the Python client's table of kinds.
//
// Usage: kindlists [-check] [-python FILE] FILE...; -check writes nothing
// and fails when a file is not as it would write it. hack/update-codegen.sh
// runs it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	check := flag.Bool("check", false, "fail, writing nothing, when a file's lists are stale")
	python := flag.String("python", "", "the Python client's table of kinds, to write whole")
	flag.Parse()
	if flag.NArg() == 0 && *python == "" {
		fmt.Fprintln(os.Stderr, "usage: kindlists [-check] [-python FILE] FILE...")
		os.Exit(2)
	}
	stale := false
	write := func(path string, old []byte, text string) {
		if bytes.Equal(old, []byte(text)) {
			return
		}
		if *check {
			fmt.Fprintf(os.Stderr, "%s: its lists of kinds are stale: run hack/update-codegen.sh\n", path)
			stale = true
			return
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *python != "" {
		old, err := os.ReadFile(*python)
		if err != nil && !os.IsNotExist(err) {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		write(*python, old, Python(tableKinds()))
	}
	for _, path := range flag.Args() {
		old, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		text, err := Rewrite(string(old), tableKinds())
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", path, err)
			os.Exit(1)
		}
		write(path, old, text)
	}
	if stale {
		os.Exit(1)
	}
}
