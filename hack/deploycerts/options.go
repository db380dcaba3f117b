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
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// options are the command's flags, with the names a run before it kept.
type options struct {
	out           string
	clusterDomain string
	sans          []string
	days          int
	renew, newCA  bool
}

type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// defaultOut is where the certificates go unless --out says otherwise.
func defaultOut() string {
	if dir := os.Getenv("OUTPUT_DIR"); dir != "" {
		return filepath.Join(dir, "deploy-certs")
	}
	return filepath.Join("_output", "deploy-certs")
}

func parseOptions(args []string, stdout io.Writer) (*options, error) {
	o := &options{}
	var sans stringsFlag
	fs := flag.NewFlagSet("deploy-certs", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprint(stdout, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.out, "out", defaultOut(), "where to write; keep it out of version control: it holds private keys")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "", "the cluster's DNS domain (default cluster.local, or the last run's)")
	fs.Var(&sans, "san", "one more DNS name or IP address of the serving certificate (repeatable; default the last run's)")
	fs.IntVar(&o.days, "days", 365, "how many days the serving and etcd certificates are valid")
	fs.BoolVar(&o.renew, "renew", false, "issue new serving and etcd certificates even if the current ones are good")
	fs.BoolVar(&o.newCA, "new-ca", false, "start over with new CAs: clients must get the new caBundle (apply the overlay "+
		"again), and etcd and training-apiserver must restart to trust the new etcd CA")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unknown argument %q (see --help)", fs.Arg(0))
	}
	if o.days < 1 {
		return nil, fmt.Errorf("--days must be a positive number, got %d", o.days)
	}
	saved, err := readNames(filepath.Join(o.out, namesFile))
	if err != nil {
		return nil, err
	}
	if o.clusterDomain == "" {
		o.clusterDomain = saved.clusterDomain
	}
	if o.clusterDomain == "" {
		o.clusterDomain = "cluster.local"
	}
	o.sans = sans
	if len(sans) == 0 {
		o.sans = saved.sans
	}
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(o.clusterDomain); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--cluster-domain %q: %s", o.clusterDomain, strings.Join(msgs, "; ")))
	}
	for _, san := range o.sans {
		if net.ParseIP(san) != nil {
			continue
		}
		if msgs := validation.IsDNS1123Subdomain(strings.TrimPrefix(san, "*.")); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--san %q is neither an IP address nor a DNS name: %s", san, strings.Join(msgs, "; ")))
		}
	}
	return o, errors.Join(errs...)
}

// namesFile keeps the serving certificate's names, for the runs after.
const namesFile = "names.env"

type names struct {
	clusterDomain string
	sans          []string
}

// readNames reads what writeNames wrote (as the shell script before it
// did): saved_cluster_domain=D and saved_extra_sans=(A B ). A missing file
// holds no names.
func readNames(path string) (names, error) {
	var n names
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return n, nil
	}
	if err != nil {
		return n, err
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		key, value, ok := strings.Cut(strings.TrimSpace(scanner.Text()), "=")
		switch {
		case !ok || strings.HasPrefix(key, "#"):
		case key == "saved_cluster_domain":
			n.clusterDomain = strings.Trim(value, `'"`)
		case key == "saved_extra_sans":
			n.sans = strings.Fields(strings.Trim(value, "()"))
		}
	}
	return n, scanner.Err()
}

func writeNames(path string, n names) error {
	data := fmt.Sprintf("# Written by hack/deploy-certs.sh: the names of the serving certificate.\n"+
		"saved_cluster_domain=%s\nsaved_extra_sans=(%s)\n", n.clusterDomain, strings.Join(n.sans, " "))
	return os.WriteFile(path, []byte(data), 0o600)
}
