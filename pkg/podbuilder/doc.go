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

// Package podbuilder turns a training job into the objects that run it: one
// pod per replica and the job's headless Service. It is pure: it reads the
// job and what the caller worked out about it (the topology, the gang the
// pods join, where a queue's admission places them) and returns objects,
// without a client, a cache or a clock.
//
// The controller creates what it builds; the API server's admission
// previews the same pods (Preview) to have the cluster judge them before it
// accepts a job. Both thus see one definition of a replica's pod.
//
// The kinds differ in a few answers only (Adapter): the training
// container's name and port, the rank order, the environment that wires the
// replicas together (TF_CONFIG, torchrun's variables), the entrypoint, the
// success rule, the leaders and the gang members.
package podbuilder
