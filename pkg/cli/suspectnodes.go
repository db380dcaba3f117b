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
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// clearSuspectNodesPatch empties status.suspectNodes; the controller's next
// pods then may go to any node again.
var clearSuspectNodesPatch = []byte(`{"status":{"suspectNodes":null}}`)

func newClearSuspectNodesCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "clear-suspect-nodes JOB",
		Short: "Let a training job's next pods use the nodes it left out",
		Long: `Empty a job's status.suspectNodes: the nodes where its replicas failed for a
reason that blamed the node, which its next pods avoid. Do it once a node is
repaired. It writes the job's status, so it needs the patch verb on the
kind's status subresource.`,
		Example:           "  kubectl training clear-suspect-nodes pj/resnet-ddp",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeJobArg(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.clients()
			if err != nil {
				return err
			}
			found, err := c.findJob(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			before := found.job.JobStatus().SuspectNodeNames()
			if _, err := found.kind.Client(c.training, c.namespace).PatchStatus(cmd.Context(), found.job.GetName(), clearSuspectNodesPatch, metav1.PatchOptions{}); err != nil {
				return fmt.Errorf("cannot clear the suspect nodes of %s: %w", found.Ref(), err)
			}
			if len(before) == 0 {
				fmt.Fprintf(e.streams.Out, "%s had no suspect nodes\n", found.Ref())
			} else {
				fmt.Fprintf(e.streams.Out, "%s: suspect nodes cleared (%s)\n", found.Ref(), strings.Join(before, ", "))
			}
			return nil
		},
	}
}

// writeSuspectNodes shows the nodes the job's next pods avoid, and why.
func writeSuspectNodes(w io.Writer, status *v1beta1.TrainingJobStatus, now time.Time) {
	for i, n := range status.SuspectNodes {
		label := ""
		if i == 0 {
			label = "Suspect nodes:"
		}
		fmt.Fprintf(w, "%s\t%s  %s, %s ago: %s\n", label, n.Name, n.Reason, duration.HumanDuration(now.Sub(n.Time.Time)), n.Message)
	}
}
