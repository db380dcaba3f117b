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
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	etcdserverpb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver"
	"go.etcd.io/etcd/server/v3/storage/mvcc"

	"tensorstack.dev/training/pkg/registry/trainingjob"
)

// maxSocketPath is the longest unix socket path Linux accepts, less the
// terminating NUL.
const maxSocketPath = 107

// EmbeddedEtcd is a single-member etcd run inside the apiserver process, so a
// small installation needs no etcd cluster of its own. It listens only on
// unix sockets in its directory: nothing outside the host can reach it.
type EmbeddedEtcd struct {
	etcd *embed.Etcd
	// ClientURL is the address the apiserver's storage connects to.
	ClientURL string
}

const (
	embeddedEtcdSnapshotCount          = 1000
	embeddedEtcdSnapshotCatchUpEntries = 100
)

// EmbeddedEtcdSettings are the embedded etcd's settings beyond its
// directory.
type EmbeddedEtcdSettings struct {
	// UnsafeNoFsync skips every fsync (etcd's --unsafe-no-fsync): test
	// stacks only.
	UnsafeNoFsync bool
}

// StartEmbeddedEtcd starts etcd with its data and sockets in dir, reusing
// the data a previous run left there, and waits until it serves.
func StartEmbeddedEtcd(dir string, settings EmbeddedEtcdSettings) (*EmbeddedEtcd, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	clientSocket, peerSocket := filepath.Join(dir, "client.sock"), filepath.Join(dir, "peer.sock")
	if len(clientSocket) > maxSocketPath {
		return nil, fmt.Errorf("embedded etcd directory %s is too long for a unix socket path; choose a shorter --embedded-etcd-dir", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating embedded etcd directory: %w", err)
	}
	// Sockets left by a process that was killed would make the listen fail.
	for _, socket := range []string{clientSocket, peerSocket} {
		if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
			return nil, fmt.Errorf("removing stale socket: %w", err)
		}
	}

	clientURL := url.URL{Scheme: "unix", Path: clientSocket}
	peerURL := url.URL{Scheme: "unix", Path: peerSocket}
	cfg := embed.NewConfig()
	cfg.Name = "training-apiserver"
	cfg.Dir = filepath.Join(dir, "data")
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ListenMetricsUrls = nil
	cfg.LogLevel = "error"
	// Said explicitly: the storage's object size limit leaves room under it.
	cfg.MaxRequestBytes = trainingjob.EtcdMaxRequestBytes
	// etcd keeps the raft entries since its last snapshot in memory, and
	// keeps SnapshotCatchUpEntries more for followers that fall behind. A
	// member of its own has no followers, and a snapshot of it only commits
	// its database: snapshots every 1,000 writes hold the raft log to a few
	// megabytes instead of the 10,000 entries (20 MB and more) of etcd's
	// defaults, which are sized for clusters.
	cfg.SnapshotCount = embeddedEtcdSnapshotCount
	cfg.SnapshotCatchUpEntries = embeddedEtcdSnapshotCatchUpEntries
	cfg.UnsafeNoFsync = settings.UnsafeNoFsync

	etcd, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", dir, err)
	}
	select {
	case <-etcd.Server.ReadyNotify():
	case err := <-etcd.Err():
		etcd.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
	case <-time.After(time.Minute):
		etcd.Close()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within a minute", dir)
	}
	if err := compactAndDefragment(etcd.Server); err != nil {
		etcd.Close()
		return nil, fmt.Errorf("embedded etcd in %s: %w", dir, err)
	}
	return &EmbeddedEtcd{etcd: etcd, ClientURL: clientURL.String()}, nil
}

// compactAndDefragment drops the history a previous run left and gives its
// space back, before anything reads or watches.
//
// etcd's database file never shrinks by itself: the apiserver compacts old
// revisions every few minutes, which frees pages for reuse, but only a
// defragmentation returns them, and with an embedded etcd nobody else runs
// one. At start the server also maps the whole file into memory to rebuild
// its index. No reader is lost: a restarted server's watch cache begins at
// the latest revision, so older ones are of no use to its clients.
func compactAndDefragment(s *etcdserver.EtcdServer) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if rev := s.KV().Rev(); rev > 1 {
		_, err := s.Compact(ctx, &etcdserverpb.CompactionRequest{Revision: rev, Physical: true})
		if err != nil && !errors.Is(err, mvcc.ErrCompacted) {
			return fmt.Errorf("compacting to revision %d: %w", rev, err)
		}
	}
	if err := s.Defragment(); err != nil {
		return fmt.Errorf("defragmenting: %w", err)
	}
	return nil
}

// Close stops etcd and waits until its data is flushed and its sockets closed.
func (e *EmbeddedEtcd) Close() {
	e.etcd.Close()
}
