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

package apiserver

import (
	"fmt"

	"k8s.io/apiserver/pkg/features"
	"k8s.io/component-base/featuregate"
)

// serverFeatureDefaults are the generic apiserver features whose default
// this server changes; --feature-gates still sets each of them.
var serverFeatureDefaults = map[string]bool{
	// The watch cache would keep a copy-on-write snapshot of its index for
	// every write still in its event history (75 s), so that the later pages
	// of a paginated LIST and LISTs at an exact resourceVersion are served
	// from memory. Every write after a snapshot copies the index nodes on
	// its path: after 10,000 creates that was 15-25 MiB of the server's heap.
	// Without snapshots those LISTs read etcd, which for the embedded etcd
	// is in the same process; the first page and unpaginated LISTs are
	// still served from the cache.
	string(features.ListFromCacheSnapshot): false,
}

// setServerFeatureDefaults applies serverFeatureDefaults to gate. It runs
// before the flags are parsed, so that --feature-gates overrides it.
func setServerFeatureDefaults(gate featuregate.MutableFeatureGate) {
	if err := gate.SetFromMap(serverFeatureDefaults); err != nil {
		panic(fmt.Sprintf("setting the server's feature defaults: %v", err))
	}
}
