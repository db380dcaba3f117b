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

package apiserver

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/server/v3/storage"
)

// TestEmbeddedEtcdSeries reads the figures of a running embedded etcd under
// etcd's own names.
func TestEmbeddedEtcdSeries(t *testing.T) {
	etcd, err := StartEmbeddedEtcd(t.TempDir(), EmbeddedEtcdSettings{UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	var c embeddedEtcdCollector
	c.etcd.Store(etcd)
	registry := prometheus.NewRegistry()
	registry.MustRegister(&c)

	value := func(name string) float64 {
		t.Helper()
		families, err := registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == name && len(f.GetMetric()) == 1 {
				return f.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("no single series %s", name)
		return 0
	}
	// A member of its own elects itself at once.
	deadline := time.Now().Add(10 * time.Second)
	for value("etcd_server_has_leader") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("etcd_server_has_leader is not 1 after 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got, want := value("etcd_mvcc_db_total_size_in_bytes"), float64(etcd.etcd.Server.Backend().Size()); got != want || got <= 0 {
		t.Errorf("etcd_mvcc_db_total_size_in_bytes = %v, want the backend's size %v", got, want)
	}
	if got := value("etcd_server_quota_backend_bytes"); got != float64(storage.DefaultQuotaBytes) {
		t.Errorf("etcd_server_quota_backend_bytes = %v, want etcd's default %d", got, storage.DefaultQuotaBytes)
	}
}
