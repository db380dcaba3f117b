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

// Command forward joins the host's loopback with a network namespace's, for
// the benchmarks' peer controller (Kubeflow's training-operator), which runs
// in a namespace of its own (hack/lib/peer.sh):
//
//	forward -netns NAME -into ADDR -out HOSTADDR=NSADDR
//
// It runs until SIGTERM or SIGINT.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

func main() {
	netns := flag.String("netns", "", "name of the network namespace (ip netns add NAME)")
	var rules []rule
	flag.Var(rulesFlag{rules: &rules, intoNetns: true}, "into",
		"ADDR: listen on ADDR inside the namespace, connect to the same ADDR on the host (repeatable)")
	flag.Var(rulesFlag{rules: &rules}, "out",
		"HOSTADDR=NSADDR: listen on HOSTADDR on the host, connect to NSADDR inside the namespace (repeatable)")
	flag.Parse()
	if *netns == "" {
		fmt.Fprintln(os.Stderr, "forward: -netns is required")
		os.Exit(2)
	}
	if err := forward("/var/run/netns/"+*netns, rules); err != nil {
		fmt.Fprintln(os.Stderr, "forward:", err)
		os.Exit(1)
	}
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
