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
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// CertificateReloader serves a certificate from files that are replaced as it
// renews (a Secret's mount, say): each handshake looks at the files'
// modification times, and loads them again when either changed.
type CertificateReloader struct {
	certFile, keyFile string

	mu       sync.Mutex
	current  *tls.Certificate
	modified [2]time.Time
}

// NewCertificateReloader loads the certificate once, so that a bad pair
// fails at start.
func NewCertificateReloader(certFile, keyFile string) (*CertificateReloader, error) {
	r := &CertificateReloader{certFile: certFile, keyFile: keyFile}
	if _, err := r.GetCertificate(nil); err != nil {
		return nil, err
	}
	return r, nil
}

// GetCertificate is tls.Config's GetCertificate. When the files cannot be
// read again, it keeps serving the certificate it has.
func (r *CertificateReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var modified [2]time.Time
	for i, file := range []string{r.certFile, r.keyFile} {
		info, err := os.Stat(file)
		if err != nil {
			if r.current != nil {
				return r.current, nil
			}
			return nil, fmt.Errorf("reading the serving certificate: %w", err)
		}
		modified[i] = info.ModTime()
	}
	if r.current != nil && modified == r.modified {
		return r.current, nil
	}
	certificate, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		if r.current != nil {
			// A renewal half written: the next handshake tries again.
			return r.current, nil
		}
		return nil, fmt.Errorf("loading the serving certificate: %w", err)
	}
	r.current, r.modified = &certificate, modified
	return r.current, nil
}
