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
	"context"
	"io"
	"strings"
	"testing"

	"tensorstack.dev/training/internal/localcluster"
)

// Arguments localcluster run refuses before it starts anything.
func TestRunRefusesBeforeStarting(t *testing.T) {
	paths := localcluster.DefaultPaths(t.TempDir(), "")
	for args, want := range map[string]string{
		"":                          "usage: localcluster run",
		"true":                      "usage: localcluster run",
		"--retain --":               "usage: localcluster run",
		"--foreground -- true":      "--foreground is up's alone",
		"--dry-run --retain -- env": "--dry-run is up's alone",
	} {
		err := runCommand(context.Background(), paths, strings.Fields(args), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run %q: err %v, want one saying %q", args, err, want)
		}
	}
}
