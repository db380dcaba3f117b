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

package main

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/controller/servingcert"
)

// servingCertConfig is the rotation --serving-cert-* asks for; ok is false
// when --serving-cert-secret is empty (another source, such as cert-manager,
// provides the certificate).
func (o *options) servingCertConfig() (cfg servingcert.Config, ok bool, err error) {
	if o.servingCertSecret == "" {
		return cfg, false, nil
	}
	namespace, name, found := strings.Cut(o.servingCertSecret, "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return cfg, false, fmt.Errorf("--serving-cert-secret %q: want NAMESPACE/NAME", o.servingCertSecret)
	}
	cfg = servingcert.Config{
		Secret:        types.NamespacedName{Namespace: namespace, Name: name},
		APIService:    o.servingCertAPIService,
		DNSNames:      o.servingCertDNSNames,
		CertDir:       o.servingCertDir,
		CAValidity:    o.servingCertCAValidity,
		CertValidity:  o.servingCertValidity,
		RenewBefore:   o.servingCertRenewBefore,
		CheckInterval: o.servingCertCheckInterval,
	}
	if err := cfg.Validate(); err != nil {
		return cfg, false, fmt.Errorf("--serving-cert-*: %w", err)
	}
	return cfg, true, nil
}

// startServingCert keeps the training-apiserver's certificate in the
// background, when asked, until ctx ends. A Secret it must not write is
// reported (log and event) and the controller goes on: its jobs do not
// depend on the certificate, and a fixed Secret is taken up at the next
// start.
func startServingCert(ctx context.Context, logger klog.Logger, opts *options, c *clients) {
	cfg, ok, _ := opts.servingCertConfig() // validated with the flags
	if !ok {
		return
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.unfenced.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	if err := servingcert.CheckSecret(ctx, c.unfenced, recorder, cfg.Secret); err != nil {
		logger.Error(err, "Not rotating the training-apiserver's serving certificate")
		broadcaster.Shutdown()
		return
	}
	logger.Info("Keeping the training-apiserver's serving certificate", "secret", cfg.Secret, "apiService", cfg.APIService,
		"validity", cfg.CertValidity, "renewBefore", cfg.RenewBefore)
	go func() {
		defer broadcaster.Shutdown()
		if err := servingcert.Run(ctx, c.base, cfg); err != nil {
			logger.Error(err, "The serving certificate rotator stopped")
		}
	}()
}
