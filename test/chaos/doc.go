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

// Package chaos is the chaos suite (make test-chaos, hack/test-chaos.sh):
// about 120 training jobs of known outcomes run on the local control plane
// while the suite kills and freezes its components, then every job's exact
// outcome and every pod's history are checked. See README.md.
package chaos
