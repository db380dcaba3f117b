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

// Package trainingjobrecord serves TrainingJobRecords, what the server keeps
// of a training job once it is deleted, and writes them: the job store's
// delete hook hands each deleted job to a Keeper, which builds its record
// (bounded in size), stores it, and drops a namespace's oldest records past
// the count and the age the server is given.
//
// Records are read-only to users: get, list, watch and delete. Only the
// server creates them, so the REST storage offers no create or update.
package trainingjobrecord
