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

// Package served says whether a cluster serves an API resource, as the
// controller-manager asks once at start-up to pick its gang scheduler and
// queueing system.
package served

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
)

// Resource is an API resource as discovery lists it.
type Resource struct {
	GroupVersion, Resource string
}

// Is says whether the cluster serves the resource. A group version the
// cluster does not know is not an error: the answer is no.
func Is(ctx context.Context, d discovery.ServerResourcesInterfaceWithContext, api Resource) (bool, error) {
	list, err := d.ServerResourcesForGroupVersionWithContext(ctx, api.GroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", api.GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == api.Resource {
			return true, nil
		}
	}
	return false, nil
}

// Discovery is what a caller of Is and GroupIs asks of a discovery client.
type Discovery interface {
	discovery.ServerGroupsInterfaceWithContext
	discovery.ServerResourcesInterfaceWithContext
}

// GroupIs says whether the cluster serves any version of the API group.
func GroupIs(ctx context.Context, d discovery.ServerGroupsInterfaceWithContext, group string) (bool, error) {
	groups, err := d.ServerGroupsWithContext(ctx)
	if err != nil {
		return false, fmt.Errorf("discovering the API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name == group && len(g.Versions) > 0 {
			return true, nil
		}
	}
	return false, nil
}
