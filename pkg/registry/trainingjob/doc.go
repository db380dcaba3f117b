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

// Package trainingjob is the REST storage shared by every training job kind:
// the strategies, the store with its status and action subresources, field
// selectors and the kubectl table. A kind plugs in through a Kind value (kinds.go, one row each) that
// names its types and its kind-specific rules.
//
// The actions (pause, resume, debug) are POSTs that change the job's spec,
// so they take the whole path of an update of the job (UpdatePath): the
// strategy and its validation, UPDATE admission of the job itself with its
// old and new object (so webhooks and policies guarding job updates see
// them), managedFields under a manager named after the action (so a later
// server-side apply that would undo a pause conflicts), the generation bump
// and dry-run. Their OpenAPI answers with the job.
package trainingjob
