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

// Command deploycerts makes the certificates of an installation without
// cert-manager, and the kustomize Components that install them
// (hack/deploy-certs.sh runs it; its --help says what it writes). It keeps
// its CAs, and each certificate while it is good (certs.WhyRenew), so it may
// be run again at any time. The etcd certificates are the ones the
// controller keeps when it is asked to (servingcert.DefaultEtcdConfig), so
// their names and usages are stated once.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

const usage = `Usage: hack/deploy-certs.sh [options]

Makes the certificates of an installation without cert-manager, and the
kustomize Components that install them, in DIR:

  ca.crt, ca.key        a CA for this installation only (kept and reused)
  tls.crt, tls.key      training-apiserver's serving certificate, signed by
                        that CA, for training-apiserver, its namespace's and
                        Service's names, and the cluster domain's
  secret.yaml           Secret tensorstack-system/training-apiserver-tls
  apiservice-cabundle.yaml  the CA as the APIService's caBundle
  kustomization.yaml    a Component of the two above (used by
                        artifacts/deploy/overlays/generated-certs)
  etcd/                 the etcd cluster's CA (kept and reused) and the
                        Secrets training-etcd-server, -peer and -client, as a
                        Component of its own (also used by the overlay)

A certificate is issued anew when it is missing, expires within 30 days, does
not carry exactly the names asked for, or is not signed by its CA. Then:
  kubectl apply -k artifacts/deploy/overlays/generated-certs

Options:
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr, time.Now()); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "[%s] ERROR: %v\n", time.Now().Format(time.TimeOnly), err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer, now time.Time) error {
	o, err := parseOptions(args, stdout)
	if err != nil {
		return err
	}
	log := func(format string, a ...any) {
		fmt.Fprintf(stderr, "[%s] %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, a...))
	}
	return (&maker{options: o, log: log, now: now}).make()
}
