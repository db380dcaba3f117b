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

package controller

import (
	"context"

	"tensorstack.dev/training/pkg/controller/owner"
)

// ensureService creates the job's Service, or adopts an orphan that carries
// the job's labels. A Service of that name that belongs to something else is
// reported and left alone.
func (r *reconciler) ensureService(ctx context.Context) error {
	_, err := owner.Ensure(ctx, r.jobOwner, owner.Services(r.c.kubeClient, r.c.serviceIndexer, r.key.Namespace,
		"replicas may not find each other"), r.builder().Service())
	return err
}
