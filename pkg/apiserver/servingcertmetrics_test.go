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
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics/testutil"
)

func TestServingCertExpirySeries(t *testing.T) {
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("training-apiserver", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	content, err := dynamiccertificates.NewStaticCertKeyContent("test", certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	var provider dynamiccertificates.CertKeyContentProvider = content
	var c servingCertCollector
	c.cert.Store(&provider)
	want := fmt.Sprintf(`
# HELP training_apiserver_serving_certificate_expiration_timestamp_seconds [ALPHA] When the certificate the server presents now expires, Unix seconds; it follows the files as they are renewed.
# TYPE training_apiserver_serving_certificate_expiration_timestamp_seconds gauge
training_apiserver_serving_certificate_expiration_timestamp_seconds %d
`, certs[0].NotAfter.Unix())
	if err := testutil.CustomCollectAndCompare(&c, strings.NewReader(want),
		"training_apiserver_serving_certificate_expiration_timestamp_seconds"); err != nil {
		t.Fatal(err)
	}
}
