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

// Command alignmodules raises the dependencies of the tools modules under
// hack/tools to the versions the main module builds with.
//
// Go's build cache shares a compiled package between two builds only when the
// package and everything it imports are the same versions. The tools modules
// (kube-apiserver, kubelet, etcd, Helm, ...) and this repository depend on the
// same libraries (client-go, grpc, x/net, ...), usually a patch or two apart,
// so a cold `make test` compiled those libraries once per module. Raising a
// tool's lower versions to the main module's (never lowering any) lets one
// compilation serve all of them; it changes what a tool runs with by patch
// releases of its libraries only, never the tool's own code.
//
//	go run ./hack/alignmodules hack/tools/kube hack/tools/etcd   # raise
//	go run ./hack/alignmodules -verify hack/tools/kube ...       # fail when a raise is due
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// module is the part of `go list -deps` this command reads.
type module struct {
	Path     string
	Version  string
	Main     bool
	Replaced bool // a replace directive pins it
}

func main() {
	verify := flag.Bool("verify", false, "report the raises that are due and fail, without changing anything")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [-verify] TOOLS_MODULE_DIR...\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	mainList, err := buildList(".")
	if err != nil {
		fail(err)
	}
	stale := false
	for _, dir := range flag.Args() {
		if *verify {
			raises, err := raisesFor(dir, mainList)
			if err != nil {
				fail(err)
			}
			for _, r := range raises {
				fmt.Printf("%s: %s is behind the main module's %s\n", dir, r.current, r.target)
				stale = true
			}
			continue
		}
		if err := align(dir, mainList); err != nil {
			fail(err)
		}
	}
	if stale {
		fmt.Println("run: go run ./hack/alignmodules " + strings.Join(flag.Args(), " "))
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "alignmodules:", err)
	os.Exit(1)
}

// raise is one module a tools module builds at a lower version than the
// main module.
type raise struct {
	current string // path@version in the tools module
	target  string // path@version in the main module
}

// raisesFor lists the modules whose packages dir builds at a lower version
// than main does. Modules a replace directive pins are left alone: a replace
// pins on purpose (the Kubernetes staging modules of k8s.io/kubernetes).
func raisesFor(dir string, main map[string]module) ([]raise, error) {
	tool, err := buildList(dir)
	if err != nil {
		return nil, err
	}
	var raises []raise
	for path, t := range tool {
		m, ok := main[path]
		if !ok || t.Main || m.Main || t.Replaced || m.Replaced {
			continue
		}
		have, want := t.Version, m.Version
		if semver.Compare(have, want) < 0 {
			raises = append(raises, raise{current: path + "@" + have, target: path + "@" + want})
		}
	}
	sort.Slice(raises, func(i, j int) bool { return raises[i].target < raises[j].target })
	return raises, nil
}

// align raises dir's modules until none is behind. A raise can pull other
// modules up with it, but never past main's versions (main's build list
// already satisfies their requirements), so a few rounds reach a fixed point.
func align(dir string, main map[string]module) error {
	for round := 1; round <= 5; round++ {
		raises, err := raisesFor(dir, main)
		if err != nil {
			return err
		}
		if len(raises) == 0 {
			return nil
		}
		args := []string{"get"}
		for _, r := range raises {
			fmt.Printf("%s: %s -> %s\n", dir, r.current, r.target)
			args = append(args, r.target)
		}
		if err := run(dir, "go", args...); err != nil {
			return err
		}
		// go get records sums for what it resolved; tidy adds those of
		// the packages the raised modules now import.
		if err := run(dir, "go", "mod", "tidy"); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s: still behind the main module after 5 rounds of go get", dir)
}

// buildList is the modules that provide the packages of dir's module, its
// tools and their dependencies (`go list -deps all`), by path. Modules that
// provide no package do not matter to the build cache, and go mod tidy would
// drop a raise of one again.
func buildList(dir string) (map[string]module, error) {
	var out bytes.Buffer
	cmd := exec.Command("go", "list", "-mod=readonly", "-deps", "-f", "{{with .Module}}{{.Path}} {{.Version}} {{.Main}} {{with .Replace}}{{.Version}}{{end}}\n{{end}}", "all")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list all in %s: %w", dir, err)
	}
	modules := map[string]module{}
	for _, line := range strings.Split(out.String(), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 {
			continue
		}
		m := module{Path: fields[0], Version: fields[1], Main: fields[2] == "true"}
		m.Replaced = len(fields) == 4
		modules[m.Path] = m
	}
	return modules, nil
}

func run(dir, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s in %s: %w", name, strings.Join(args, " "), dir, err)
	}
	return nil
}
