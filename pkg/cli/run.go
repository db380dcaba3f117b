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

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// gpuResource is the resource --gpus asks for.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

type runOptions struct {
	runtime        string
	runtimeKind    string
	nodes          int32
	cpu            string
	memory         string
	gpus           int64
	env            []string
	image          string
	file           string
	queue          string
	follow         bool
	maxLogRequests int
	dryRun         string
	output         *outputFlags
}

func newRunCommand(e *env) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run NAME --runtime RUNTIME [flags] [-- COMMAND [ARG...]]",
		Short: "Run a training job made from a runtime",
		Long: `Create the job NAME from a runtime: the namespace's TrainingRuntime of that
name, else the ClusterTrainingRuntime. The job is of the kind the runtime
makes; the apiserver fills it in from the runtime, then applies the command
after -- (or the --file script) and the other flags.

With --follow, stream every pod's log, prefixed with [pod/container], until the
job finishes; exit 0 if it succeeded, 1 if it failed.`,
		Example: `  kubectl training run mnist --runtime torch-distributed --nodes 2 --file train.py --follow
  kubectl training run hello --runtime generic -- python3 -c 'print(1)'`,
		Args: func(cmd *cobra.Command, args []string) error {
			named := len(args)
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				named = dash
			}
			switch {
			case named == 0:
				return errors.New("name the job: run NAME --runtime RUNTIME [-- COMMAND [ARG...]]")
			case named > 1:
				return fmt.Errorf("give the job one NAME, and its command after --: run %s --runtime RUNTIME -- %s",
					args[0], strings.Join(args[1:named], " "))
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), e, cmd.Flags(), args[0], args[1:])
		},
	}
	flags := cmd.Flags()
	flags.StringVar(&o.runtime, "runtime", "", "The runtime to make the job from.")
	flags.StringVar(&o.runtimeKind, "runtime-kind", "", `Look --runtime up as "`+batch.ClusterTrainingRuntimeKind+`" or "`+batch.TrainingRuntimeKind+`" only.`)
	flags.Int32Var(&o.nodes, "nodes", 0, "How many nodes train; default: the runtime's.")
	flags.StringVar(&o.cpu, "cpu", "", "The CPU each node requests and is limited to, e.g. 4 or 500m.")
	flags.StringVar(&o.memory, "memory", "", "The memory each node requests and is limited to, e.g. 16Gi.")
	flags.Int64Var(&o.gpus, "gpus", 0, "The GPUs ("+string(gpuResource)+") each node is limited to; default: the runtime's.")
	flags.StringArrayVar(&o.env, "env", nil, "A variable NAME=VALUE for the training container of every replica; repeat for several.")
	flags.StringVar(&o.image, "image", "", "The image of the training container; default: the runtime's.")
	flags.StringVar(&o.file, "file", "", fmt.Sprintf("A script of at most %d KiB the job carries to its pods, for the runtime's launcher to run.", batch.MaxScriptBytes/1024))
	flags.StringVar(&o.queue, "queue", "", "The Kueue LocalQueue to admit the job through (label "+batch.QueueLabel+").")
	flags.BoolVar(&o.follow, "follow", false, "Stream the logs of the job's pods until it finishes; exit 1 if it failed.")
	flags.IntVar(&o.maxLogRequests, "max-log-requests", 10, "With --follow, the most logs to stream at once.")
	o.output = newOutputFlags(cmd)
	addDryRunFlag(cmd, &o.dryRun)
	_ = cmd.MarkFlagRequired("runtime")
	_ = cmd.MarkFlagFilename("file")
	_ = cmd.RegisterFlagCompletionFunc("runtime", completeRuntimeName(e))
	_ = cmd.RegisterFlagCompletionFunc("runtime-kind", cobra.FixedCompletions(
		[]string{batch.ClusterTrainingRuntimeKind, batch.TrainingRuntimeKind}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (o *runOptions) run(ctx context.Context, e *env, flags *pflag.FlagSet, name string, command []string) error {
	dry, err := parseDryRun(o.dryRun)
	if err != nil {
		return err
	}
	if dry != dryRunNone {
		if o.follow {
			return errors.New("--follow follows a job that runs: drop --dry-run")
		}
		// A dry run is for seeing the job.
		o.output.defaultFormat("yaml")
	}
	if err := o.output.validate(); err != nil {
		return err
	}
	switch o.runtimeKind {
	case "", batch.ClusterTrainingRuntimeKind, batch.TrainingRuntimeKind:
	default:
		return fmt.Errorf("--runtime-kind %q: must be %s or %s", o.runtimeKind, batch.ClusterTrainingRuntimeKind, batch.TrainingRuntimeKind)
	}
	trainer, err := o.trainer(flags, command)
	if err != nil {
		return err
	}

	c, err := e.clients()
	if err != nil {
		return err
	}
	rt, err := findRuntime(ctx, c.training, c.namespace, o.runtime, o.runtimeKind)
	if err != nil {
		return err
	}
	kind, _, err := rt.jobTemplate()
	if err != nil {
		return err
	}
	created, err := createJob(ctx, c, false, jobFromRuntime(kind, name, c.namespace, rt, trainer, o.queue), dry)
	if err != nil {
		return err
	}
	if err := o.output.printObject(created, dry.describe("created"), e); err != nil {
		return err
	}
	if !o.follow {
		return nil
	}
	return followJob(ctx, e, c, foundJob{kind: kind, job: created}, o.maxLogRequests)
}

// jobFromRuntime is the job run creates: its name, its queue and what it asks
// of the runtime. The apiserver makes the rest from the runtime.
func jobFromRuntime(kind *jobKind, name, namespace string, rt trainingRuntime, trainer *v1beta1.Trainer, queue string) v1beta1.TrainingJob {
	job := kind.New()
	job.SetName(name)
	job.SetNamespace(namespace)
	if queue != "" {
		job.SetLabels(map[string]string{batch.QueueLabel: queue})
	}
	spec := job.CommonSpec()
	spec.RuntimeRef = &v1beta1.RuntimeRef{Name: rt.meta.Name, Kind: rt.kind}
	spec.Trainer = trainer
	return job
}

// trainer is the spec.trainer that the flags and the command after -- give.
func (o *runOptions) trainer(flags *pflag.FlagSet, command []string) (*v1beta1.Trainer, error) {
	if len(command) == 0 && o.file == "" {
		return nil, errors.New("nothing to run: give a command after --, or a --file (a runtime's default command runs a script)")
	}
	trainer := &v1beta1.Trainer{Image: o.image}
	if len(command) > 0 {
		trainer.Command = command[:1]
		if len(command) > 1 {
			trainer.Args = command[1:]
		}
	}
	if flags.Changed("nodes") {
		trainer.NumNodes = ptr.To(o.nodes)
	}
	var err error
	if trainer.Env, err = parseEnv(o.env); err != nil {
		return nil, err
	}
	if trainer.ResourcesPerNode, err = o.resourcesPerNode(flags); err != nil {
		return nil, err
	}
	if o.file != "" {
		if trainer.Script, err = readScript(o.file); err != nil {
			return nil, err
		}
	}
	return trainer, nil
}

// parseEnv reads --env NAME=VALUE; the value may be empty.
func parseEnv(values []string) ([]corev1.EnvVar, error) {
	var env []corev1.EnvVar
	for _, v := range values {
		name, value, ok := strings.Cut(v, "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("--env %q: must be NAME=VALUE", v)
		}
		env = append(env, corev1.EnvVar{Name: name, Value: value})
	}
	return env, nil
}

// resourcesPerNode is what --cpu, --memory and --gpus give each node: CPU
// and memory requested and limited alike; GPUs as limits, which their
// requests default to. Nil when none is given.
func (o *runOptions) resourcesPerNode(flags *pflag.FlagSet) (*corev1.ResourceRequirements, error) {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	for _, r := range []struct {
		flag, value string
		name        corev1.ResourceName
	}{{"cpu", o.cpu, corev1.ResourceCPU}, {"memory", o.memory, corev1.ResourceMemory}} {
		if r.value == "" {
			continue
		}
		quantity, err := resource.ParseQuantity(r.value)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", r.flag, r.value, err)
		}
		requests[r.name], limits[r.name] = quantity, quantity
	}
	if flags.Changed("gpus") {
		if o.gpus < 0 {
			return nil, fmt.Errorf("--gpus %d: must be 0 or more", o.gpus)
		}
		limits[gpuResource] = *resource.NewQuantity(o.gpus, resource.DecimalSI)
	}
	if len(limits) == 0 {
		return nil, nil
	}
	if len(requests) == 0 {
		requests = nil
	}
	return &corev1.ResourceRequirements{Requests: requests, Limits: limits}, nil
}

// readScript reads --file as the trainer's script, named by its base name.
// The size is checked here to spare sending a job the apiserver would refuse;
// the apiserver's limit is the one that holds.
func readScript(path string) (*v1beta1.TrainerScript, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	source, err := io.ReadAll(io.LimitReader(file, batch.MaxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(source) > batch.MaxScriptBytes {
		return nil, fmt.Errorf("--file %s is larger than a script may be, %d bytes (%d KiB): put a larger program in the image or a volume",
			path, batch.MaxScriptBytes, batch.MaxScriptBytes/1024)
	}
	return &v1beta1.TrainerScript{Name: filepath.Base(path), Source: string(source)}, nil
}
