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

package spec

import (
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

func TestSettingsFromEnv(t *testing.T) {
	s, err := SettingsFromEnv(env(map[string]string{
		"LOCAL_ETCD_PORT": "2379", "LOCAL_KUEUE": "0", "LOCAL_SKIP_TRAINING": "", "LOCAL_APISERVER_EXTRA_ARGS": " --a  --b ",
		"LOCAL_REAL_NODES": "3", "LOCAL_GANG_WORKLOAD": "false",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if s.EtcdPort != 2379 || s.Kueue || s.SkipTraining || s.GangWorkload || s.RealNodes != 3 || !s.SchedulerPlugins || s.TrainingPort != 18443 {
		t.Errorf("settings = %+v", s)
	}
	if got := strings.Join(s.APIServerExtraArgs, "|"); got != "--a|--b" {
		t.Errorf("extra args = %q", got)
	}
	// Env prints what SettingsFromEnv reads back.
	back := map[string]string{}
	for _, kv := range s.Env() {
		name, value, _ := strings.Cut(kv, "=")
		back[name] = value
	}
	again, err := SettingsFromEnv(env(back))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(again.Env(), "\n") != strings.Join(s.Env(), "\n") {
		t.Errorf("a round trip through Env changed the settings:\n%v\n%v", s.Env(), again.Env())
	}
}

func TestSettingsErrorsNameTheVariable(t *testing.T) {
	for value, want := range map[string]string{
		"LOCAL_ETCD_PORT=x":                 "LOCAL_ETCD_PORT=\"x\": not a whole number",
		"LOCAL_ETCD_PORT=70000":             "LOCAL_ETCD_PORT=70000: a port is 1-65535",
		"LOCAL_KUEUE=maybe":                 "LOCAL_KUEUE=\"maybe\": want 1 or 0",
		"LOCAL_FAKE_NODES=-1":               "LOCAL_FAKE_NODES=-1: must not be negative",
		"LOCAL_REAL_NODES=9":                "LOCAL_REAL_NODES=9: at most 8",
		"LOCAL_TRAINING_APISERVER_ENV=GOGC": "\"GOGC\" is not NAME=VALUE",
		"LOCAL_TIMEOUT=0":                   "LOCAL_TIMEOUT=0: at least 1 second",
		"LOCAL_TRAINING_METRICS_SECURE=2":   "want 1 or 0",
	} {
		name, v, _ := strings.Cut(value, "=")
		_, err := SettingsFromEnv(env(map[string]string{name: v}))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to say %q", value, err, want)
		}
	}
	var s Settings
	if err := s.Set("LOCAL_NO_SUCH", "1"); err == nil || !strings.Contains(err.Error(), "unknown setting LOCAL_NO_SUCH") {
		t.Errorf("Set of an unknown setting: %v", err)
	}
}

func TestOrder(t *testing.T) {
	a, b, c := &Component{Name: "a"}, &Component{Name: "b", After: []string{"c"}}, &Component{Name: "c", After: []string{"a"}}
	got, err := order([]*Component{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, comp := range got {
		names = append(names, comp.Name)
	}
	if strings.Join(names, " ") != "a c b" {
		t.Errorf("order = %v, want a c b", names)
	}
	if _, err := order([]*Component{{Name: "x", After: []string{"y"}}}); err == nil || !strings.Contains(err.Error(), "x comes after y") {
		t.Errorf("unknown After: %v", err)
	}
	if _, err := order([]*Component{{Name: "x", After: []string{"y"}}, {Name: "y", After: []string{"x"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
}

func TestPortOffsetMovesTheDefaultPortsOnly(t *testing.T) {
	s, err := SettingsFromEnv(env(map[string]string{"LOCAL_PORT_OFFSET": "300", "LOCAL_ETCD_PORT": "2379"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.APIServerPort != 16743 || s.RegistryPort != 15300 || s.TrainingPort != 18743 {
		t.Errorf("default ports not moved by 300: apiserver %d, registry %d, training %d", s.APIServerPort, s.RegistryPort, s.TrainingPort)
	}
	if s.EtcdPort != 2379 {
		t.Errorf("an explicit port moved: etcd %d, want 2379", s.EtcdPort)
	}
	// A running stack's saved settings name every port: read back, they do not move again.
	back := map[string]string{}
	for _, kv := range s.Env() {
		name, value, _ := strings.Cut(kv, "=")
		back[name] = value
	}
	again, err := SettingsFromEnv(env(back))
	if err != nil {
		t.Fatal(err)
	}
	if again.APIServerPort != 16743 {
		t.Errorf("read back, apiserver port %d, want 16743", again.APIServerPort)
	}
	if _, err := SettingsFromEnv(env(map[string]string{"LOCAL_PORT_OFFSET": "9000"})); err == nil ||
		!strings.Contains(err.Error(), "LOCAL_PORT_OFFSET=9000") {
		t.Errorf("an offset too large: err %v, want one naming LOCAL_PORT_OFFSET", err)
	}
}
