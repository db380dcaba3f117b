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

package dashboard

import (
	"tensorstack.dev/training/pkg/jobclient"
)

// jobKind is one training job kind as the dashboard's URLs and pages name
// it: by its plural resource, as the Kubernetes API does.
type jobKind = *jobclient.Kind

// jobClient is a kind's client behind the TrainingJob view, so that each
// handler is written once for every kind.
type jobClient = jobclient.Client

// jobKinds lists every kind, in the order the list shows them.
var jobKinds = jobclient.Kinds

// kindByResource finds the kind a URL's resource segment names.
func kindByResource(resource string) (jobKind, bool) { return jobclient.ByResource(resource) }

// kindByKind finds the kind a manifest's kind field names.
func kindByKind(kind string) (jobKind, bool) { return jobclient.ByKind(kind) }

// pageKind is a kind as the pages are told it (GET /api/session): the
// list's filter and the create page name the kinds the server knows, so
// that a new kind needs no change to the pages.
type pageKind struct {
	Kind      string `json:"kind"`
	Resource  string `json:"resource"`
	ShortName string `json:"shortName"`
}

// kindsForPages are every kind, in the order the list shows them.
func kindsForPages() []pageKind {
	kinds := make([]pageKind, len(jobKinds))
	for i, k := range jobKinds {
		kinds[i] = pageKind{Kind: k.Name, Resource: k.Resource, ShortName: k.ShortName}
	}
	return kinds
}
