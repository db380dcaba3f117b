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
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/install"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// jobAction is one of the action subresources: pause, resume or debug.
type jobAction struct {
	// verb names the action, as in the subresource.
	verb string
	// done is what the default output says of a job after the action.
	done string
	// send posts the action for the named job.
	send func(ctx context.Context, client jobClient, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error)
	// predict changes a spec as the server does, for --dry-run=client,
	// with the server's own rules, which work on the internal version.
	predict func(spec *batch.TrainingJobSpec)
}

var pauseAction = jobAction{
	verb: "pause",
	done: "paused",
	send: func(ctx context.Context, client jobClient, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
		return client.Pause(ctx, name, opts)
	},
	predict: batch.Pause,
}

var resumeAction = jobAction{
	verb: "resume",
	done: "resumed",
	send: func(ctx context.Context, client jobClient, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
		return client.Resume(ctx, name, opts)
	},
	predict: batch.Resume,
}

// debugAction switches a job into debug mode as the request says.
func debugAction(request *v1beta1.DebugRequest) jobAction {
	return jobAction{
		verb: "debug",
		done: "debug enabled",
		send: func(ctx context.Context, client jobClient, name string, opts metav1.CreateOptions) (v1beta1.TrainingJob, error) {
			return client.Debug(ctx, name, request, opts)
		},
		predict: func(spec *batch.TrainingJobSpec) {
			var internal batch.DebugRequest
			if err := internalScheme.Convert(request, &internal, nil); err != nil {
				// Conversion of plain fields cannot fail; the server would
				// say so if it did.
				return
			}
			batch.Debug(spec, internal.ReplicaSpecs)
		},
	}
}

// actionOptions are the flags every action command has.
type actionOptions struct {
	dryRun string
	output *outputFlags
}

func newActionOptions(cmd *cobra.Command) *actionOptions {
	o := &actionOptions{output: newOutputFlags(cmd)}
	addDryRunFlag(cmd, &o.dryRun)
	return o
}

func newActionCommand(e *env, action jobAction) *cobra.Command {
	var o *actionOptions
	cmd := &cobra.Command{
		Use:               action.verb + " JOB",
		Short:             strings.ToUpper(action.verb[:1]) + action.verb[1:] + " a training job",
		Long:              actionHelp[action.verb],
		Example:           fmt.Sprintf("  kubectl training %[1]s pj/resnet-ddp\n  kubectl training %[1]s tj/mnist --dry-run=server -o yaml", action.verb),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), e, args[0], func(foundJob) (jobAction, error) { return action, nil })
		},
	}
	o = newActionOptions(cmd)
	return cmd
}

var actionHelp = map[string]string{
	"pause": `Pause a training job: its pods are deleted gracefully, the job and its
Service stay. Pausing a paused job changes nothing; a finished job cannot be
paused.`,
	"resume": `Resume a paused or debugged training job: its pods are created again from
the current spec (with the pause mode's resumeSpecs, if any).`,
}

// run carries out an action on the job arg names. actionFor builds the action
// once the job is known, so that debug can check its flags against the job.
func (o *actionOptions) run(ctx context.Context, e *env, arg string, actionFor func(foundJob) (jobAction, error)) error {
	dry, err := parseDryRun(o.dryRun)
	if err != nil {
		return err
	}
	if err := o.output.validate(); err != nil {
		return err
	}
	c, err := e.clients()
	if err != nil {
		return err
	}
	found, err := c.findJob(ctx, arg)
	if err != nil {
		return err
	}
	action, err := actionFor(found)
	if err != nil {
		return err
	}

	var result v1beta1.TrainingJob
	if dry == dryRunClient {
		result, err = predictAction(found, action)
	} else {
		result, err = action.send(ctx, found.kind.Client(c.training, c.namespace), found.job.GetName(), dry.createOptions())
	}
	if err != nil {
		return fmt.Errorf("cannot %s %s: %w", action.verb, found.Ref(), err)
	}
	operation := action.done
	if apiequality.Semantic.DeepEqual(result.CommonSpec().RunMode, found.job.CommonSpec().RunMode) {
		operation += " (no change)"
	}
	return o.output.printObject(result, dry.describe(operation), e)
}

// predictAction is the job as the action would leave it, computed here
// without asking the server.
func predictAction(found foundJob, action jobAction) (v1beta1.TrainingJob, error) {
	if phase := found.job.JobStatus().Phase; phase.IsFinished() {
		return nil, fmt.Errorf("the job has %s", phase)
	}
	internal, err := internalScheme.ConvertToVersion(found.job.DeepCopyObject(), batch.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	job, ok := internal.(batch.TrainingJob)
	if !ok {
		return nil, fmt.Errorf("%T is not a training job", internal)
	}
	action.predict(job.CommonSpec())
	versioned, err := internalScheme.ConvertToVersion(internal, v1beta1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return versioned.(v1beta1.TrainingJob), nil
}

// internalScheme converts jobs to and from the internal version, where the
// actions' rules live (batch.Pause, batch.Resume, batch.Debug).
var internalScheme = func() *runtime.Scheme {
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}()

// debugOptions are the flags of debug beyond those of every action.
type debugOptions struct {
	replicas          []string
	command           []string
	skipInitContainer bool
}

func newDebugCommand(e *env) *cobra.Command {
	var o *actionOptions
	var d debugOptions
	cmd := &cobra.Command{
		Use:   "debug JOB [--replica TYPE]... [--command WORD]... [--skip-init-container]",
		Short: "Switch a training job into debug mode",
		Long: `Switch a training job into debug mode: every replica is started again with its
training command replaced (by default with "sleep inf"), so that you can exec
into the prepared environment. Exit codes of debug pods never decide the job.

Without --replica every replica type uses the defaults. --command and
--skip-init-container apply to the replica types named by --replica.
--command is given once per word of the command: --command sleep --command 3600.`,
		Example: `  # Every replica sleeps instead of training
  kubectl training debug pj/resnet-ddp

  # Workers run "sleep 3600", without their init containers
  kubectl training debug tj/mnist --replica worker --command sleep --command 3600 --skip-init-container`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			warnCommandNotSplit(e, d.command)
			return o.run(cmd.Context(), e, args[0], func(found foundJob) (jobAction, error) {
				request, err := d.request(found.job.CommonSpec())
				if err != nil {
					return jobAction{}, err
				}
				return debugAction(request), nil
			})
		},
	}
	o = newActionOptions(cmd)
	cmd.Flags().StringArrayVar(&d.replicas, "replica", nil, "A replica type to set --command and --skip-init-container for; repeat for several types.")
	cmd.Flags().StringArrayVar(&d.command, "command", nil, "One word of the command the selected replica types run instead of training; repeat for each word. Default: sleep inf.")
	cmd.Flags().BoolVar(&d.skipInitContainer, "skip-init-container", false, "Start the selected replica types without their init containers.")
	_ = cmd.RegisterFlagCompletionFunc("replica", completeReplicaTypes(e))
	return cmd
}

// request builds the DebugRequest the flags describe, checking the replica
// types against the job's.
func (d debugOptions) request(spec *v1beta1.TrainingJobSpec) (*v1beta1.DebugRequest, error) {
	request := &v1beta1.DebugRequest{}
	if len(d.replicas) == 0 {
		if len(d.command) > 0 || d.skipInitContainer {
			return nil, fmt.Errorf("--command and --skip-init-container apply to the replica types named by --replica; the job's types are %s",
				strings.Join(replicaTypes(spec), ", "))
		}
		return request, nil
	}
	for _, name := range d.replicas {
		t, ok := matchReplicaType(spec, name)
		if !ok {
			return nil, fmt.Errorf("the job has no replica type %q; its types are %s", name, strings.Join(replicaTypes(spec), ", "))
		}
		if debugSpecFor(request, t) != nil {
			continue // named twice
		}
		request.ReplicaSpecs = append(request.ReplicaSpecs, v1beta1.ReplicaDebugSpec{
			Type:              t,
			SkipInitContainer: d.skipInitContainer,
			Command:           append([]string(nil), d.command...),
		})
	}
	return request, nil
}

func debugSpecFor(request *v1beta1.DebugRequest, t v1beta1.ReplicaType) *v1beta1.ReplicaDebugSpec {
	for i := range request.ReplicaSpecs {
		if request.ReplicaSpecs[i].Type == t {
			return &request.ReplicaSpecs[i]
		}
	}
	return nil
}

// matchReplicaType finds the job's replica type a user typed. Case is
// ignored because TensorFlow types are also known capitalised (Worker, PS).
func matchReplicaType(spec *v1beta1.TrainingJobSpec, name string) (v1beta1.ReplicaType, bool) {
	for _, r := range spec.ReplicaSpecs {
		if strings.EqualFold(string(r.Type), name) {
			return r.Type, true
		}
	}
	return "", false
}

// warnCommandNotSplit points out --command "sleep inf": it runs a program
// named "sleep inf", which is rarely what was meant.
func warnCommandNotSplit(e *env, command []string) {
	if len(command) == 1 && strings.ContainsAny(command[0], " \t") {
		fmt.Fprintf(e.streams.ErrOut, "Warning: --command %q is one word; give --command once per word, e.g. --command %s\n",
			command[0], strings.Join(strings.Fields(command[0]), " --command "))
	}
}
