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

package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
)

// kubeClient reads the stack's API as the admin, for readiness checks; the
// stack changes the cluster only through kubectl, so a dry run shows it.
type kubeClient struct {
	server string
	// ca, cert and key are the PKI files of the admin's client.
	ca, cert, key string

	once sync.Once
	http *http.Client
	err  error
}

func (k *kubeClient) client() (*http.Client, error) {
	k.once.Do(func() {
		k.http, k.err = tlsClient(k.ca, k.cert, k.key)
	})
	return k.http, k.err
}

// tlsClient trusts caFile and presents the client certificate, if given.
func tlsClient(caFile, certFile, keyFile string) (*http.Client, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		ca, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		cfg.RootCAs.AppendCertsFromPEM(ca)
	} else {
		// Self-signed health endpoints (kube-controller-manager, kube-scheduler).
		cfg.InsecureSkipVerify = true //nolint:gosec // loopback health checks only
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// get fetches an API path and decodes the object.
func (k *kubeClient) get(ctx context.Context, path string) (map[string]any, error) {
	hc, err := k.client()
	if err != nil {
		return nil, err
	}
	body, err := httpGet(ctx, hc, k.server+path)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	return obj, json.Unmarshal(body, &obj)
}

func conditionStatus(obj map[string]any, cond string) string {
	status, _ := obj["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == cond {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// items lists a collection.
func (k *kubeClient) items(ctx context.Context, path string) ([]map[string]any, error) {
	obj, err := k.get(ctx, path)
	if err != nil {
		return nil, err
	}
	list, _ := obj["items"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if m, ok := item.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

func httpGet(ctx context.Context, hc *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return body, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}
