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

// Package install installs a release built by hack/release.sh as a
// platform team would: its install.yaml applied with kubectl on a cluster
// whose nodes pull from a registry, every pod of the installation a
// container on the real node. It trains, upgrades to a second release under
// load, survives killed pods and uninstalls. Run by hack/test-install.sh
// (make test-install), which builds the releases and the stack; skipped
// otherwise.
package install
