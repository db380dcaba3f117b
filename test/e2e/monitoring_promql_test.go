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

// The selectors of PromQL queries, and just enough of the Prometheus text
// format for monitoring_test.go: the samples of a /metrics answer.

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ---- PromQL selectors (parsed by Prometheus, prometheus_test.go)

// selector is one vector selector of a query: a metric name and its label
// matchers.
type selector struct {
	Metric   string
	Matchers []matcher
}

type matcher struct{ Label, Op, Value string }

func (s selector) String() string {
	var ms []string
	for _, m := range s.Matchers {
		ms = append(ms, fmt.Sprintf("%s%s%q", m.Label, m.Op, m.Value))
	}
	return s.Metric + "{" + strings.Join(ms, ",") + "}"
}

var (
	grafanaBuiltinVar = regexp.MustCompile(`\$__[A-Za-z_]+|\$\{__[A-Za-z_]+(:[A-Za-z]+)?\}`)
	grafanaVar        = regexp.MustCompile(`\$\{[A-Za-z0-9_]+(:[A-Za-z]+)?\}|\$[A-Za-z0-9_]+|\[\[[A-Za-z0-9_]+\]\]`)
	// grafanaLabelValues is Grafana's label_values(selector, label), no
	// PromQL: the selector is its first argument.
	grafanaLabelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[A-Za-z_][A-Za-z0-9_]*\s*\)\s*$`)
)

// substituteGrafanaVariables replaces Grafana's variables by values that
// keep the query valid: intervals and ranges by 5m, the dashboard's own
// variables (which only appear in label values) by "x"; and a
// label_values() query by its selector.
func substituteGrafanaVariables(q string) string {
	if m := grafanaLabelValues.FindStringSubmatch(q); m != nil {
		q = m[1]
	}
	q = grafanaBuiltinVar.ReplaceAllString(q, "5m")
	return grafanaVar.ReplaceAllString(q, "x")
}

func TestSubstituteGrafanaVariables(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`rate(m{n=~"$namespace",k=~"${kind}"}[$__rate_interval])`: `rate(m{n=~"x",k=~"x"}[5m])`,
		`label_values(tensorstack_trainingjob_phase, namespace)`:  `tensorstack_trainingjob_phase`,
		`label_values(m{a="$x"}, namespace)`:                      `m{a="x"}`,
	} {
		if got := substituteGrafanaVariables(in); got != want {
			t.Errorf("%s: got %s, want %s", in, got, want)
		}
	}
}

// ---- the text exposition format

type sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

func (s sample) String() string {
	keys := make([]string, 0, len(s.Labels))
	for k := range s.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(s.Name + "{")
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, s.Labels[k])
	}
	b.WriteString("}")
	return b.String()
}

// scrape is a parsed /metrics answer: its samples and the families' types.
type scrape struct {
	Samples     []sample
	Types       map[string]string
	ContentType string
}

// parseExposition reads the Prometheus text format.
func parseExposition(text string) (*scrape, error) {
	out := &scrape{Types: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			if f := strings.Fields(rest); len(f) == 2 {
				out.Types[f[0]] = f[1]
			}
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		s, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", n, line, err)
		}
		out.Samples = append(out.Samples, s)
	}
	return out, sc.Err()
}

func parseSample(line string) (sample, error) {
	s := sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i <= 0 {
		return s, fmt.Errorf("no metric name")
	}
	s.Name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if strings.HasPrefix(rest, "}") {
				rest = rest[1:]
				break
			}
			eq := strings.Index(rest, "=")
			if eq <= 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return s, fmt.Errorf("bad label in %q", rest)
			}
			name := strings.TrimSpace(rest[:eq])
			rest = rest[eq+2:]
			var v strings.Builder
			j := 0
			for ; j < len(rest) && rest[j] != '"'; j++ {
				if rest[j] == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						v.WriteByte('\n')
					default:
						v.WriteByte(rest[j])
					}
					continue
				}
				v.WriteByte(rest[j])
			}
			if j >= len(rest) {
				return s, fmt.Errorf("unterminated label value")
			}
			s.Labels[name] = v.String()
			rest = rest[j+1:]
		}
	}
	fields := strings.Fields(rest)
	if len(fields) < 1 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, err
	}
	s.Value = v
	return s, nil
}

// known returns the sample names of the scrape with the labels their
// samples carry.
func (sc *scrape) known() map[string][]string {
	out := map[string][]string{}
	for _, s := range sc.Samples {
		labels := out[s.Name]
		for k := range s.Labels {
			if !slices.Contains(labels, k) {
				labels = append(labels, k)
			}
		}
		slices.Sort(labels)
		out[s.Name] = labels
	}
	return out
}

// find returns the samples named name whose labels include want.
func (sc *scrape) find(name string, want map[string]string) []sample {
	var out []sample
	for _, s := range sc.Samples {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range want {
			if s.Labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out
}

// acceptText asks for the classic text format, in which the families keep
// the names the queries use (_total included).
const acceptText = "text/plain;version=0.0.4"

// scrapeClient skips verifying the servers' certificates: the controller's
// is self-signed on the local stack, as in an installation without
// --metrics-cert-dir; the token is what the servers check.
var scrapeClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // see above
}

// getMetrics GETs url with the bearer token (none when empty) and returns
// the status and the body.
func getMetrics(ctx context.Context, url, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", acceptText)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := scrapeClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// fetchMetrics scrapes url as a Prometheus would, with the bearer token.
func fetchMetrics(ctx context.Context, url, token string) (*scrape, error) {
	code, body, err := getMetrics(ctx, url, token)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d: %s", url, code, body)
	}
	return parseExposition(string(body))
}
