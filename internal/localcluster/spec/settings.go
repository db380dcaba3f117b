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
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Settings are the LOCAL_* values a stack starts with. Each field names its
// environment variable and default in its tag: the one place both live.
// Booleans take 1/0 (true/false, yes/no); lists are space separated.
type Settings struct {
	// PortOffset moves every port that is not set explicitly by as much, so that stacks in other LOCAL_DIRs run
	// beside this one (make test runs its suites side by side).
	PortOffset           int `env:"LOCAL_PORT_OFFSET" default:"0"`
	EtcdPort             int `env:"LOCAL_ETCD_PORT" default:"23790"`
	EtcdPeerPort         int `env:"LOCAL_ETCD_PEER_PORT" default:"23791"`
	APIServerPort        int `env:"LOCAL_APISERVER_PORT" default:"16443"`
	KCMPort              int `env:"LOCAL_KCM_PORT" default:"16257"`
	SchedulerPort        int `env:"LOCAL_SCHEDULER_PORT" default:"16259"`
	SchedulerPluginsPort int `env:"LOCAL_SCHEDULER_PLUGINS_PORT" default:"16261"`
	KwokPort             int `env:"LOCAL_KWOK_PORT" default:"16247"`
	TrainingPort         int `env:"LOCAL_TRAINING_PORT" default:"18443"`
	TrainingMetricsPort  int `env:"LOCAL_TRAINING_METRICS_PORT" default:"18080"`
	TrainingHealthPort   int `env:"LOCAL_TRAINING_HEALTH_PORT" default:"18081"`
	KueueWebhookPort     int `env:"LOCAL_KUEUE_WEBHOOK_PORT" default:"16263"`
	KueueMetricsPort     int `env:"LOCAL_KUEUE_METRICS_PORT" default:"16264"`
	KueueHealthPort      int `env:"LOCAL_KUEUE_HEALTH_PORT" default:"16265"`
	RegistryPort         int `env:"LOCAL_REGISTRY_PORT" default:"15000"`

	// TrainingMetricsSecure serves the controller's metrics over HTTPS with
	// delegated authentication, as installed; off, plain HTTP on 127.0.0.1.
	TrainingMetricsSecure bool `env:"LOCAL_TRAINING_METRICS_SECURE" default:"1"`

	FakeNodes  int    `env:"LOCAL_FAKE_NODES" default:"10"`
	NodeCPU    string `env:"LOCAL_NODE_CPU" default:"1000"`
	NodeMemory string `env:"LOCAL_NODE_MEMORY" default:"4Ti"`
	NodePods   int    `env:"LOCAL_NODE_PODS" default:"500"`
	NodeGPUs   int    `env:"LOCAL_NODE_GPUS" default:"64"`

	SkipTraining bool `env:"LOCAL_SKIP_TRAINING" default:"0"`
	// GangWorkload: Kubernetes' Workload API and kube-scheduler's gang
	// scheduling (feature gate GenericWorkload).
	GangWorkload bool `env:"LOCAL_GANG_WORKLOAD" default:"1"`
	// SchedulerPlugins: the second scheduler, scheduler-plugins' coscheduling.
	SchedulerPlugins bool `env:"LOCAL_SCHEDULER_PLUGINS" default:"1"`

	Kueue                 bool   `env:"LOCAL_KUEUE" default:"1"`
	KueueGPUQuota         int    `env:"LOCAL_KUEUE_GPU_QUOTA" default:"8"`
	KueuePodsReadyTimeout string `env:"LOCAL_KUEUE_PODS_READY_TIMEOUT" default:"30m"`
	// KueueV1beta1 serves kueue.x-k8s.io/v1beta1 beside v1beta2 (Kueue
	// v0.19); off marks it unserved, as Kueue v0.20 does.
	KueueV1beta1 bool `env:"LOCAL_KUEUE_V1BETA1" default:"1"`
	// MultiKueue adds a worker stack that Kueue dispatches to.
	MultiKueue bool `env:"LOCAL_MULTIKUEUE" default:"0"`

	// Timeout is the seconds to wait for each component.
	Timeout int `env:"LOCAL_TIMEOUT" default:"120"`

	APIServerExtraArgs                 []string `env:"LOCAL_APISERVER_EXTRA_ARGS"`
	TrainingAPIServerExtraArgs         []string `env:"LOCAL_TRAINING_APISERVER_EXTRA_ARGS"`
	TrainingControllerManagerExtraArgs []string `env:"LOCAL_TRAINING_CONTROLLER_MANAGER_EXTRA_ARGS"`
	// TrainingAPIServerEnv is the training-apiserver's extra environment,
	// NAME=VALUE words, e.g. "GOGC=100 GOMEMLIMIT=512MiB".
	TrainingAPIServerEnv []string `env:"LOCAL_TRAINING_APISERVER_ENV"`

	// RealNode asks for real nodes where the machine allows them; RealNodes
	// says how many (0: as many as the machine holds, see DefaultRealNodes).
	RealNode  bool `env:"LOCAL_REAL_NODE" default:"1"`
	RealNodes int  `env:"LOCAL_REAL_NODES" default:"0"`
}

// settingFields walks the tagged fields of s.
func settingFields(s *Settings, fn func(name, def string, field reflect.Value) error) error {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("env")
		if name == "" {
			continue
		}
		if err := fn(name, t.Field(i).Tag.Get("default"), v.Field(i)); err != nil {
			return err
		}
	}
	return nil
}

// isPortSetting says whether a setting is a port a component listens on: LOCAL_PORT_OFFSET and a second stack's
// copy move those.
func isPortSetting(name string) bool { return strings.HasSuffix(name, "_PORT") }

// SettingNames lists every LOCAL_* variable, sorted.
func SettingNames() []string {
	var names []string
	_ = settingFields(&Settings{}, func(name, _ string, _ reflect.Value) error {
		names = append(names, name)
		return nil
	})
	sort.Strings(names)
	return names
}

// SettingsFromEnv reads the settings from lookup (os.LookupEnv), with the
// defaults for what is unset or empty. An unknown value is an error naming
// the variable.
func SettingsFromEnv(lookup func(string) (string, bool)) (Settings, error) {
	var s Settings
	var defaultPorts []reflect.Value
	err := settingFields(&s, func(name, def string, field reflect.Value) error {
		value, ok := lookup(name)
		if !ok || strings.TrimSpace(value) == "" {
			value = def
			if isPortSetting(name) {
				defaultPorts = append(defaultPorts, field)
			}
		}
		if err := setField(field, value); err != nil {
			return fmt.Errorf("%s=%q: %w", name, value, err)
		}
		return nil
	})
	if err != nil {
		return Settings{}, err
	}
	// Only the defaults move: a port given explicitly, as a running stack's saved settings give every one, stays.
	for _, port := range defaultPorts {
		port.SetInt(port.Int() + int64(s.PortOffset))
	}
	return s, s.Validate()
}

// Set changes one setting by its variable name, as SettingsFromEnv reads it.
func (s *Settings) Set(name, value string) error {
	found := false
	err := settingFields(s, func(n, def string, field reflect.Value) error {
		if n != name {
			return nil
		}
		found = true
		if strings.TrimSpace(value) == "" {
			value = def
		}
		if err := setField(field, value); err != nil {
			return fmt.Errorf("%s=%q: %w", name, value, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("unknown setting %s (known: %s)", name, strings.Join(SettingNames(), " "))
	}
	return s.Validate()
}

func setField(field reflect.Value, value string) error {
	switch field.Kind() {
	case reflect.Int:
		n, err := strconv.Atoi(strings.TrimSpace(value))
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		field.SetInt(int64(n))
	case reflect.Bool:
		switch strings.ToLower(strings.TrimSpace(value)) {
		case "1", "true", "yes", "on":
			field.SetBool(true)
		case "0", "false", "no", "off":
			field.SetBool(false)
		default:
			return fmt.Errorf("want 1 or 0")
		}
	case reflect.String:
		field.SetString(value)
	case reflect.Slice:
		field.Set(reflect.ValueOf(strings.Fields(value)))
	default:
		return fmt.Errorf("unsupported setting type %s", field.Kind())
	}
	return nil
}

// maxPortOffset keeps every default port below 65536 and out of the kernel's ephemeral range's usual start
// (32768): the highest default is 23791.
const maxPortOffset = 8000

// Validate checks what the fields' types cannot.
func (s *Settings) Validate() error {
	var errs []string
	_ = settingFields(s, func(name, _ string, field reflect.Value) error {
		if field.Kind() != reflect.Int {
			return nil
		}
		n := field.Int()
		switch {
		case isPortSetting(name):
			if n < 1 || n > 65535 {
				errs = append(errs, fmt.Sprintf("%s=%d: a port is 1-65535", name, n))
			}
		case n < 0:
			errs = append(errs, fmt.Sprintf("%s=%d: must not be negative", name, n))
		}
		return nil
	})
	if s.PortOffset > maxPortOffset {
		errs = append(errs, fmt.Sprintf("LOCAL_PORT_OFFSET=%d: at most %d", s.PortOffset, maxPortOffset))
	}
	if s.Timeout < 1 {
		errs = append(errs, fmt.Sprintf("LOCAL_TIMEOUT=%d: at least 1 second", s.Timeout))
	}
	if s.RealNodes > MaxRealNodes {
		errs = append(errs, fmt.Sprintf("LOCAL_REAL_NODES=%d: at most %d", s.RealNodes, MaxRealNodes))
	}
	for _, kv := range s.TrainingAPIServerEnv {
		if !strings.Contains(kv, "=") {
			errs = append(errs, fmt.Sprintf("LOCAL_TRAINING_APISERVER_ENV: %q is not NAME=VALUE", kv))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// Env prints the settings as NAME=VALUE pairs in the form SettingsFromEnv
// reads, sorted by name.
func (s *Settings) Env() []string {
	var out []string
	_ = settingFields(s, func(name, _ string, field reflect.Value) error {
		out = append(out, name+"="+formatField(field))
		return nil
	})
	sort.Strings(out)
	return out
}

func formatField(field reflect.Value) string {
	switch field.Kind() {
	case reflect.Bool:
		if field.Bool() {
			return "1"
		}
		return "0"
	case reflect.Slice:
		return strings.Join(field.Interface().([]string), " ")
	default:
		return fmt.Sprint(field.Interface())
	}
}

// Training: our apiserver and controller-manager run.
func (s *Settings) Training() bool { return !s.SkipTraining }

// MultiKueueOn: a MultiKueue worker stack runs beside this one; it needs
// Kueue and our components.
func (s *Settings) MultiKueueOn() bool { return s.MultiKueue && s.Kueue && s.Training() }

// ShellAssignments prints the settings as shell assignments, quoted.
func (s *Settings) ShellAssignments() string {
	var b strings.Builder
	for _, kv := range s.Env() {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "%s=%s\n", name, ShellQuote(value))
	}
	return b.String()
}

// ShellQuote quotes s for a POSIX shell, leaving it as it is when safe.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
