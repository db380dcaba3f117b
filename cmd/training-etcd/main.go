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

// Command training-etcd is the program of the training-etcd image, the
// members of an installation's etcd StatefulSet: etcd itself, unchanged, and
// one more verb, "restore", which an init container runs to give a new
// member the data of a snapshot (docs/install.md, "Backup and restore").
// The image has no shell and no etcdutl, so the restore lives here.
//
//	training-etcd [etcd flags]          etcd
//	training-etcd restore [flags]       seed an empty data directory from a snapshot
package main

import (
	"fmt"
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "restore" {
		if err := runRestore(os.Args[2:], os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "training-etcd restore: %v\n", err)
			os.Exit(1)
		}
		return
	}
	etcdmain.Main(os.Args)
}
