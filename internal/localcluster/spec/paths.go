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

package spec

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Paths are where a stack's binaries, inputs and state are.
type Paths struct {
	Repo string // the repository root
	Bin  string // _output/bin
	// Dir holds the stack's state (LOCAL_DIR, _output/local by default):
	// wiped at each start, kept after a stop for inspection.
	Dir string
	// Persist holds what outlives a stack: the real nodes' image stores.
	Persist string
	// Modules are the directories of the Go modules whose files the stack
	// reads (kwok's stages, Kueue's and scheduler-plugins' manifests).
	Modules Modules
}

// Modules are module directories in the module cache, by module path.
type Modules struct {
	Kwok, Kueue, SchedulerPlugins string
}

func (p Paths) PKI() string        { return filepath.Join(p.Dir, "pki") }
func (p Paths) Logs() string       { return filepath.Join(p.Dir, "logs") }
func (p Paths) PIDs() string       { return filepath.Join(p.Dir, "pids") }
func (p Paths) Config() string     { return filepath.Join(p.Dir, "config") }
func (p Paths) Kubeconfig() string { return filepath.Join(p.Dir, "kubeconfig") }
func (p Paths) State() string      { return filepath.Join(p.Dir, "state.json") }
func (p Paths) Hack() string       { return filepath.Join(p.Repo, "hack", "local") }
func (p Paths) Images() string     { return filepath.Join(p.Repo, "_output", "images") }
func (p Paths) LogFile(name string) string {
	return filepath.Join(p.Logs(), name+".log")
}
func (p Paths) PIDFile(name string) string {
	return filepath.Join(p.PIDs(), name+".pid")
}

// DefaultPaths are the paths of the checkout at repo, with the stack in dir
// (relative to repo unless absolute).
func DefaultPaths(repo, dir string) Paths {
	if dir == "" {
		dir = filepath.Join("_output", "local")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(repo, dir)
	}
	return Paths{
		Repo:    repo,
		Bin:     filepath.Join(repo, "_output", "bin"),
		Dir:     dir,
		Persist: dir + "-persist",
	}
}

// FindModules locates the pinned modules in the module cache; the versions
// are those the tools modules under hack/tools build the binaries from.
func FindModules(repo string) (Modules, error) {
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return Modules{}, fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	dir := func(tool, module string) (string, error) {
		version, err := requiredVersion(filepath.Join(repo, "hack", "tools", tool, "go.mod"), module)
		if err != nil {
			return "", err
		}
		return filepath.Join(strings.TrimSpace(string(cache)), module+"@"+version), nil
	}
	var m Modules
	if m.Kwok, err = dir("kwok", "sigs.k8s.io/kwok"); err != nil {
		return m, err
	}
	if m.Kueue, err = dir("kueue", "sigs.k8s.io/kueue"); err != nil {
		return m, err
	}
	m.SchedulerPlugins, err = dir("scheduler-plugins", "sigs.k8s.io/scheduler-plugins")
	return m, err
}

// requiredVersion reads the version a go.mod requires of module.
func requiredVersion(gomod, module string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(fields) >= 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require %s", gomod, module)
}
