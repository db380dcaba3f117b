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

package servingcert

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

func validConfig() Config {
	return Config{
		Secret:        types.NamespacedName{Namespace: "tensorstack-system", Name: "training-apiserver-tls"},
		APIService:    "v1beta1.batch.tensorstack.dev",
		DNSNames:      []string{"training-apiserver.tensorstack-system.svc"},
		CertDir:       "/var/run/training-apiserver/serving-cert",
		CAValidity:    DefaultCAValidity,
		CertValidity:  DefaultCertValidity,
		RenewBefore:   DefaultRenewBefore,
		CheckInterval: DefaultCheckInterval,
	}
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]struct {
		change  func(*Config)
		wantErr string
	}{
		"defaults": {change: func(*Config) {}},
		"minutes, as the install test runs": {change: func(c *Config) {
			c.CAValidity, c.CertValidity, c.RenewBefore, c.CheckInterval = time.Hour, 4*time.Minute, 3*time.Minute, 15*time.Second
		}},
		"no namespace":  {change: func(c *Config) { c.Secret.Namespace = "" }, wantErr: "namespace"},
		"no APIService": {change: func(c *Config) { c.APIService = "" }, wantErr: "APIService"},
		"no DNS name":   {change: func(c *Config) { c.DNSNames = nil }, wantErr: "DNS name"},
		"no mount":      {change: func(c *Config) { c.CertDir = "" }, wantErr: "mounted"},
		"certificate shorter than the margin": {change: func(c *Config) { c.CertValidity = c.RenewBefore },
			wantErr: "valid longer than the renewal margin"},
		"CA shorter than the margin": {change: func(c *Config) { c.CAValidity = time.Hour },
			wantErr: "valid longer than the renewal margin"},
		"checks rarer than the margin": {change: func(c *Config) { c.CheckInterval = c.RenewBefore },
			wantErr: "check interval"},
		"no margin": {change: func(c *Config) { c.RenewBefore = 0 }, wantErr: "must be positive"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := validConfig()
			tc.change(&c)
			err := c.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestCheckSecret(t *testing.T) {
	key := types.NamespacedName{Namespace: "tensorstack-system", Name: "training-apiserver-tls"}
	secret := func(annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: annotations}}
	}
	cases := map[string]struct {
		objects    []*corev1.Secret
		wantErr    string
		wantReason string
	}{
		"ours":    {objects: []*corev1.Secret{secret(map[string]string{ManagedByAnnotation: ManagedByValue})}},
		"missing": {wantErr: "does not exist", wantReason: ReasonSecretMissing},
		"someone else's": {objects: []*corev1.Secret{secret(map[string]string{"cert-manager.io/certificate-name": "x"})},
			wantErr: "lacks the annotation", wantReason: ReasonSecretNotManaged},
		"another manager named": {objects: []*corev1.Secret{secret(map[string]string{ManagedByAnnotation: "cert-manager"})},
			wantErr: "lacks the annotation", wantReason: ReasonSecretNotManaged},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, s := range tc.objects {
				if _, err := client.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			recorder := record.NewFakeRecorder(4)
			err := CheckSecret(context.Background(), client, recorder, key)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if len(recorder.Events) != 0 {
					t.Errorf("an event for a Secret that is ours: %s", <-recorder.Events)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), key.String()) {
				t.Fatalf("got %v, want an error naming %s and containing %q", err, key, tc.wantErr)
			}
			select {
			case event := <-recorder.Events:
				if !strings.HasPrefix(event, "Warning "+tc.wantReason+" ") || !strings.Contains(event, key.String()) {
					t.Errorf("event %q, want a Warning %s naming %s", event, tc.wantReason, key)
				}
			default:
				t.Errorf("no event, want a Warning %s", tc.wantReason)
			}
		})
	}
}
