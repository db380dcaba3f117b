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
	"testing"
	"time"

	"github.com/spf13/pflag"

	"tensorstack.dev/training/pkg/controller"
	"tensorstack.dev/training/pkg/controller/gang"
)

func TestFlags(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		wantErr bool
		check   func(t *testing.T, o *options)
	}{
		{name: "defaults", check: func(t *testing.T, o *options) {
			if o.concurrentSyncs != 10 || !o.leaderElect || o.leaderElectNamespace != "tensorstack-system" ||
				o.clusterDomain != "" || o.kubeconfig != "" {
				t.Errorf("defaults %+v", o)
			}
			// Unthrottled: API Priority and Fairness decides on the server.
			if o.kubeAPIQPS >= 0 || o.podEventBatchPeriod != controller.DefaultPodEventBatchPeriod {
				t.Errorf("defaults %+v", o)
			}
		}},
		{name: "the local stack's flags", args: []string{"--kubeconfig=/tmp/kc", "--leader-elect=false",
			"--metrics-bind-address=127.0.0.1:1", "--health-probe-bind-address=127.0.0.1:2", "--concurrent-syncs=8",
			"--cluster-domain=cluster.local"},
			check: func(t *testing.T, o *options) {
				if o.kubeconfig != "/tmp/kc" || o.leaderElect || o.metricsAddr != "127.0.0.1:1" ||
					o.healthAddr != "127.0.0.1:2" || o.concurrentSyncs != 8 || o.clusterDomain != "cluster.local" {
					t.Errorf("parsed %+v", o)
				}
			}},
		{name: "gang scheduling by default decided from discovery", check: func(t *testing.T, o *options) {
			if o.gangBackend != gang.SchedulerAuto || o.coschedulingSchedulerName != "scheduler-plugins-scheduler" {
				t.Errorf("gang scheduler %q, coscheduling scheduler %q", o.gangBackend, o.coschedulingSchedulerName)
			}
		}},
		{name: "coscheduling with its scheduler", args: []string{"--gang-scheduler=coscheduling", "--coscheduling-scheduler-name=gangs"},
			check: func(t *testing.T, o *options) {
				if o.gangBackend != gang.SchedulerCoscheduling || o.coschedulingSchedulerName != "gangs" {
					t.Errorf("gang scheduler %q, coscheduling scheduler %q", o.gangBackend, o.coschedulingSchedulerName)
				}
			}},
		{name: "unknown gang scheduler", args: []string{"--gang-scheduler=volcano"}, wantErr: true},
		{name: "bad coscheduling scheduler name", args: []string{"--coscheduling-scheduler-name=Not A Name"}, wantErr: true},
		{name: "no workers", args: []string{"--concurrent-syncs=0"}, wantErr: true},
		{name: "a QPS limit without a burst", args: []string{"--kube-api-qps=20", "--kube-api-burst=0"}, wantErr: true},
		{name: "negative batch period", args: []string{"--pod-event-batch-period=-1s"}, wantErr: true},
		{name: "a QPS limit", args: []string{"--kube-api-qps=20", "--kube-api-burst=30"},
			check: func(t *testing.T, o *options) {
				if o.kubeAPIQPS != 20 || o.kubeAPIBurst != 30 {
					t.Errorf("qps %v burst %d", o.kubeAPIQPS, o.kubeAPIBurst)
				}
			}},
		{name: "bad cluster domain", args: []string{"--cluster-domain=Not_A_Domain"}, wantErr: true},
		{name: "lease shorter than renew deadline", args: []string{"--leader-elect-lease-duration=5s"}, wantErr: true},
		{name: "no lease namespace", args: []string{"--leader-elect-namespace="}, wantErr: true},
		{name: "no lease namespace without leader election", args: []string{"--leader-elect=false", "--leader-elect-namespace="}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := newOptions()
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.addFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatalf("parse: %v", err)
			}
			err := o.validate()
			if (err != nil) != tc.wantErr {
				t.Fatalf("validate() = %v, want error %v", err, tc.wantErr)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
	if o := newOptions(); o.retryPeriod >= o.renewDeadline || o.renewDeadline >= o.leaseDuration || o.leaseDuration > time.Minute {
		t.Errorf("default leader election timings are inconsistent: %+v", o)
	}
}

func TestRunExitCodes(t *testing.T) {
	cases := []struct {
		args []string
		want int
	}{
		{[]string{"--version"}, 0},
		{[]string{"--help"}, 0},
		{[]string{"--no-such-flag"}, 2},
		{[]string{"--concurrent-syncs=-1"}, 2},
		{[]string{"--gang-scheduler=yes"}, 2},
	}
	for _, tc := range cases {
		if got := run(tc.args); got != tc.want {
			t.Errorf("run(%v) = %d, want %d", tc.args, got, tc.want)
		}
	}
}
