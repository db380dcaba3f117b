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
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestEtcdCertFlags(t *testing.T) {
	cases := map[string]struct {
		args    []string
		keep    bool
		wantErr string
		check   func(t *testing.T, o *etcdCertOptions)
	}{
		"off by default": {},
		"the installation's": {
			args: []string{"--etcd-certs=tensorstack-system/training-etcd", "--etcd-members=5"},
			keep: true,
			check: func(t *testing.T, o *etcdCertOptions) {
				cfg, _, _ := o.config()
				if cfg.Namespace != "tensorstack-system" || cfg.Service != "training-etcd" || cfg.Members != 5 {
					t.Errorf("config %+v", cfg)
				}
				if got := cfg.Secrets(); strings.Join(got, ",") != "training-etcd-ca,training-etcd-server,training-etcd-peer,training-etcd-client" {
					t.Errorf("Secrets %q", got)
				}
			},
		},
		"minutes, as the install test's Helm step": {
			args: []string{"--etcd-certs=ns/etcd", "--etcd-cert-validity=4m", "--etcd-cert-renew-before=3m", "--etcd-cert-check-interval=10s"},
			keep: true,
			check: func(t *testing.T, o *etcdCertOptions) {
				if cfg, _, _ := o.config(); cfg.CertValidity != 4*time.Minute || cfg.RenewBefore != 3*time.Minute {
					t.Errorf("config %+v", cfg)
				}
			},
		},
		"no namespace":    {args: []string{"--etcd-certs=training-etcd"}, wantErr: "want NAMESPACE/SERVICE"},
		"no members":      {args: []string{"--etcd-certs=ns/etcd", "--etcd-members=0"}, wantErr: "at least one member"},
		"checks too rare": {args: []string{"--etcd-certs=ns/etcd", "--etcd-cert-check-interval=2400h"}, wantErr: "--etcd-cert*"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := newEtcdCertOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			_, keep, err := o.config()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || keep != tc.keep {
				t.Fatalf("keep %v, err %v; want keep %v", keep, err, tc.keep)
			}
			if tc.check != nil {
				tc.check(t, &o)
			}
		})
	}
}
