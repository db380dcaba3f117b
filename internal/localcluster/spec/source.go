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
	"os"
	"path/filepath"
	"strings"
)

// File is a file the stack writes (or, with Dir, a directory it makes).
type File struct {
	Path string
	Data []byte
	Mode os.FileMode
	Dir  bool
}

func (c Config) configFile(name string, data []byte) File {
	return File{Path: c.ConfigFile(name), Data: data, Mode: 0o644}
}

func directory(path string) File { return File{Path: path, Mode: 0o755, Dir: true} }

// Source is what the configuration files are rendered from: the templates
// of hack/local, the pinned modules' manifests, and the PKI written before.
type Source interface {
	ReadFile(path string) ([]byte, error)
	Glob(pattern string) ([]string, error)
	IsDir(path string) bool
}

// FileSystem reads the machine's files. In a dry run the PKI is not
// written: the files under Placeholders read as a stand-in naming them.
type FileSystem struct{ Placeholders string }

func (f FileSystem) ReadFile(path string) ([]byte, error) {
	if f.Placeholders != "" && strings.HasPrefix(path, f.Placeholders+string(filepath.Separator)) {
		return []byte("<" + filepath.Base(path) + ">"), nil
	}
	return os.ReadFile(path)
}

func (FileSystem) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

func (FileSystem) IsDir(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.IsDir()
}

// RelTo is path relative to base when it lies under it, for progress lines.
func RelTo(base, path string) string {
	if rel, err := filepath.Rel(base, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}
