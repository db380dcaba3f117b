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

// Package localcluster runs the local stack of hack/local-up.sh: a control
// plane on 127.0.0.1 (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, the optional second scheduler and Kueue, kwok with fake
// nodes, our apiserver and controller-manager) and, where the machine allows,
// real nodes.
//
// What the stack is lives in package spec, as data: each component's
// process, its steps (apply files, write files, run a command, hold a node's
// namespace ...), its readiness checks and what it comes after. This package
// carries them out. Cluster brings the stack up (every component whose After
// list is ready starts at once), down in reverse, restarts or freezes one
// process, and supervises them; the runner does a step or asks a probe
// through the Host, the only thing that acts on the machine. A dry run
// (DryRunHost) prints each step and each effect instead, and golden tests
// compare that output without root.
//
// The settings a stack was started with, and what it runs, are one typed
// file (state.json), read by Load: the scripts and the tests take them from
// there.
package localcluster
