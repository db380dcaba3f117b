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

// Package deploy tests the installation manifests of artifacts/deploy: that
// every overlay renders and passes the rules of a production install
// (security context, probes, resources, replicas, disruption budgets), that
// kube-apiserver accepts all of it (server-side dry run), that the serving
// certificate of hack/deploy-certs.sh is accepted through the APIService's
// caBundle, that the user roles aggregate into view/edit/admin, and that the
// controller's role is least privilege (package rbaccheck on an audit log).
//
// hack/verify-deploy.sh runs these tests with a local stack of their own;
// without the DEPLOY_* variables it sets, every test here is skipped.
package deploy
