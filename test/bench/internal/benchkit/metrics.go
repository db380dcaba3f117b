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

package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"
)

// Sample is one line of the Prometheus text format: a metric, its labels
// and its value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Samples are the lines of one scrape.
type Samples []Sample

// ScrapeMetrics reads the /metrics of a Kubernetes-style server through a
// REST client of it (its credentials and TLS settings).
func ScrapeMetrics(ctx context.Context, client rest.Interface) (Samples, error) {
	data, err := client.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return ParseMetrics(data)
}

// ParseMetrics parses the Prometheus text exposition format; comments and
// lines it cannot read are skipped.
func ParseMetrics(data []byte) (Samples, error) {
	var out Samples
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		if s, ok := parseSample(line); ok {
			out = append(out, s)
		}
	}
	return out, sc.Err()
}

func parseSample(line string) (Sample, bool) {
	s := Sample{Labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, false
	}
	s.Name = line[:i]
	rest := line[i:]
	if rest[0] == '{' {
		rest = rest[1:]
		for {
			rest = strings.TrimLeft(rest, " ,")
			if rest == "" {
				return s, false
			}
			if rest[0] == '}' {
				rest = rest[1:]
				break
			}
			eq := strings.IndexByte(rest, '=')
			if eq < 0 || len(rest) < eq+2 || rest[eq+1] != '"' {
				return s, false
			}
			name := strings.TrimSpace(rest[:eq])
			rest = rest[eq+2:]
			var v strings.Builder
			closed := false
			for j := 0; j < len(rest); j++ {
				c := rest[j]
				if c == '\\' && j+1 < len(rest) {
					j++
					switch rest[j] {
					case 'n':
						v.WriteByte('\n')
					default:
						v.WriteByte(rest[j])
					}
					continue
				}
				if c == '"' {
					rest = rest[j+1:]
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return s, false
			}
			s.Labels[name] = v.String()
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return s, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return s, false
	}
	s.Value = v
	return s, true
}

// Sum adds the values of the samples named name whose labels satisfy match
// (nil matches all).
func (ss Samples) Sum(name string, match func(labels map[string]string) bool) float64 {
	var total float64
	for _, s := range ss {
		if s.Name == name && (match == nil || match(s.Labels)) {
			total += s.Value
		}
	}
	return total
}

// ReadOnlyVerb says whether a verb label of apiserver_request_total is a
// read (GET, LIST, WATCH ...) rather than a write.
func ReadOnlyVerb(verb string) bool {
	switch strings.ToUpper(verb) {
	case "GET", "LIST", "WATCH", "WATCHLIST", "CONNECT", "HEAD", "OPTIONS":
		return true
	}
	return false
}
