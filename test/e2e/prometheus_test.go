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

package e2e

// A real Prometheus (hack/build-test-binaries.sh builds it from the module
// proxy) for the monitoring tests: its PromQL parser reads the dashboard's
// and the alerts' queries, and, against the local stack, it scrapes our
// servers with the shipped scrape configuration and evaluates the shipped
// alerts.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binaries, relative to the repository root.
const (
	prometheusBinary = "_output/bin/prometheus"
	promtoolBinary   = "_output/bin/promtool"
)

// binaryOrSkip is the path of a test binary, or skips the test when it is
// not built.
func binaryOrSkip(t *testing.T, root, rel string) string {
	t.Helper()
	bin := filepath.Join(root, rel)
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s is not built (hack/build-test-binaries.sh builds it): %v", rel, err)
	}
	return bin
}

// freePort is a port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// prometheus is a Prometheus server the test started.
type prometheus struct {
	url string
	dir string
}

// startPrometheus runs Prometheus on 127.0.0.1 with the configuration
// config (prometheus.yml) and any further files in dir, until the test ends.
func startPrometheus(t *testing.T, root, config string, files map[string]string) *prometheus {
	t.Helper()
	bin := binaryOrSkip(t, root, prometheusBinary)
	dir := t.TempDir()
	files["prometheus.yml"] = config
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
		"--log.level=warn")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &prometheus{url: fmt.Sprintf("http://127.0.0.1:%d", port), dir: dir}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = logFile.Close()
		if t.Failed() {
			if data, err := os.ReadFile(logPath); err == nil {
				t.Logf("prometheus log:\n%s", tail(string(data), 40))
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-exited:
			data, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus exited:\n%s", tail(string(data), 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			data, _ := os.ReadFile(logPath)
			t.Fatalf("prometheus not ready after 30 s: %v\n%s", err, tail(string(data), 40))
		}
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// api calls the HTTP API and decodes its data into out.
func (p *prometheus) api(ctx context.Context, path string, params url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path+"?"+params.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var envelope struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("%s: %s: %w", path, body, err)
	}
	if envelope.Status != "success" {
		return fmt.Errorf("%s: %s", path, envelope.Error)
	}
	return json.Unmarshal(envelope.Data, out)
}

// selectors parses a PromQL expression with Prometheus' own parser
// (/api/v1/parse_query) and returns its vector selectors, those of range
// vectors included.
func (p *prometheus) selectors(ctx context.Context, expr string) ([]selector, error) {
	var tree any
	if err := p.api(ctx, "/api/v1/parse_query", url.Values{"query": {expr}}, &tree); err != nil {
		return nil, err
	}
	var out []selector
	var walk func(node any)
	walk = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			if typ, _ := n["type"].(string); typ == "vectorSelector" || typ == "matrixSelector" {
				out = append(out, selectorOf(n))
				return
			}
			for _, child := range n {
				walk(child)
			}
		case []any:
			for _, child := range n {
				walk(child)
			}
		}
	}
	walk(tree)
	return out, nil
}

// selectorOf reads a selector node of parse_query's tree.
func selectorOf(n map[string]any) selector {
	s := selector{}
	s.Metric, _ = n["name"].(string)
	matchers, _ := n["matchers"].([]any)
	for _, m := range matchers {
		m, _ := m.(map[string]any)
		name, _ := m["name"].(string)
		if name == "__name__" {
			continue
		}
		op, _ := m["type"].(string)
		value, _ := m["value"].(string)
		s.Matchers = append(s.Matchers, matcher{Label: name, Op: op, Value: value})
	}
	return s
}

// promSample is one series of an instant query's vector result.
type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// query runs an instant query and returns its vector.
func (p *prometheus) query(ctx context.Context, expr string) ([]promSample, error) {
	var res struct {
		ResultType string       `json:"resultType"`
		Result     []promSample `json:"result"`
	}
	if err := p.api(ctx, "/api/v1/query", url.Values{"query": {expr}}, &res); err != nil {
		return nil, err
	}
	if res.ResultType != "vector" {
		return nil, fmt.Errorf("%s: a %s, not a vector", expr, res.ResultType)
	}
	return res.Result, nil
}

// promAlert is an alert as /api/v1/alerts lists it.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    time.Time         `json:"activeAt"`
}

// firing returns the alerts of that name that fire now.
func (p *prometheus) firing(ctx context.Context, name string) ([]promAlert, error) {
	var res struct {
		Alerts []promAlert `json:"alerts"`
	}
	if err := p.api(ctx, "/api/v1/alerts", nil, &res); err != nil {
		return nil, err
	}
	var out []promAlert
	for _, a := range res.Alerts {
		if a.Labels["alertname"] == name && a.State == "firing" {
			out = append(out, a)
		}
	}
	return out, nil
}

// promTarget is a scrape target as /api/v1/targets lists it.
type promTarget struct {
	Labels    map[string]string `json:"labels"`
	ScrapeURL string            `json:"scrapeUrl"`
	Health    string            `json:"health"`
	LastError string            `json:"lastError"`
}

func (p *prometheus) targets(ctx context.Context) ([]promTarget, error) {
	var res struct {
		ActiveTargets []promTarget `json:"activeTargets"`
	}
	err := p.api(ctx, "/api/v1/targets", url.Values{"state": {"active"}}, &res)
	return res.ActiveTargets, err
}
