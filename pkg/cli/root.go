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

// Package cli holds the commands of kubectl-training, the kubectl plugin for
// every job kind (pkg/apis/batch/kinds.go): run, runtimes, pause, resume,
// debug, logs, status, history, queues, dashboard, convert, create, completion
// and version;
// and trials for TuningJobs, the hyperparameter searches, which status shows
// too.
package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"tensorstack.dev/training/pkg/apis/batch"
)

// Config is what the commands run with.
type Config struct {
	Streams genericiooptions.IOStreams
	// NewFactory builds the clients from kubectl's flags; nil means NewFactory.
	// Tests return fake clientsets.
	NewFactory func(*ConnectionFlags, genericiooptions.IOStreams) Factory
	// Now is the clock ages and durations are measured with; nil means time.Now.
	Now func() time.Time
}

// env is what every command shares: the clients, the streams and the clock.
type env struct {
	Factory
	streams genericiooptions.IOStreams
	now     func() time.Time
}

// NewRootCommand returns `kubectl training` with its subcommands and
// kubectl's connection flags.
func NewRootCommand(config Config) *cobra.Command {
	configFlags := NewConnectionFlags()
	newFactory := config.NewFactory
	if newFactory == nil {
		newFactory = NewFactory
	}
	e := &env{Factory: newFactory(configFlags, config.Streams), streams: config.Streams, now: config.Now}
	if e.now == nil {
		e.now = time.Now
	}

	root := &cobra.Command{
		Use:   "kubectl-training",
		Short: "Work with " + batch.KindsInProse(true, true),
		Long: `kubectl training works with the training jobs of batch.tensorstack.dev:
` + batch.KindsInProse(true, true) + `.

A job is named KIND/NAME, where KIND is a short name above or any resource form kubectl
accepts (tensorflowtrainingjob, pytorchtrainingjobs.batch.tensorstack.dev,
...), or just NAME when only one kind has a job of that name. A TuningJob (a
hyperparameter search) is named tune/NAME: status shows it, trials lists its
trials.`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl training"},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(config.Streams.In)
	root.SetOut(config.Streams.Out)
	root.SetErr(config.Streams.ErrOut)
	configFlags.AddFlags(root.PersistentFlags())
	registerConnectionCompletions(root, e, configFlags)

	root.AddCommand(
		newRunCommand(e),
		newRuntimesCommand(e),
		newActionCommand(e, pauseAction),
		newActionCommand(e, resumeAction),
		newDebugCommand(e),
		newClearSuspectNodesCommand(e),
		newLogsCommand(e),
		newStatusCommand(e),
		newTrialsCommand(e),
		newHistoryCommand(e),
		newQueuesCommand(e),
		newDashboardCommand(e),
		newConvertCommand(e),
		newCreateCommand(e),
		newVersionCommand(e),
	)
	return root
}

// ErrorMessage words an error the way kubectl does: the server's reason for
// API errors, "error: ..." for the rest.
func ErrorMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Reason != "" {
		return fmt.Sprintf("Error from server (%s): %s", status.Status().Reason, err)
	}
	return "error: " + err.Error()
}
