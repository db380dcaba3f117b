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

// Command nodeproxy joins the local stack's control plane, on the host's
// 127.0.0.1, and its real node, whose addresses live only inside a network
// namespace the stack made:
//
//   - -forward LISTEN=DIAL listens on LISTEN inside the namespace and joins
//     each connection to DIAL on the host: the kubelet, kube-proxy, CoreDNS
//     and pods reach kube-apiserver this way.
//   - -egress SOCKET serves HTTP CONNECT on a Unix socket, for
//     kube-apiserver's egress selector: a connection to a loopback address
//     or localhost is made on the host (aggregated APIs, webhooks), any
//     other inside the namespace (kubelets for logs and exec, pods and
//     Services for the proxy verbs), or inside -egress-netns when given: a
//     node's namespace, where kube-proxy's rules turn a Service's ClusterIP
//     into a pod's address.
//
// It runs until SIGTERM or SIGINT.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"tensorstack.dev/training/test/internal/netns"
)

type forwardFlag []string

func (f *forwardFlag) String() string     { return strings.Join(*f, ",") }
func (f *forwardFlag) Set(v string) error { *f = append(*f, v); return nil }

const dialTimeout = 10 * time.Second

func main() {
	var forwards forwardFlag
	namespace := flag.String("netns", "", "the network namespace's path, e.g. /run/netns/NAME")
	egress := flag.String("egress", "", "Unix socket of the HTTP CONNECT proxy for kube-apiserver's egress")
	egressNamespace := flag.String("egress-netns", "", "the network namespace the egress dials in (default: -netns)")
	flag.Var(&forwards, "forward", "LISTEN=DIAL: listen inside the namespace, dial on the host (repeat)")
	flag.Parse()
	if *egressNamespace == "" {
		*egressNamespace = *namespace
	}
	if err := run(*namespace, *egressNamespace, *egress, forwards); err != nil {
		log.Fatalf("nodeproxy: %v", err)
	}
}

func run(namespace, egressNamespace, egress string, forwards []string) error {
	if namespace == "" {
		return errors.New("-netns is required")
	}
	if _, err := os.Stat(namespace); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var closers []func() error
	defer func() {
		for _, c := range closers {
			_ = c()
		}
	}()
	for _, f := range forwards {
		listen, dial, ok := strings.Cut(f, "=")
		if !ok {
			return fmt.Errorf("-forward %q: want LISTEN=DIAL", f)
		}
		var l net.Listener
		err := netns.Do(namespace, func() (err error) {
			l, err = net.Listen("tcp", listen)
			return err
		})
		if err != nil {
			return fmt.Errorf("listening on %s in %s: %w", listen, namespace, err)
		}
		closers = append(closers, l.Close)
		log.Printf("forwarding %s (namespace) to %s (host)", listen, dial)
		go forward(l, dial)
	}
	if egress != "" {
		_ = os.Remove(egress)
		l, err := net.Listen("unix", egress)
		if err != nil {
			return err
		}
		if _, err := os.Stat(egressNamespace); err != nil {
			return err
		}
		server := &http.Server{Handler: connectHandler{namespace: egressNamespace}, ReadHeaderTimeout: dialTimeout}
		closers = append(closers, server.Close)
		log.Printf("HTTP CONNECT on %s (host): loopback targets on the host, others in the namespace", egress)
		go func() { _ = server.Serve(l) }()
	}
	<-ctx.Done()
	return nil
}

func forward(l net.Listener, dial string) {
	for {
		in, err := l.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				log.Printf("accept on %s: %v", l.Addr(), err)
			}
			return
		}
		go func() {
			defer in.Close()
			out, err := net.DialTimeout("tcp", dial, dialTimeout)
			if err != nil {
				log.Printf("dialing %s: %v", dial, err)
				return
			}
			defer out.Close()
			netns.Pipe(in, out)
		}()
	}
}

// connectHandler tunnels a CONNECT request to its target.
type connectHandler struct{ namespace string }

func (h connectHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "only CONNECT", http.StatusMethodNotAllowed)
		return
	}
	target := r.Host
	out, err := h.dial(target)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer out.Close()
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot hijack the connection", http.StatusInternalServerError)
		return
	}
	in, buffered, err := hijacker.Hijack()
	if err != nil {
		return
	}
	defer in.Close()
	if _, err := in.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		return
	}
	if err := flushBuffered(buffered, out); err != nil {
		return
	}
	netns.Pipe(in, out)
}

// dial connects to host:port on the host when it is a loopback address or
// localhost, and inside the namespace otherwise.
func (h connectHandler) dial(target string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return net.DialTimeout("tcp", target, dialTimeout)
	}
	var conn net.Conn
	err = netns.Do(h.namespace, func() (err error) {
		conn, err = net.DialTimeout("tcp", target, dialTimeout)
		return err
	})
	return conn, err
}

// flushBuffered sends what the client sent after its CONNECT request and
// the HTTP server already read.
func flushBuffered(buffered *bufio.ReadWriter, out net.Conn) error {
	if n := buffered.Reader.Buffered(); n > 0 {
		data, err := buffered.Reader.Peek(n)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	}
	return nil
}
