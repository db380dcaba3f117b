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

// Package spec says what a local stack is, as data: its settings and
// paths, and a pure builder for each component (Etcd, KubeAPIServer,
// RealNode, Kueue ...) that turns them into a Component: the process and its
// flags, the typed steps that come before it (Apply, WritePKI, Exec,
// HoldMountNamespace ...), the typed probes that say it is ready (GetURL,
// ConditionTrue ...) and what it starts after. Components lists the whole
// stack in start order. Nothing here acts on the machine: package
// localcluster runs the steps and asks the probes through its Host, or
// prints them in a dry run. ConfigFiles renders the configuration files from
// a Source (the repository's templates and the pinned modules).
package spec
