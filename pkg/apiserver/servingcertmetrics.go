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
	"sync"
	"sync/atomic"

	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The serving certificate's expiry is a series, so that an alert can warn
// before kube-apiserver stops trusting the APIService: a certificate that
// nobody renews (cert-manager stopped, the controller's rotator off) fails
// every request of the group at once when it expires.

var servingCertExpiryDesc = metrics.NewDesc("training_apiserver_serving_certificate_expiration_timestamp_seconds",
	"When the certificate the server presents now expires, Unix seconds; it follows the files as they are renewed.",
	nil, nil, metrics.ALPHA, "")

// servingCertCollector reads the current certificate at every scrape.
type servingCertCollector struct {
	metrics.BaseStableCollector
	cert atomic.Pointer[dynamiccertificates.CertKeyContentProvider]
}

var (
	servingCert             servingCertCollector
	registerServingCertOnce sync.Once
)

// observeServingCert makes the expiry series follow cert. A process serves
// one certificate; the last server built wins, as in tests that build
// several.
func observeServingCert(cert dynamiccertificates.CertKeyContentProvider) {
	if cert == nil {
		return
	}
	servingCert.cert.Store(&cert)
	registerServingCertOnce.Do(func() { legacyregistry.CustomMustRegister(&servingCert) })
}

func (c *servingCertCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- servingCertExpiryDesc
}

func (c *servingCertCollector) CollectWithStability(ch chan<- metrics.Metric) {
	provider := c.cert.Load()
	if provider == nil {
		return
	}
	certPEM, _ := (*provider).CurrentCertKeyContent()
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil || len(certs) == 0 {
		return
	}
	ch <- metrics.NewLazyConstMetric(servingCertExpiryDesc, metrics.GaugeValue, float64(certs[0].NotAfter.Unix()))
}
