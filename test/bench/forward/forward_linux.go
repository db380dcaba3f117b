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
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"tensorstack.dev/training/test/bench/internal/benchkit"
	"tensorstack.dev/training/test/internal/netns"
)

// A forwarding rule: connections accepted on listen (in one network
// namespace) are joined to dial (in the other).
type rule struct {
	listen, dial string
	// intoNetns: listen inside the namespace, dial on the host; else the
	// other way round.
	intoNetns bool
}

// forward joins the host's loopback and a network namespace's loopback
// without any listener outside 127.0.0.1: a process in the namespace (the
// peer controller) reaches kube-apiserver on its own 127.0.0.1, and
// kube-apiserver reaches the peer's webhook server on the host's 127.0.0.1.
// It runs until SIGTERM or SIGINT.
func forward(netnsPath string, rules []rule) error {
	if len(rules) == 0 {
		return errors.New("no forwarding rules")
	}
	if _, err := os.Stat(netnsPath); err != nil {
		return fmt.Errorf("network namespace: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var listeners []net.Listener
	for _, r := range rules {
		var l net.Listener
		var err error
		if r.intoNetns {
			err = netns.Do(netnsPath, func() error {
				l, err = net.Listen("tcp", r.listen)
				return err
			})
		} else {
			l, err = net.Listen("tcp", r.listen)
		}
		if err != nil {
			return fmt.Errorf("listening on %s: %w", r.listen, err)
		}
		where := "host"
		if r.intoNetns {
			where = "namespace"
		}
		benchkit.Logf("forwarding %s (%s) to %s", r.listen, where, r.dial)
		listeners = append(listeners, l)
		go serve(l, r, netnsPath)
	}
	<-ctx.Done()
	for _, l := range listeners {
		_ = l.Close()
	}
	return nil
}

func serve(l net.Listener, r rule, netnsPath string) {
	for {
		in, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				benchkit.Logf("accept on %s: %v", r.listen, err)
			}
			return
		}
		go func() {
			defer in.Close()
			var out net.Conn
			dial := func() error {
				var err error
				out, err = net.DialTimeout("tcp", r.dial, 10*time.Second)
				return err
			}
			var err error
			if r.intoNetns {
				err = dial()
			} else {
				err = netns.Do(netnsPath, dial)
			}
			if err != nil {
				benchkit.Logf("dialing %s: %v", r.dial, err)
				return
			}
			defer out.Close()
			netns.Pipe(in, out)
		}()
	}
}
