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
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"time"
)

// nameServer answers every connection with its name and keeps it open.
func nameServer(t *testing.T, name string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprintln(c, name)
				_, _ = bufio.NewReader(c).ReadString('\n') // until the client goes
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

func dialName(t *testing.T, port int) (net.Conn, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	name, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the backend's name: %v", err)
	}
	return c, name[:len(name)-1]
}

func TestBalancerTakesBackendsInTurn(t *testing.T) {
	a, b := nameServer(t, "a"), nameServer(t, "b")
	bal, err := newBalancer(0)
	if err != nil {
		t.Fatal(err)
	}
	defer bal.close()
	port := bal.listener.Addr().(*net.TCPAddr).Port
	bal.setBackends(a, b)

	var got []string
	var conns []net.Conn
	for i := 0; i < 4; i++ {
		c, name := dialName(t, port)
		conns = append(conns, c)
		got = append(got, name)
	}
	if fmt.Sprint(got) != "[a b a b]" {
		t.Errorf("connections went to %v, want [a b a b]", got)
	}
	if bal.connections(a) != 2 || bal.connections(b) != 2 {
		t.Errorf("counted %d and %d connections, want 2 and 2", bal.connections(a), bal.connections(b))
	}

	// New backends close what is open, so clients connect again.
	bal.setBackends(b)
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("connection %d still open after the backends changed (%v)", i, err)
		}
		_ = c.Close()
	}
	c, name := dialName(t, port)
	defer c.Close()
	if name != "b" {
		t.Errorf("after the change a connection went to %s, want b", name)
	}
}
