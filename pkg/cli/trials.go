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
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// The formats of trials' -o: the table, the table with MESSAGE, or JSON.
const (
	trialsOutputTable = ""
	trialsOutputWide  = "wide"
	trialsOutputJSON  = "json"
)

// bestTrialMark follows the name of the search's best trial in the table.
const bestTrialMark = "*"

func newTrialsCommand(e *env) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "trials SEARCH [-o wide|json]",
		Short: "List the trials of a TuningJob, best first",
		Long: `List the trials of a TuningJob (a hyperparameter search), best first: by their
objective value, smallest first when the objective minimizes and largest first
when it maximizes. Trials without a value yet follow, in the order they were made.
The search's best trial (status.bestTrial) is marked with a * after its name.

TRIAL is the trial's training job, STATE is Pending, Running, Paused, Succeeded,
Failed or Stopped, VALUE its objective value so far and PROGRESS the last step
(or epoch, under asha over epochs) it reported. Under asha early stopping RUNG
is how many of the search's rungs the trial has reached (2/3), and PROMOTIONS
how many times it was resumed after a pause. Then comes one column per
parameter, headed by its name, with the trial's value. -o wide adds MESSAGE:
why the trial is where it is. -o json prints the trials (status.trials) in the
same order.

SEARCH is NAME or tune/NAME.`,
		Example: `  kubectl training trials lr-search
  kubectl training trials tune/lr-search -n team -o wide
  kubectl training trials lr-search -o json | jq -r '.[0].name'`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTuningArg(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			return showTrials(cmd.Context(), e, args[0], output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", trialsOutputTable, "Output format: wide or json.")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{trialsOutputWide, trialsOutputJSON}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func showTrials(ctx context.Context, e *env, arg, output string) error {
	switch output {
	case trialsOutputTable, trialsOutputWide, trialsOutputJSON:
	default:
		return fmt.Errorf("invalid -o %q: must be %s or %s", output, trialsOutputWide, trialsOutputJSON)
	}
	name, ok, err := parseTuningArg(arg, true)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%q is not a search: name one as NAME or %s", arg, tuningRef("NAME"))
	}
	c, err := e.clients()
	if err != nil {
		return err
	}
	job, err := getTuningJob(ctx, c.training, c.namespace, name)
	if err != nil {
		return err
	}
	trials := rankedTrials(job)
	if output == trialsOutputJSON {
		return writeTrialsJSON(e.streams.Out, trials)
	}
	if len(trials) == 0 {
		fmt.Fprintf(e.streams.ErrOut, "%s has no trials yet.\n", tuningRef(job.Name))
		return nil
	}
	return writeTrialTable(e.streams.Out, job, trials, output == trialsOutputWide)
}

// writeTrialsJSON prints the trials as a JSON array, indented as kubectl's
// JSON is; no trials is [].
func writeTrialsJSON(out io.Writer, trials []v1beta1.TrialStatus) error {
	if trials == nil {
		trials = []v1beta1.TrialStatus{}
	}
	data, err := json.MarshalIndent(trials, "", "    ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", data)
	return err
}

// writeTrialTable prints one line per trial, in the order given: TRIAL,
// STATE, VALUE, PROGRESS, RUNG, PROMOTIONS, a column per parameter and,
// wide, MESSAGE.
func writeTrialTable(out io.Writer, job *v1beta1.TuningJob, trials []v1beta1.TrialStatus, wide bool) error {
	params := parameterNames(job)
	asha := usesASHA(&job.Spec)
	w := newTabWriter(out)
	header := append([]string{"TRIAL", "STATE", "VALUE", "PROGRESS", "RUNG", "PROMOTIONS"}, params...)
	if wide {
		header = append(header, "MESSAGE")
	}
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for i := range trials {
		trial := &trials[i]
		name := trial.Name
		if name == job.Status.BestTrial && name != "" {
			name += bestTrialMark
		}
		row := []string{name, orDash(string(trial.State)), orDash(trial.Value), "-", "-", "-"}
		if trial.Progress != nil {
			row[3] = fmt.Sprint(*trial.Progress)
		}
		if asha {
			row[4] = trialRung(trial, job.Spec.EarlyStopping.ASHA)
			row[5] = fmt.Sprint(trial.Promotions)
		}
		for _, p := range params {
			row = append(row, parameterValue(trial, p))
		}
		if wide {
			row = append(row, orDash(trial.Message))
		}
		fmt.Fprintln(w, strings.Join(row, "\t"))
	}
	return w.Flush()
}

// trialRung is the number of rungs a trial has reached, of the search's:
// 1/3.
func trialRung(trial *v1beta1.TrialStatus, asha *v1beta1.ASHA) string {
	if asha.Rungs == 0 {
		return fmt.Sprint(trial.Rung)
	}
	return fmt.Sprintf("%d/%d", trial.Rung, asha.Rungs)
}

// completeTuningArg completes SEARCH with the searches of the namespace:
// NAME, or tune/NAME once tune/ (or another word for TuningJobs) is typed.
func completeTuningArg(e *env) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		prefix := ""
		if word, _, typedKind := strings.Cut(toComplete, "/"); typedKind {
			if !tuningJobNamed(word) {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			prefix = word + "/"
		}
		return tuningCompletions(cmd, e, prefix, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// tuningCompletions are the namespace's searches, each prefixed, that
// start with what was typed.
func tuningCompletions(cmd *cobra.Command, e *env, prefix, toComplete string) []cobra.Completion {
	c, err := e.clients()
	if err != nil {
		return nil
	}
	list, err := c.training.BatchV1beta1().TuningJobs(c.namespace).List(cmd.Context(), metav1.ListOptions{})
	if err != nil {
		return nil
	}
	names := make([]string, len(list.Items))
	for i, job := range list.Items {
		names[i] = prefix + job.Name
	}
	return withPrefix(names, toComplete)
}
