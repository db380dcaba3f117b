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

package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"time"
)

// WhyRenew says why a certificate and its key must be issued anew, or ""
// while they are good: they make a pair, the certificate verifies with the
// roots for want's usages, is valid for longer than margin from now, and
// carries exactly want's common name, names, addresses and usages.
func WhyRenew(certPEM, keyPEM []byte, roots []*x509.Certificate, want Request, now time.Time, margin time.Duration) string {
	if len(certPEM) == 0 || len(keyPEM) == 0 {
		return "there is none"
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Sprintf("the certificate and key do not make a pair (%v)", err)
	}
	read, err := ParseCertificates(certPEM)
	if err != nil || len(read) == 0 {
		return "the certificate cannot be read"
	}
	cert := read[0]
	pool := x509.NewCertPool()
	for _, c := range roots {
		pool.AddCert(c)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: want.Usages}); err != nil {
		return fmt.Sprintf("it does not verify with the CA (%v)", err)
	}
	if !now.Add(margin).Before(cert.NotAfter) {
		return fmt.Sprintf("it expires at %s, within %v", cert.NotAfter.UTC().Format(time.RFC3339), margin)
	}
	if cert.Subject.CommonName != want.Subject.CommonName || !sameSet(cert.DNSNames, want.DNSNames) ||
		!sameSet(ipStrings(cert.IPAddresses), ipStrings(want.IPAddresses)) || !sameSet(cert.ExtKeyUsage, want.Usages) {
		return "its names or usages are not the ones asked for"
	}
	return ""
}

func sameSet[T ~int | ~string](a, b []T) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}
