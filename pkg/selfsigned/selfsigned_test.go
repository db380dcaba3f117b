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

package selfsigned

import (
	"testing"
	"time"
)

func TestCertificateNamesItsHosts(t *testing.T) {
	c, err := Certificate("training-dashboard", "training-dashboard-0", "127.0.0.1", "")
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.Leaf
	if leaf.Subject.CommonName != "training-dashboard" {
		t.Errorf("common name %q", leaf.Subject.CommonName)
	}
	for _, host := range []string{"training-dashboard-0", "127.0.0.1"} {
		if err := leaf.VerifyHostname(host); err != nil {
			t.Error(err)
		}
	}
	if err := leaf.VerifyHostname("elsewhere"); err == nil {
		t.Error("the certificate holds for a host it was not made for")
	}
	if len(leaf.DNSNames) != 1 || len(leaf.IPAddresses) != 1 {
		t.Errorf("names %v and addresses %v, want one of each (the empty host left out)", leaf.DNSNames, leaf.IPAddresses)
	}
	if !leaf.NotAfter.After(time.Now().Add(300 * 24 * time.Hour)) {
		t.Errorf("valid until %v, want about a year", leaf.NotAfter)
	}
	if err := leaf.CheckSignature(leaf.SignatureAlgorithm, leaf.RawTBSCertificate, leaf.Signature); err != nil {
		t.Errorf("not signed by its own key: %v", err)
	}
}
