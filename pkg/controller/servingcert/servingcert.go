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

// Package servingcert keeps the training-apiserver's serving certificate
// without cert-manager: a CA of the installation's own and a serving
// certificate signed by it, kept in a Secret the apiserver pods mount,
// renewed well before expiry, with the CA written into the APIService's
// caBundle. The work is done by open-policy-agent/cert-controller's
// rotator, as Kueue, JobSet and Gatekeeper keep their webhooks' certificates.
//
// A renewal keeps the CA, so the caBundle kube-apiserver trusts does not
// change, and the apiserver picks up the renewed files by itself: requests
// never see a certificate they do not trust. Only a new CA (after
// CAValidity, ten years by default) changes the caBundle.
//
// Every controller-manager replica runs the rotator, leader or not, so a
// failover never delays a renewal; two replicas writing the Secret at once
// conflict and the loser reads the winner's certificate.
//
// The package keeps the etcd cluster's certificates too (etcd.go): a CA of
// their own, the members' serving and peer certificates and the apiserver's
// client certificate, each in its Secret, on the same terms.
package servingcert

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ManagedByAnnotation on the Secret says the controller-manager keeps its
// certificate. The installation creates the Secret empty with it; a Secret
// without it was written by someone else (cert-manager, a person) and is
// left alone.
const ManagedByAnnotation = "batch.tensorstack.dev/serving-cert-managed-by"

// ManagedByValue is the annotation's value.
const ManagedByValue = "training-controller-manager"

// Reasons of the events on the Secret.
const (
	ReasonSecretNotManaged = "ServingCertSecretNotManaged"
	ReasonSecretMissing    = "ServingCertSecretMissing"
)

// Defaults: a ten-year CA, a one-year certificate renewed 90 days before
// it expires, checked twice a day.
const (
	DefaultCAValidity    = 10 * 365 * 24 * time.Hour
	DefaultCertValidity  = 365 * 24 * time.Hour
	DefaultRenewBefore   = 90 * 24 * time.Hour
	DefaultCheckInterval = 12 * time.Hour
)

// Config says which certificate to keep, and for how long.
type Config struct {
	// Secret holds ca.crt, ca.key, tls.crt and tls.key.
	Secret types.NamespacedName
	// APIService gets the CA in its caBundle.
	APIService string
	// DNSNames are the certificate's names, the first its common name: the
	// apiserver's Service as kube-apiserver dials it.
	DNSNames []string
	// CertDir is where the Secret is mounted in this pod. The rotator
	// checks that the files reach the pods (it gives up rotating when they
	// never do, as then nothing it writes would be served).
	CertDir string
	// CAValidity and CertValidity are how long a new CA and a new serving
	// certificate are valid; each is renewed RenewBefore its end, checked
	// every CheckInterval.
	CAValidity, CertValidity, RenewBefore, CheckInterval time.Duration
}

// Validate reports a configuration under which a renewal could come late.
func (c Config) Validate() error {
	var errs []error
	if c.Secret.Namespace == "" || c.Secret.Name == "" {
		errs = append(errs, fmt.Errorf("the Secret needs a namespace and a name, got %q", c.Secret))
	}
	if c.APIService == "" {
		errs = append(errs, errors.New("the APIService name is empty"))
	}
	if c.CertDir == "" {
		errs = append(errs, errors.New("the directory the Secret is mounted at is empty"))
	}
	if len(c.DNSNames) == 0 || c.DNSNames[0] == "" {
		errs = append(errs, errors.New("the certificate needs at least one DNS name"))
	}
	if c.RenewBefore <= 0 || c.CheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("the renewal margin (%v) and the check interval (%v) must be positive", c.RenewBefore, c.CheckInterval))
	}
	if c.CertValidity <= c.RenewBefore || c.CAValidity <= c.RenewBefore {
		errs = append(errs, fmt.Errorf("the certificate (%v) and the CA (%v) must be valid longer than the renewal margin (%v), "+
			"or every check renews them", c.CertValidity, c.CAValidity, c.RenewBefore))
	}
	if c.CheckInterval >= c.RenewBefore {
		errs = append(errs, fmt.Errorf("the check interval (%v) must be shorter than the renewal margin (%v), "+
			"or a certificate can expire between two checks", c.CheckInterval, c.RenewBefore))
	}
	return errors.Join(errs...)
}

// CheckSecret makes sure the Secret is the controller-manager's to write:
// it exists and carries ManagedByAnnotation. Otherwise it records a Warning
// event naming the Secret (on it, when it exists) and returns why.
func CheckSecret(ctx context.Context, kube kubernetes.Interface, recorder record.EventRecorder, key types.NamespacedName) error {
	secret, err := kube.CoreV1().Secrets(key.Namespace).Get(ctx, key.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		err := fmt.Errorf("the serving certificate's Secret %s does not exist; the installation creates it, empty, "+
			"with the annotation %s=%s", key, ManagedByAnnotation, ManagedByValue)
		// The event has nothing of ours to hang on but the namespace.
		recorder.Event(&corev1.ObjectReference{Kind: "Namespace", Name: key.Namespace, APIVersion: "v1"},
			corev1.EventTypeWarning, ReasonSecretMissing, err.Error())
		return err
	}
	if err != nil {
		return fmt.Errorf("reading the serving certificate's Secret %s: %w", key, err)
	}
	if secret.Annotations[ManagedByAnnotation] != ManagedByValue {
		err := fmt.Errorf("the Secret %s lacks the annotation %s=%s: someone else writes its certificate, so the "+
			"controller-manager does not rotate it (annotate it to hand it over, or drop --serving-cert-secret)",
			key, ManagedByAnnotation, ManagedByValue)
		recorder.Event(secret, corev1.EventTypeWarning, ReasonSecretNotManaged, err.Error())
		return err
	}
	return nil
}

// Run keeps the certificate until ctx ends. cfg must not be fenced by the
// leader election: every replica writes.
func Run(ctx context.Context, cfg *rest.Config, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	ctrllog.SetLogger(klog.FromContext(ctx).WithName("serving-cert"))
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		LeaderElection:         false,
	})
	if err != nil {
		return fmt.Errorf("the certificate rotator's manager: %w", err)
	}
	err = rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:              c.Secret,
		CertDir:                c.CertDir,
		CAName:                 "tensorstack-training-ca",
		CAOrganization:         "TensorStack Training",
		DNSName:                c.DNSNames[0],
		ExtraDNSNames:          c.DNSNames[1:],
		IsReady:                make(chan struct{}),
		Webhooks:               []rotator.WebhookInfo{{Name: c.APIService, Type: rotator.APIService}},
		FieldOwner:             ManagedByValue,
		RequireLeaderElection:  false,
		CaCertDuration:         c.CAValidity,
		ServerCertDuration:     c.CertValidity,
		LookaheadInterval:      c.RenewBefore,
		RotationCheckFrequency: c.CheckInterval,
		ControllerName:         "training-apiserver-serving-cert",
	})
	if err != nil {
		return fmt.Errorf("the certificate rotator: %w", err)
	}
	return mgr.Start(ctx)
}
