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
	"fmt"
	"regexp"
	"strings"

	"tensorstack.dev/training/pkg/apis/batch"
)

// kind is what a template may name of a kind.
type kind struct {
	Kind, Resource, ShortName, TrainingContainer string
	Scalable                                     bool
}

func tableKinds() []kind {
	kinds := make([]kind, len(batch.Kinds))
	for i, k := range batch.Kinds {
		kinds[i] = kind{Kind: k.Kind, Resource: k.Resource, ShortName: k.ShortName, TrainingContainer: k.TrainingContainer,
			Scalable: k.Scalable}
	}
	return kinds
}

// marker is the comment before a list: its templates.
var marker = regexp.MustCompile(`^\s*# kinds \(hack/update-codegen\.sh\):\s*(.*)$`)

var (
	flowList  = regexp.MustCompile(`^(.*\[).*(\].*)$`)
	blockItem = regexp.MustCompile(`^(\s*- )((?:[A-Za-z]+: )?)\S.*$`)
)

// Rewrite writes every marked list of text from kinds.
func Rewrite(text string, kinds []kind) (string, error) {
	lines := strings.Split(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := marker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		items, err := expand(strings.Fields(m[1]), kinds)
		if err != nil {
			return "", fmt.Errorf("line %d: %w", i+1, err)
		}
		if i+1 >= len(lines) {
			return "", fmt.Errorf("line %d: no list after the marker", i+1)
		}
		next := lines[i+1]
		if f := flowList.FindStringSubmatch(next); f != nil {
			out = append(out, f[1]+strings.Join(items, ", ")+f[2])
			i++
			continue
		}
		b := blockItem.FindStringSubmatch(next)
		if b == nil {
			return "", fmt.Errorf("line %d: the marker is followed by neither [a, b] nor - a", i+2)
		}
		for _, item := range items {
			out = append(out, b[1]+b[2]+item)
		}
		// Skip the old block: the items at the same indentation.
		for i+1 < len(lines) {
			if c := blockItem.FindStringSubmatch(lines[i+1]); c == nil || c[1] != b[1] {
				break
			}
			i++
		}
	}
	return strings.Join(out, "\n"), nil
}

// expand writes the templates for every kind, kind by kind.
func expand(templates []string, kinds []kind) ([]string, error) {
	if len(templates) == 0 {
		return nil, fmt.Errorf("the marker names no template")
	}
	var items []string
	for _, k := range kinds {
		for _, t := range templates {
			t, onlyScalable := strings.CutSuffix(t, ":scalable")
			if onlyScalable && !k.Scalable {
				continue
			}
			item := strings.NewReplacer("{kind}", k.Kind, "{resource}", k.Resource, "{shortName}", k.ShortName).Replace(t)
			if strings.ContainsAny(item, "{}") {
				return nil, fmt.Errorf("template %q names no field of a kind", t)
			}
			items = append(items, item)
		}
	}
	return items, nil
}
