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

package deploy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// TestDashboardNetworkPolicy: the dashboard in the cluster takes connections
// on its HTTPS port alone.
func TestDashboardNetworkPolicy(t *testing.T) {
	e := staticEnv(t)
	r := e.render(t, overlay{name: "managed-certs+dashboard", dir: deployDir + "/overlays/managed-certs",
		components: []string{deployDir + "/components/dashboard"}})
	const name = "training-dashboard"
	deployment := mustGet[appsv1.Deployment](t, r, "Deployment", systemNamespace, name)
	policy := mustGet[networkingv1.NetworkPolicy](t, r, "NetworkPolicy", systemNamespace, name)
	checkSelects(t, "NetworkPolicy "+name, &policy.Spec.PodSelector, &deployment.Spec.Template)
	if len(policy.Spec.PolicyTypes) != 1 || policy.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("policy types %v, want Ingress", policy.Spec.PolicyTypes)
	}
	if len(policy.Spec.Ingress) != 1 || len(policy.Spec.Ingress[0].Ports) != 1 {
		t.Fatalf("ingress %+v, want one rule with one port", policy.Spec.Ingress)
	}
	port := policy.Spec.Ingress[0].Ports[0].Port
	served := deployment.Spec.Template.Spec.Containers[0].Ports
	if port == nil || len(served) != 1 || port.String() != served[0].Name {
		t.Errorf("the policy admits port %v, want the dashboard's one port %+v", port, served)
	}
}
