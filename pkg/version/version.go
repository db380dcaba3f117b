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

// Package version reports the version of the TensorStack Training binaries,
// set at build time with -ldflags "-X tensorstack.dev/training/pkg/version.gitVersion=...".
package version

import (
	"fmt"
	"runtime"
)

var gitVersion = "v0.0.0-dev"

// Get returns the version the binary was built as.
func Get() string { return gitVersion }

// String is the line --version prints.
func String(component string) string {
	return fmt.Sprintf("%s %s (%s, %s/%s)", component, gitVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
