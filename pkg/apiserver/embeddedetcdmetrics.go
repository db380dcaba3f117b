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
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/server/v3/storage"
	"k8s.io/component-base/metrics/legacyregistry"
)

// An embedded etcd serves no metrics of its own (it has no port to serve
// them on), so the server exports the three figures the alerts on etcd
// read, under the names etcd gives them: whether the member has a leader,
// its database's size, and its space quota. The same alerts then cover an
// installed etcd cluster and an embedded one.
//
// etcd registers these names in client_golang's default registry, which
// nothing serves; the collector goes into the served registry only
// (legacyregistry.CustomMustRegister would add it to both, and clash).

var (
	embeddedEtcdHasLeaderDesc = prometheus.NewDesc("etcd_server_has_leader",
		"Whether the embedded etcd member has a leader (1) or not (0).", nil, nil)
	embeddedEtcdDBSizeDesc = prometheus.NewDesc("etcd_mvcc_db_total_size_in_bytes",
		"Size of the embedded etcd's database, in bytes, free pages included.", nil, nil)
	embeddedEtcdQuotaDesc = prometheus.NewDesc("etcd_server_quota_backend_bytes",
		"The embedded etcd's space quota, in bytes: at it, etcd refuses writes.", nil, nil)
)

type embeddedEtcdCollector struct {
	etcd atomic.Pointer[EmbeddedEtcd]
}

var (
	embeddedEtcdStats        embeddedEtcdCollector
	registerEmbeddedEtcdOnce sync.Once
)

// observeEmbeddedEtcd exports the figures of e; the last one observed wins.
func observeEmbeddedEtcd(e *EmbeddedEtcd) {
	if e == nil || e.etcd == nil {
		return
	}
	embeddedEtcdStats.etcd.Store(e)
	registerEmbeddedEtcdOnce.Do(func() { legacyregistry.Registerer().MustRegister(&embeddedEtcdStats) })
}

func (c *embeddedEtcdCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- embeddedEtcdHasLeaderDesc
	ch <- embeddedEtcdDBSizeDesc
	ch <- embeddedEtcdQuotaDesc
}

func (c *embeddedEtcdCollector) Collect(ch chan<- prometheus.Metric) {
	e := c.etcd.Load()
	if e == nil {
		return
	}
	server := e.etcd.Server
	hasLeader := 0.0
	if server.Leader() != 0 {
		hasLeader = 1
	}
	quota := server.Cfg.QuotaBackendBytes
	if quota <= 0 {
		quota = storage.DefaultQuotaBytes
	}
	ch <- prometheus.MustNewConstMetric(embeddedEtcdHasLeaderDesc, prometheus.GaugeValue, hasLeader)
	ch <- prometheus.MustNewConstMetric(embeddedEtcdDBSizeDesc, prometheus.GaugeValue, float64(server.Backend().Size()))
	ch <- prometheus.MustNewConstMetric(embeddedEtcdQuotaDesc, prometheus.GaugeValue, float64(quota))
}
