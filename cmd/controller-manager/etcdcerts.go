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
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/controller/servingcert"
)

// etcdCertOptions are the --etcd-cert* flags: the certificates of the
// installation's etcd cluster (servingcert.EtcdKeeper).
type etcdCertOptions struct {
	service       string // NAMESPACE/NAME of the members' headless Service; empty: not kept
	members       int
	caValidity    time.Duration
	caRenewBefore time.Duration
	validity      time.Duration
	renewBefore   time.Duration
	checkInterval time.Duration
}

func newEtcdCertOptions() etcdCertOptions {
	d := servingcert.DefaultEtcdConfig("")
	return etcdCertOptions{
		members:       d.Members,
		caValidity:    d.CAValidity,
		caRenewBefore: d.CARenewBefore,
		validity:      d.CertValidity,
		renewBefore:   d.RenewBefore,
		checkInterval: d.CheckInterval,
	}
}

func (o *etcdCertOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.service, "etcd-certs", o.service,
		"NAMESPACE/SERVICE: keep the TLS certificates of the etcd cluster whose members are SERVICE-<n> behind the "+
			"headless Service SERVICE: a CA in the Secret SERVICE-ca, the members' serving certificate in SERVICE-server, "+
			"their peer certificate in SERVICE-peer and training-apiserver's client certificate in SERVICE-client, each "+
			"renewed before it expires under the same CA. Each Secret must carry the annotation "+
			servingcert.ManagedByAnnotation+"="+servingcert.ManagedByValue+"; annotating one "+
			servingcert.RenewAnnotation+"=<anything> renews it at once. Empty: another source (cert-manager) provides them.")
	fs.IntVar(&o.members, "etcd-members", o.members,
		"How many etcd members the certificates name one by one (SERVICE-0 to SERVICE-<n-1>).")
	fs.DurationVar(&o.caValidity, "etcd-cert-ca-validity", o.caValidity, "How long a new etcd CA certificate is valid.")
	fs.DurationVar(&o.caRenewBefore, "etcd-cert-ca-renew-before", o.caRenewBefore,
		"How long before its end the etcd CA certificate is renewed, with the same key: the time the pods have to "+
			"restart once before the old CA certificate they loaded ends. At least --etcd-cert-validity.")
	fs.DurationVar(&o.validity, "etcd-cert-validity", o.validity, "How long a new etcd certificate is valid.")
	fs.DurationVar(&o.renewBefore, "etcd-cert-renew-before", o.renewBefore,
		"How long before its end an etcd certificate is renewed.")
	fs.DurationVar(&o.checkInterval, "etcd-cert-check-interval", o.checkInterval,
		"How often the etcd certificates are checked (besides on every change of their Secrets); shorter than "+
			"--etcd-cert-renew-before.")
}

// config is the keeping --etcd-certs asks for; ok is false when it is
// empty.
func (o *etcdCertOptions) config() (cfg servingcert.EtcdConfig, ok bool, err error) {
	if o.service == "" {
		return cfg, false, nil
	}
	namespace, name, found := strings.Cut(o.service, "/")
	if !found || namespace == "" || name == "" || strings.Contains(name, "/") {
		return cfg, false, fmt.Errorf("--etcd-certs %q: want NAMESPACE/SERVICE", o.service)
	}
	cfg = servingcert.DefaultEtcdConfig(namespace)
	cfg.Service = name
	cfg.Members = o.members
	cfg.CAValidity, cfg.CARenewBefore = o.caValidity, o.caRenewBefore
	cfg.CertValidity, cfg.RenewBefore, cfg.CheckInterval = o.validity, o.renewBefore, o.checkInterval
	if err := cfg.Validate(); err != nil {
		return cfg, false, fmt.Errorf("--etcd-cert*: %w", err)
	}
	return cfg, true, nil
}

// startEtcdCerts keeps the etcd certificates in the background, when
// asked, until ctx ends: on every replica, leader or not, as the serving
// certificate. Secrets it must not write are reported (log and events)
// and the controller goes on without keeping them.
func startEtcdCerts(ctx context.Context, logger klog.Logger, opts *options, c *clients) {
	cfg, ok, _ := opts.etcdCerts.config() // validated with the flags
	if !ok {
		return
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.unfenced.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	keeper := servingcert.NewEtcdKeeper(c.unfenced, recorder, cfg)
	if err := keeper.CheckSecrets(ctx); err != nil {
		logger.Error(err, "Not keeping the etcd certificates")
		broadcaster.Shutdown()
		return
	}
	logger.Info("Keeping the etcd certificates", "namespace", cfg.Namespace, "secrets", cfg.Secrets(),
		"validity", cfg.CertValidity, "renewBefore", cfg.RenewBefore)
	go func() {
		defer broadcaster.Shutdown()
		keeper.Run(klog.NewContext(ctx, logger.WithName("etcd-certs")))
	}()
}
