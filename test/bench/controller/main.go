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

// Command controller is the controller benchmark of make bench-controller
// (hack/bench-controller.sh), run against the local control plane:
//
//	controller run --kind ours|training-operator --out FILE.json
//	    creates N jobs of chief 1 + ps 1 + worker 3 whose pods exit 0 after
//	    20 s, and measures how long until every pod exists, every pod
//	    started and every job succeeded; the CPU time and peak memory of the
//	    controller, the apiservers and etcd; the status writes and conflicts
//	    per job the apiserver counted; the objects made per job.
//	controller report FILE.json [PEER.json]
//	    prints the results as a markdown table, with ratios ours/peer.
//
// See docs/benchmarks.md.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCommand(os.Args[2:])
	case "report":
		err = reportCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-controller %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench-controller run|report [flags] (see docs/benchmarks.md)")
	os.Exit(2)
}
