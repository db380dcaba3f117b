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

// Package jobpods holds the training apiserver's admission plugins that
// judge a job by the pods it will make. The controller creates those pods
// with its own rights, later; these plugins move the decisions to the
// moment the job is written, and to the requesting user:
//
//   - TrainingJobPodAuthorization refuses a job whose author may not create
//     pods in its namespace, so that jobs are no way around RBAC on pods.
//   - TrainingJobPodValidation has kube-apiserver judge each replica type's
//     pod, exactly as the controller would build it, with a server-side dry
//     run create: core validation, Pod Security Admission, LimitRanges,
//     ServiceAccount admission and admission webhooks.
//
// A pod kube-apiserver accepted a moment ago in the same namespace, from a
// job that differs only in its name, is not dry-run again (verdicts.go):
// jobs written in bursts from one template cost one dry run per replica
// type, not one per job.
//
// Both act on creates and on updates, never on labels or status.
// TrainingJobPodValidation dry-runs the pods whenever an update changes the
// pods the controller would build. TrainingJobPodAuthorization asks for the
// pod right only when an update lets the job run pods that nobody with that
// right wrote (podsToAuthorize in previews.go): template edits, replica
// counts and debug commands of the caller's choosing, but not pause, resume
// or debug with the default command, which run what was already allowed or
// less. Each action keeps its own RBAC that way. Both are on by default;
// --disable-admission-plugins switches either off.
//
// Why a dry run under the server's own identity plus a SubjectAccessReview,
// and not one dry run impersonating the user, which would answer both
// questions in one call: impersonating any user is the power to act as
// cluster-admin, and an aggregated server should not hold it. The dry run
// needs only create on pods, which the controller already has, and the
// SubjectAccessReview goes through the server's delegated authorizer, with
// its cache. The price is that webhooks and policies that judge pods by
// their author see the server in the dry run, as they will see the
// controller when the pods are made.
//
// ServiceAccounts follow Kubernetes' own model: whoever may create pods in
// a namespace may run them as any ServiceAccount there, and the
// ServiceAccount admission of the dry run checks that the account exists.
package jobpods
