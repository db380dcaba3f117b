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
//	controller forward -netns NAME -into ADDR -out HOST=NS
//	    joins the host's loopback with a network namespace's (the peer
//	    controller runs in one, see hack/bench-controller.sh).
//
// See docs/benchmarks.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
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
	case "forward":
		err = forwardCommand(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-controller %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: bench-controller run|report|forward [flags] (see docs/benchmarks.md)")
	os.Exit(2)
}

// rulesFlag collects -into and -out forwarding rules.
type rulesFlag struct {
	rules     *[]rule
	intoNetns bool
}

func (f rulesFlag) String() string { return "" }

func (f rulesFlag) Set(v string) error {
	if f.intoNetns {
		*f.rules = append(*f.rules, rule{listen: v, dial: v, intoNetns: true})
		return nil
	}
	host, ns, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want HOSTADDR=NSADDR, got %q", v)
	}
	*f.rules = append(*f.rules, rule{listen: host, dial: ns})
	return nil
}

func forwardCommand(args []string) error {
	fs := flag.NewFlagSet("forward", flag.ExitOnError)
	netns := fs.String("netns", "", "name of the network namespace (ip netns add NAME)")
	var rules []rule
	fs.Var(rulesFlag{rules: &rules, intoNetns: true}, "into",
		"ADDR: listen on ADDR inside the namespace, connect to the same ADDR on the host (repeatable)")
	fs.Var(rulesFlag{rules: &rules}, "out",
		"HOSTADDR=NSADDR: listen on HOSTADDR on the host, connect to NSADDR inside the namespace (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *netns == "" {
		return fmt.Errorf("-netns is required")
	}
	return forward("/var/run/netns/"+*netns, rules)
}
