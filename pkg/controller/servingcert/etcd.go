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

// The certificates of the installation's etcd cluster, kept as kubeadm
// keeps kube-apiserver's etcd: a CA of its own, a serving certificate for
// the members' client port, a peer certificate for the members' port to
// each other, and a client certificate for training-apiserver; etcd
// requires a certificate of that CA on both ports.
//
// Each lives in a Secret of its own, which the installation creates empty
// with ManagedByAnnotation: the CA's key is in <service>-ca only, which no
// pod mounts; the others hold tls.crt, tls.key and ca.crt (the CA's
// certificate) and are mounted by the pods that use them.
//
// What a rotation must not break, and why it does not: etcd and its Go
// client (k8s.io/apiserver's storage backend) read their own certificate
// and key from the files on every TLS handshake (go.etcd.io/etcd/client/pkg
// transport.TLSInfo: GetCertificate and GetClientCertificate), but read the
// CA file once, at start. So a renewed certificate is used by the next
// connection without a restart, and must be signed by the CA the other side
// loaded when it started. Certificates are therefore renewed under the same
// CA, and the CA itself is renewed with the same key and name: a process
// that loaded the old CA certificate verifies certificates signed under the
// renewed one, until the old CA certificate's own end. The CA is renewed
// CARenewBefore before that end (a year by default), which is how long every
// pod has to restart once (any rollout does it). Existing connections are
// never re-verified, so they survive a rotation too.
//
// Only a lost CA key (its Secret emptied) makes a new CA: the pods then need
// a restart to trust it, which the controller-manager says in an event.

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/certs"
)

// RenewAnnotation on a certificate's Secret asks for a new certificate now
// (any value): the controller-manager issues one and removes the
// annotation in the same write.
const RenewAnnotation = "batch.tensorstack.dev/renew"

// Reasons of the events about etcd certificates, on their Secrets.
const (
	ReasonEtcdCertificateIssued = "EtcdCertificateIssued"
	ReasonEtcdCAIssued          = "EtcdCAIssued"
	ReasonEtcdCARenewed         = "EtcdCARenewed"
)

// Defaults of the etcd certificates: as the serving certificate's, and the
// CA renewed a year before its end.
const (
	DefaultEtcdCARenewBefore = 365 * 24 * time.Hour
	// DefaultEtcdClientCommonName names training-apiserver in its client
	// certificate.
	DefaultEtcdClientCommonName = "training-apiserver"
)

// Keys of the Secrets.
const (
	caCertKey = "ca.crt"
	caKeyKey  = "ca.key"
)

// backdate starts a certificate's validity a little before its issue, for
// clocks that lag.
const backdate = 5 * time.Minute

// organization is the subject's organization of every etcd certificate.
const organization = "TensorStack Training"

// EtcdConfig says which etcd certificates to keep.
type EtcdConfig struct {
	// Namespace holds the Secrets and the etcd members.
	Namespace string
	// Service is the members' headless Service (training-etcd): the
	// members are <Service>-<n>.<Service>.<Namespace>.svc, and it names the
	// Secrets: <Service>-ca, -server, -peer and -client.
	Service string
	// Members is how many members the certificates name one by one.
	Members int
	// ClientCommonName is the client certificate's subject.
	ClientCommonName string
	// CAValidity is how long a new CA is valid; it is renewed, keeping its
	// key, CARenewBefore its end.
	CAValidity, CARenewBefore time.Duration
	// CertValidity is how long a new certificate is valid; it is renewed
	// RenewBefore its end, checked every CheckInterval.
	CertValidity, RenewBefore, CheckInterval time.Duration
}

// DefaultEtcdConfig is the installation's etcd: training-etcd, three
// members.
func DefaultEtcdConfig(namespace string) EtcdConfig {
	return EtcdConfig{
		Namespace:        namespace,
		Service:          "training-etcd",
		Members:          3,
		ClientCommonName: DefaultEtcdClientCommonName,
		CAValidity:       DefaultCAValidity,
		CARenewBefore:    DefaultEtcdCARenewBefore,
		CertValidity:     DefaultCertValidity,
		RenewBefore:      DefaultRenewBefore,
		CheckInterval:    DefaultCheckInterval,
	}
}

// Validate reports a configuration under which a renewal could come late,
// or a certificate outlive its CA.
func (c EtcdConfig) Validate() error {
	var errs []error
	if c.Namespace == "" || c.Service == "" {
		errs = append(errs, fmt.Errorf("the etcd Service needs a namespace and a name, got %q/%q", c.Namespace, c.Service))
	}
	if c.Members < 1 {
		errs = append(errs, fmt.Errorf("the etcd cluster needs at least one member, got %d", c.Members))
	}
	if c.ClientCommonName == "" {
		errs = append(errs, errors.New("the client certificate needs a common name"))
	}
	if c.RenewBefore <= 0 || c.CARenewBefore <= 0 || c.CheckInterval <= 0 {
		errs = append(errs, fmt.Errorf("the renewal margins (%v, CA %v) and the check interval (%v) must be positive",
			c.RenewBefore, c.CARenewBefore, c.CheckInterval))
	}
	if c.CertValidity <= c.RenewBefore {
		errs = append(errs, fmt.Errorf("the certificates (%v) must be valid longer than their renewal margin (%v), "+
			"or every check renews them", c.CertValidity, c.RenewBefore))
	}
	if c.CAValidity <= c.CARenewBefore {
		errs = append(errs, fmt.Errorf("the CA (%v) must be valid longer than its renewal margin (%v)", c.CAValidity, c.CARenewBefore))
	}
	if c.CARenewBefore < c.CertValidity {
		errs = append(errs, fmt.Errorf("the CA's renewal margin (%v) must be at least the certificates' validity (%v), "+
			"so that no certificate outlives the CA certificate it was issued under", c.CARenewBefore, c.CertValidity))
	}
	if c.CheckInterval >= c.RenewBefore {
		errs = append(errs, fmt.Errorf("the check interval (%v) must be shorter than the renewal margin (%v), "+
			"or a certificate can expire between two checks", c.CheckInterval, c.RenewBefore))
	}
	return errors.Join(errs...)
}

// CASecret is the Secret of the CA's certificate and key.
func (c EtcdConfig) CASecret() string { return c.Service + "-ca" }

// EtcdCertificate is one certificate signed by the etcd CA.
type EtcdCertificate struct {
	// Role is server, peer or client.
	Role        string
	Secret      string
	CommonName  string
	DNSNames    []string
	IPAddresses []net.IP
	// Usages are the extended key usages: a member's certificates serve
	// and are also presented as clients (to its peers, and by etcd's own
	// gateway to its client port); the apiserver's is a client's only.
	Usages []x509.ExtKeyUsage
}

// Request is what the certificate is issued for, from now (backdated a
// little) for validity.
func (c EtcdCertificate) Request(now time.Time, validity time.Duration) certs.Request {
	return certs.Request{
		Subject:     pkix.Name{CommonName: c.CommonName, Organization: []string{organization}},
		DNSNames:    c.DNSNames,
		IPAddresses: c.IPAddresses,
		Usages:      c.Usages,
		NotBefore:   now.Add(-backdate),
		NotAfter:    now.Add(validity),
	}
}

// Certificates are the certificates the CA signs.
//
// The members' names: etcd checks a peer's certificate against the address
// it connects from, by looking up the certificate's DNS names (a wildcard
// cannot be looked up), so each member is named, and the client port is
// dialled at <member>.<Service>.<Namespace>.svc. localhost and 127.0.0.1
// are for etcdctl through kubectl port-forward.
func (c EtcdConfig) Certificates() []EtcdCertificate {
	domain := fmt.Sprintf("%s.%s.svc", c.Service, c.Namespace)
	var members []string
	for i := range c.Members {
		members = append(members, fmt.Sprintf("%s-%d.%s", c.Service, i, domain))
	}
	memberNames := append(members, "*."+domain, domain)
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	return []EtcdCertificate{
		{
			Role: "server", Secret: c.Service + "-server", CommonName: c.Service,
			DNSNames:    append(slices.Clone(memberNames), "localhost"),
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1).To4(), net.IPv6loopback},
			Usages:      both,
		},
		{
			Role: "peer", Secret: c.Service + "-peer", CommonName: c.PeerCommonName(),
			DNSNames: slices.Clone(memberNames),
			Usages:   both,
		},
		{
			Role: "client", Secret: c.Service + "-client", CommonName: c.ClientCommonName,
			Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		},
	}
}

// PeerCommonName is the peer certificate's subject, which etcd's
// --peer-cert-allowed-cn admits on the peer port: the client certificate,
// signed by the same CA, is refused there.
func (c EtcdConfig) PeerCommonName() string { return c.Service + "-peer" }

// Secrets are the names of every Secret kept, the CA's first.
func (c EtcdConfig) Secrets() []string {
	names := []string{c.CASecret()}
	for _, cert := range c.Certificates() {
		names = append(names, cert.Secret)
	}
	return names
}

// ca is the etcd CA: its key, and its certificates, the current one first
// and then earlier ones of the same key that are still valid (the bundle
// written as ca.crt).
type ca struct {
	key    crypto.Signer
	certs  []*x509.Certificate
	bundle []byte
}

func (a *ca) current() *x509.Certificate { return a.certs[0] }

// parseCA reads a CA Secret's ca.crt and ca.key: nil when they do not make
// a CA (missing, unparseable, the key not the certificate's).
func parseCA(data map[string][]byte, now time.Time) *ca {
	key, err := certs.ParseKey(data[caKeyKey])
	if err != nil {
		return nil
	}
	read, err := certs.ParseCertificates(data[caCertKey])
	if err != nil || len(read) == 0 {
		return nil
	}
	a := &ca{key: key}
	for _, cert := range read {
		if cert.IsCA && certs.SamePublicKey(cert.PublicKey, key.Public()) && now.Before(cert.NotAfter) {
			a.certs = append(a.certs, cert)
		}
	}
	if len(a.certs) == 0 || a.certs[0] != read[0] {
		return nil // the first, current, certificate must be good
	}
	a.bundle = certs.EncodeCertificates(a.certs...)
	return a
}

// newCA makes a CA certificate for key (a new key when nil), keeping the
// still valid certificates of prev of the same key after it in the bundle.
func newCA(key crypto.Signer, prev *ca, subject string, now time.Time, validity time.Duration) (*ca, error) {
	made, err := certs.NewCA(key, pkix.Name{CommonName: subject, Organization: []string{organization}},
		now.Add(-backdate), now.Add(validity))
	if err != nil {
		return nil, err
	}
	a := &ca{key: made.Key, certs: []*x509.Certificate{made.Cert}}
	if prev != nil && certs.SamePublicKey(prev.key.Public(), made.Key.Public()) {
		for _, c := range prev.certs {
			if now.Before(c.NotAfter) {
				a.certs = append(a.certs, c)
			}
		}
	}
	a.bundle = certs.EncodeCertificates(a.certs...)
	return a, nil
}

// issue signs a new certificate and key for spec, valid for validity.
func (a *ca) issue(spec EtcdCertificate, now time.Time, validity time.Duration) (certPEM, keyPEM []byte, err error) {
	authority := certs.CA{Key: a.key, Cert: a.current()}
	issued, err := authority.Issue(spec.Request(now, validity))
	if err != nil {
		return nil, nil, fmt.Errorf("the %s certificate: %w", spec.Role, err)
	}
	return issued.CertPEM, issued.KeyPEM, nil
}

// whyRenew says why a Secret's certificate must be issued anew, or "" when
// it is good (certs.WhyRenew).
func (a *ca) whyRenew(spec EtcdCertificate, data map[string][]byte, now time.Time, renewBefore time.Duration) string {
	return certs.WhyRenew(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey], a.certs, spec.Request(now, 0), now, renewBefore)
}

// EtcdKeeper keeps the etcd certificates.
type EtcdKeeper struct {
	kube     kubernetes.Interface
	recorder record.EventRecorder
	cfg      EtcdConfig
	now      func() time.Time
}

// NewEtcdKeeper returns a keeper of cfg's certificates; cfg must be valid.
func NewEtcdKeeper(kube kubernetes.Interface, recorder record.EventRecorder, cfg EtcdConfig) *EtcdKeeper {
	return &EtcdKeeper{kube: kube, recorder: recorder, cfg: cfg, now: time.Now}
}

// CheckSecrets makes sure every Secret is the controller-manager's to
// write, as CheckSecret does for the serving certificate's.
func (k *EtcdKeeper) CheckSecrets(ctx context.Context) error {
	var errs []error
	for _, name := range k.cfg.Secrets() {
		errs = append(errs, CheckSecret(ctx, k.kube, k.recorder, keyOf(k.cfg.Namespace, name)))
	}
	return errors.Join(errs...)
}

// Sync brings the CA and every certificate up to date: what is missing,
// expiring, asked for anew (RenewAnnotation) or not what the configuration
// says is issued, and every Secret gets the CA's current bundle. Writes
// conflict when another replica wrote first; the next Sync reads its work.
func (k *EtcdKeeper) Sync(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	now := k.now()
	secrets := k.kube.CoreV1().Secrets(k.cfg.Namespace)
	caSecret, err := secrets.Get(ctx, k.cfg.CASecret(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the etcd CA's Secret: %w", err)
	}
	if caSecret.Annotations[ManagedByAnnotation] != ManagedByValue {
		return fmt.Errorf("the Secret %s/%s lacks the annotation %s=%s", caSecret.Namespace, caSecret.Name, ManagedByAnnotation, ManagedByValue)
	}
	authority := parseCA(caSecret.Data, now)
	_, renewAsked := caSecret.Annotations[RenewAnnotation]
	var reason, message string
	switch {
	case authority == nil:
		if authority, err = newCA(nil, nil, k.caSubject(), now, k.cfg.CAValidity); err != nil {
			return err
		}
		reason = ReasonEtcdCAIssued
		message = fmt.Sprintf("Issued a new etcd CA, valid until %s. If the etcd members and training-apiserver ran with "+
			"another CA, restart them to trust this one (kubectl -n %s rollout restart statefulset/%s deployment/training-apiserver)",
			authority.current().NotAfter.UTC().Format(time.RFC3339), k.cfg.Namespace, k.cfg.Service)
	case renewAsked || !now.Add(k.cfg.CARenewBefore).Before(authority.current().NotAfter):
		// The same key and name: what verified under the old
		// certificate verifies under the new one.
		old := authority.current().NotAfter
		if authority, err = newCA(authority.key, authority, k.caSubject(), now, k.cfg.CAValidity); err != nil {
			return err
		}
		reason = ReasonEtcdCARenewed
		message = fmt.Sprintf("Renewed the etcd CA's certificate with the same key, valid until %s; processes that "+
			"loaded the old one (until %s) verify certificates under the new one, and must restart before then",
			authority.current().NotAfter.UTC().Format(time.RFC3339), old.UTC().Format(time.RFC3339))
	}
	// Also when a past CA certificate has ended and leaves the bundle.
	if reason != "" || !bytes.Equal(caSecret.Data[caCertKey], authority.bundle) {
		keyPEM, err := certs.EncodeKey(authority.key)
		if err != nil {
			return err
		}
		updated := caSecret.DeepCopy()
		updated.Data = map[string][]byte{caCertKey: authority.bundle, caKeyKey: keyPEM}
		delete(updated.Annotations, RenewAnnotation)
		if _, err := secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: ManagedByValue}); err != nil {
			return fmt.Errorf("writing the etcd CA: %w", err)
		}
		if reason == "" {
			logger.Info("Dropped ended certificates from the etcd CA's bundle", "secret", keyOf(caSecret.Namespace, caSecret.Name))
		} else {
			logger.Info(message, "secret", keyOf(caSecret.Namespace, caSecret.Name))
			k.recorder.Event(caSecret, corev1.EventTypeNormal, reason, message)
		}
	}

	var errs []error
	for _, spec := range k.cfg.Certificates() {
		if err := k.syncCertificate(ctx, authority, spec, now); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (k *EtcdKeeper) caSubject() string { return "tensorstack-training-etcd-ca" }

func (k *EtcdKeeper) syncCertificate(ctx context.Context, authority *ca, spec EtcdCertificate, now time.Time) error {
	secrets := k.kube.CoreV1().Secrets(k.cfg.Namespace)
	secret, err := secrets.Get(ctx, spec.Secret, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the etcd %s certificate's Secret: %w", spec.Role, err)
	}
	if secret.Annotations[ManagedByAnnotation] != ManagedByValue {
		return fmt.Errorf("the Secret %s/%s lacks the annotation %s=%s", secret.Namespace, secret.Name, ManagedByAnnotation, ManagedByValue)
	}
	why := authority.whyRenew(spec, secret.Data, now, k.cfg.RenewBefore)
	if _, asked := secret.Annotations[RenewAnnotation]; asked && why == "" {
		why = "asked for by the annotation " + RenewAnnotation
	}
	if why == "" && bytes.Equal(secret.Data[caCertKey], authority.bundle) {
		return nil
	}
	updated := secret.DeepCopy()
	delete(updated.Annotations, RenewAnnotation)
	if updated.Data == nil {
		updated.Data = map[string][]byte{}
	}
	updated.Data[caCertKey] = authority.bundle
	var notAfter time.Time
	if why != "" {
		certPEM, keyPEM, err := authority.issue(spec, now, k.cfg.CertValidity)
		if err != nil {
			return err
		}
		updated.Data[corev1.TLSCertKey], updated.Data[corev1.TLSPrivateKeyKey] = certPEM, keyPEM
		notAfter = now.Add(k.cfg.CertValidity)
	}
	if _, err := secrets.Update(ctx, updated, metav1.UpdateOptions{FieldManager: ManagedByValue}); err != nil {
		return fmt.Errorf("writing the etcd %s certificate: %w", spec.Role, err)
	}
	if why == "" {
		klog.FromContext(ctx).Info("Wrote the etcd CA's current certificates", "secret", keyOf(secret.Namespace, secret.Name))
		return nil
	}
	message := fmt.Sprintf("Issued the etcd %s certificate (%s), valid until %s", spec.Role, why, notAfter.UTC().Format(time.RFC3339))
	klog.FromContext(ctx).Info(message, "secret", keyOf(secret.Namespace, secret.Name))
	k.recorder.Event(secret, corev1.EventTypeNormal, ReasonEtcdCertificateIssued, message)
	return nil
}

// Run keeps the certificates until ctx ends: a Sync at once, on every
// change of one of the Secrets, every CheckInterval, and after a failure
// with a back-off. Every replica runs it, leader or not.
func (k *EtcdKeeper) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	trigger := make(chan struct{}, 1)
	poke := func(obj any) {
		if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tombstone.Obj
		}
		if s, ok := obj.(*corev1.Secret); ok && slices.Contains(k.cfg.Secrets(), s.Name) {
			select {
			case trigger <- struct{}{}:
			default:
			}
		}
	}
	factory := informers.NewSharedInformerFactoryWithOptions(k.kube, 0, informers.WithNamespace(k.cfg.Namespace))
	informer := factory.Core().V1().Secrets().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, obj any) { poke(obj) },
		DeleteFunc: poke,
	}); err != nil {
		logger.Error(err, "Watching the etcd certificates' Secrets; checking every interval only")
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()

	const firstRetry = time.Second
	retry := firstRetry
	for {
		wait := k.cfg.CheckInterval
		if err := k.Sync(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			// A conflict is another replica's write: read it soon.
			if !apierrors.IsConflict(err) {
				logger.Error(err, "Keeping the etcd certificates", "retryIn", retry)
			}
			wait = min(retry, wait)
			retry = min(2*retry, k.cfg.CheckInterval)
		} else {
			retry = firstRetry
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-trigger:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Helpers.

func keyOf(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}
