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
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// restoreOptions are the flags of "training-etcd restore". The member flags
// take the values the member's etcd is started with.
type restoreOptions struct {
	snapshot            string
	dataDir             string
	name                string
	initialCluster      string
	peerURLs            string
	initialClusterToken string
	// bumpRevision moves the restored revision this far ahead and marks
	// everything before it compacted, so that no client that watched the
	// old cluster sees resourceVersions go back (as Kubernetes' own etcd
	// restore advice says).
	bumpRevision uint64
}

func parseRestoreFlags(args []string, stderr io.Writer) (*restoreOptions, error) {
	o := &restoreOptions{}
	fs := flag.NewFlagSet("training-etcd restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.snapshot, "snapshot", "", "The snapshot to restore, as etcdctl snapshot save writes it.")
	fs.StringVar(&o.dataDir, "data-dir", "", "The member's data directory (etcd's --data-dir). Left alone when it already holds data.")
	fs.StringVar(&o.name, "name", "", "The member's name (etcd's --name).")
	fs.StringVar(&o.initialCluster, "initial-cluster", "", "Every member as name=peer URL (etcd's --initial-cluster).")
	fs.StringVar(&o.peerURLs, "initial-advertise-peer-urls", "", "The member's peer URLs (etcd's --initial-advertise-peer-urls).")
	fs.StringVar(&o.initialClusterToken, "initial-cluster-token", "", "The cluster's token (etcd's --initial-cluster-token).")
	fs.Uint64Var(&o.bumpRevision, "bump-revision", 1_000_000_000, "How far to move the revision ahead; 0 keeps the snapshot's.")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, required := range []struct{ flag, value string }{
		{"snapshot", o.snapshot}, {"data-dir", o.dataDir}, {"name", o.name}, {"initial-cluster", o.initialCluster},
		{"initial-advertise-peer-urls", o.peerURLs}, {"initial-cluster-token", o.initialClusterToken},
	} {
		if required.value == "" {
			return nil, fmt.Errorf("--%s is required", required.flag)
		}
	}
	return o, nil
}

// runRestore restores the snapshot into the data directory unless that
// already holds a member: a restarted pod, or a member restored before,
// keeps its data. The restore writes next to the directory and renames, so
// that a restore cut short leaves no half-written member behind.
func runRestore(args []string, stderr io.Writer) error {
	o, err := parseRestoreFlags(args, stderr)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(o.dataDir, "member")); err == nil {
		fmt.Fprintf(stderr, "training-etcd restore: %s already holds a member; not restoring\n", o.dataDir)
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// An empty data directory (a new volume's) is replaced; one with files
	// but no member is not ours to delete.
	if entries, err := os.ReadDir(o.dataDir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s holds files but no etcd member; move them away first", o.dataDir)
	}
	if f, err := os.Open(o.snapshot); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("the snapshot: %w (this runs as user %d: make the file readable by it, e.g. mode 0644)", err, os.Getuid())
		}
		return fmt.Errorf("the snapshot: %w", err)
	} else {
		_ = f.Close()
	}
	staging := o.dataDir + ".restoring"
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	logger, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	if err := snapshot.NewV3(logger).Restore(snapshot.RestoreConfig{
		SnapshotPath:        o.snapshot,
		Name:                o.name,
		OutputDataDir:       staging,
		PeerURLs:            strings.Split(o.peerURLs, ","),
		InitialCluster:      o.initialCluster,
		InitialClusterToken: o.initialClusterToken,
		RevisionBump:        o.bumpRevision,
		MarkCompacted:       o.bumpRevision > 0,
	}); err != nil {
		return fmt.Errorf("restoring %s: %w", o.snapshot, err)
	}
	if err := os.Remove(o.dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Rename(staging, o.dataDir); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "training-etcd restore: %s restored into %s as member %s\n", o.snapshot, o.dataDir, o.name)
	return nil
}
