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

// Just enough of PromQL and of the Prometheus text formats for
// monitoring_test.go: the vector selectors of a query, and the samples of a
// /metrics answer.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// ---- PromQL: the series a query selects

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

// promqlKeywords are the words of PromQL that are no series: aggregation
// operators (which may be followed by by/without instead of a parenthesis),
// binary and grouping keywords, modifiers, and the number words.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"inf": true, "nan": true,
}

// groupingKeywords are followed by a parenthesized list of label names.
var groupingKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

var (
	grafanaBuiltinVar = regexp.MustCompile(`\$__[A-Za-z_]+|\$\{__[A-Za-z_]+(:[A-Za-z]+)?\}`)
	grafanaVar        = regexp.MustCompile(`\$\{[A-Za-z0-9_]+(:[A-Za-z]+)?\}|\$[A-Za-z0-9_]+|\[\[[A-Za-z0-9_]+\]\]`)
)

// substituteGrafanaVariables replaces Grafana's variables by values that
// keep the query valid: intervals and ranges by 5m, the dashboard's own
// variables (which only appear in label values) by "x".
func substituteGrafanaVariables(q string) string {
	q = grafanaBuiltinVar.ReplaceAllString(q, "5m")
	return grafanaVar.ReplaceAllString(q, "x")
}

// promqlSelectors returns every vector selector of a PromQL expression. It
// is no parser, only enough of one for the queries shipped here: it skips
// strings, comments, durations and numbers, the label lists of by(),
// without(), on(), ignoring(), group_left() and group_right(), and any
// word followed by "(" (a function or an aggregation), and reads a word
// followed by "{" or standing alone as a metric name.
func promqlSelectors(expr string) ([]selector, error) {
	// Grafana's label_values(selector, label) names a label after the comma.
	if rest, ok := strings.CutPrefix(strings.TrimSpace(expr), "label_values("); ok {
		depth, end := 0, -1
		for i, r := range rest {
			if r == '(' || r == '{' {
				depth++
			} else if r == ')' || r == '}' {
				depth--
			}
			if depth == 0 && r == ',' || depth < 0 {
				end = i
				break
			}
		}
		if end < 0 || rest[end] == ')' {
			return nil, nil // label_values(label): no selector
		}
		expr = rest[:end]
	}
	s := []rune(expr)
	var out []selector
	i := 0
	skipSpace := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	skipString := func() error {
		q := s[i]
		i++
		for i < len(s) && s[i] != q {
			if s[i] == '\\' && q != '`' {
				i++
			}
			i++
		}
		if i >= len(s) {
			return fmt.Errorf("unterminated string in %q", expr)
		}
		i++
		return nil
	}
	skipUntil := func(open, close rune) error {
		depth := 0
		for i < len(s) {
			switch s[i] {
			case '"', '\'', '`':
				if err := skipString(); err != nil {
					return err
				}
				continue
			case open:
				depth++
			case close:
				depth--
				if depth == 0 {
					i++
					return nil
				}
			}
			i++
		}
		return fmt.Errorf("unbalanced %c%c in %q", open, close, expr)
	}
	readMatchers := func() ([]matcher, error) {
		i++ // {
		var ms []matcher
		for {
			skipSpace()
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			if i < len(s) && s[i] == '}' {
				i++
				return ms, nil
			}
			start := i
			for i < len(s) && isWordRune(s[i], i == start) {
				i++
			}
			if i == start {
				return nil, fmt.Errorf("expected a label name at %d in %q", i, expr)
			}
			m := matcher{Label: string(s[start:i])}
			skipSpace()
			for _, op := range []string{"=~", "!~", "!=", "="} {
				if strings.HasPrefix(string(s[i:]), op) {
					m.Op = op
					i += len(op)
					break
				}
			}
			if m.Op == "" {
				return nil, fmt.Errorf("expected a matcher operator after %s in %q", m.Label, expr)
			}
			skipSpace()
			if i >= len(s) || (s[i] != '"' && s[i] != '\'' && s[i] != '`') {
				return nil, fmt.Errorf("expected a quoted value for %s in %q", m.Label, expr)
			}
			vStart := i
			if err := skipString(); err != nil {
				return nil, err
			}
			v, err := strconv.Unquote(string(s[vStart:i]))
			if err != nil {
				v = string(s[vStart+1 : i-1])
			}
			m.Value = v
			ms = append(ms, m)
		}
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			if err := skipString(); err != nil {
				return nil, err
			}
		case c == '[':
			if err := skipUntil('[', ']'); err != nil {
				return nil, err
			}
		case c == '{':
			// A selector without a metric name.
			ms, err := readMatchers()
			if err != nil {
				return nil, err
			}
			out = append(out, selector{Matchers: ms})
		case c >= '0' && c <= '9' || c == '.':
			for i < len(s) && (isWordRune(s[i], false) || s[i] == '.' || (s[i] == '+' || s[i] == '-') && (s[i-1] == 'e' || s[i-1] == 'E')) {
				i++
			}
		case isWordRune(c, true):
			start := i
			for i < len(s) && isWordRune(s[i], false) {
				i++
			}
			word := string(s[start:i])
			skipSpace()
			next := rune(0)
			if i < len(s) {
				next = s[i]
			}
			switch {
			case groupingKeywords[word]:
				if next == '(' {
					if err := skipUntil('(', ')'); err != nil {
						return nil, err
					}
				}
			case promqlKeywords[strings.ToLower(word)]:
			case next == '(':
				// A function or an aggregation: its arguments follow.
			default:
				sel := selector{Metric: word}
				if next == '{' {
					ms, err := readMatchers()
					if err != nil {
						return nil, err
					}
					sel.Matchers = ms
				}
				out = append(out, sel)
			}
		default:
			i++ // operators, parentheses, commas, @
		}
	}
	return out, nil
}

func isWordRune(r rune, first bool) bool {
	return r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || !first && r >= '0' && r <= '9'
}

// TestMonitoringPromQLSelectors checks the selector extraction the tests above rely on.
func TestMonitoringPromQLSelectors(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string][]string{
		`sum by (phase) (a_b{namespace=~"x", phase="Failed"})`:                                         {`a_b{namespace=~"x",phase="Failed"}`},
		`histogram_quantile(0.99, sum by (le) (rate(h_bucket{job="j"}[5m]))) > 1e-3`:                   {`h_bucket{job="j"}`},
		`(time() - c) > 30 * 60 and on (namespace, name) p{phase="Running"} == 1 unless ignoring(x) q`: {`c{}`, `p{phase="Running"}`, `q{}`},
		`absent(up{job="training-controller-manager"} == 1)`:                                           {`up{job="training-controller-manager"}`},
		`sum(x offset 5m) by (a) or vector(0) # comment with words`:                                    {`x{}`},
		`label_values(m{a="b"}, namespace)`:                                                            {`m{a="b"}`},
		`label_values(namespace)`:                                                                      nil,
		`topk(10, m2 > 0) / ignoring (le) group_left (a, b) m3`:                                        {`m2{}`, `m3{}`},
	} {
		sels, err := promqlSelectors(expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		var got []string
		for _, s := range sels {
			got = append(got, s.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n  got  %v\n  want %v", expr, got, want)
		}
	}
	if got := substituteGrafanaVariables(`rate(m{n=~"$namespace",k=~"${kind}"}[$__rate_interval])`); got != `rate(m{n=~"x",k=~"x"}[5m])` {
		t.Errorf("substituted: %s", got)
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

// parseExposition reads the Prometheus text format. It is lenient where
// kube-state-metrics needs it to be: a family's HELP and TYPE may appear
// more than once (once per kind), and TYPE may be info or stateset.
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

// Accept headers: what Prometheus asks by default, which gets OpenMetrics
// from kube-state-metrics (its TYPE lines stateset and info are valid only
// there), and the classic text format, in which the controller's families
// keep the names the queries use (_total included).
const (
	acceptPrometheusDefault = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	acceptText              = "text/plain;version=0.0.4"
)

func fetchMetrics(ctx context.Context, url, accept string) (*scrape, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/openmetrics-text") && !strings.HasSuffix(string(body), "# EOF\n") {
		return nil, fmt.Errorf("GET %s: OpenMetrics without the final # EOF", url)
	}
	sc, err := parseExposition(string(body))
	if err != nil {
		return nil, err
	}
	sc.ContentType = resp.Header.Get("Content-Type")
	return sc, nil
}
