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
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"

	"tensorstack.dev/training/pkg/kueueview"
)

// kueueFactory is a Factory that also builds Kueue's client. The plugin's
// does; a Factory without it (an older test's) has no queues to show.
type kueueFactory interface {
	KueueClient() (kueueview.Client, error)
}

func (f *configFlagsFactory) KueueClient() (kueueview.Client, error) {
	config, err := f.restConfig()
	if err != nil {
		return nil, err
	}
	return kueueview.NewForConfig(config)
}

// kueueClient is Kueue's client, for queues and the dashboard's Queues page.
func (e *env) kueueClient() (kueueview.Client, error) {
	f, ok := e.Factory.(kueueFactory)
	if !ok {
		return nil, errors.New("no client for Kueue")
	}
	return f.KueueClient()
}

func newQueuesCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "queues",
		Short: "Show Kueue's queues: quota, usage and the pending Workloads in order",
		Long: `queues shows every ClusterQueue and LocalQueue you may read, as the dashboard's Queues page does:
each ClusterQueue's nominal quota, usage, borrowing and lending limits per flavor and resource,
its admitted, reserving and pending counts, and its pending Workloads in the order Kueue will
consider them, with their position (1 is next) and Kueue's reason for the wait.

The order is Kueue's own, from its visibility API (visibility.kueue.x-k8s.io), where the
cluster serves it and you may read it; elsewhere it is worked out as Kueue's FIFO strategies
order a queue, by priority, then creation, and the output says so.

LocalQueues and Workloads are read in every namespace, or in your namespace when you may not
list them across namespaces, or in the one -n names.`,
		Example: `  # Every queue, its quota and what waits in it
  kubectl training queues

  # The LocalQueues and Workloads of one namespace
  kubectl training queues -n team-a`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runQueues(cmd.Context(), e)
		},
	}
}

func runQueues(ctx context.Context, e *env) error {
	namespace, explicit, err := e.Namespace()
	if err != nil {
		return err
	}
	kueue, err := e.kueueClient()
	if err != nil {
		return err
	}
	kube, err := e.KubeClient()
	if err != nil {
		return err
	}
	scope := namespace
	if !explicit {
		// Every namespace where the user may; their own where not.
		scope = ""
		if _, err := kueue.ListWorkloads(ctx, "", metav1.ListOptions{Limit: 1}); apierrors.IsForbidden(err) {
			scope = namespace
		}
	}
	var disc discovery.DiscoveryInterface = kube.Discovery()
	snapshot, refused := kueueview.Read(ctx, disc, kueue, scope)
	if len(refused) == 3 {
		return refused["ClusterQueues"]
	}
	for _, what := range []string{"ClusterQueues", "LocalQueues", "Workloads"} {
		if err := refused[what]; err != nil {
			fmt.Fprintf(e.streams.ErrOut, "%s (%s left out)\n", ErrorMessage(err), what)
		}
	}
	writeQueues(e.streams.Out, snapshot, scope, e.now())
	return nil
}

// writeQueues prints the snapshot: each ClusterQueue with its quota table
// and pending Workloads, then the LocalQueues.
func writeQueues(out io.Writer, s kueueview.Snapshot, namespace string, now time.Time) {
	w := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	defer w.Flush()
	if len(s.ClusterQueues) == 0 {
		fmt.Fprintln(w, "No ClusterQueues.")
	}
	for i, cq := range s.ClusterQueues {
		if i > 0 {
			fmt.Fprintln(w)
		}
		state := "active"
		if !cq.Active {
			state = "inactive"
			if cq.Inactive != "" {
				state += " (" + cq.Inactive + ")"
			}
		}
		details := []string{state}
		if cq.Cohort != "" {
			details = append(details, "cohort "+cq.Cohort)
		}
		if cq.QueueingStrategy != "" {
			details = append(details, cq.QueueingStrategy)
		}
		fmt.Fprintf(w, "ClusterQueue %s: %s; admitted %d, reserving %d, pending %d\n",
			cq.Name, strings.Join(details, ", "), cq.Admitted, cq.Reserving, cq.Pending)
		fmt.Fprintln(w, "  FLAVOR\tRESOURCE\tNOMINAL\tUSAGE\tBORROWED\tRESERVED\tBORROWING LIMIT\tLENDING LIMIT")
		for _, q := range cq.Quotas {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.Flavor, q.Resource, q.Nominal, q.Usage, q.Borrowed, q.Reserved,
				orDash(q.BorrowingLimit), orDash(q.LendingLimit))
		}
		if len(cq.PendingWorkloads) == 0 {
			fmt.Fprintln(w, "  No pending Workloads.")
			continue
		}
		fmt.Fprintf(w, "  Pending, %s:\n", orderingInWords(cq))
		fmt.Fprintln(w, "  POSITION\tWORKLOAD\tNAMESPACE\tLOCALQUEUE\tPRIORITY\tAGE\tREASON")
		for _, wl := range cq.PendingWorkloads {
			reason := wl.Reason
			if wl.Message != "" {
				reason += ": " + wl.Message
			}
			fmt.Fprintf(w, "  %d\t%s\t%s\t%s\t%d\t%s\t%s\n", wl.PositionInClusterQueue, wl.Name, wl.Namespace, wl.LocalQueue,
				wl.Priority, age(wl.Created.Time, now), reason)
		}
	}
	fmt.Fprintln(w)
	where := "all namespaces"
	if namespace != "" {
		where = "namespace " + namespace
	}
	lqs := slices.Clone(s.LocalQueues)
	if len(lqs) == 0 {
		fmt.Fprintf(w, "No LocalQueues in %s.\n", where)
		return
	}
	fmt.Fprintf(w, "LocalQueues (%s):\n", where)
	fmt.Fprintln(w, "NAMESPACE\tLOCALQUEUE\tCLUSTERQUEUE\tADMITTED\tRESERVING\tPENDING")
	for _, lq := range lqs {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\n", lq.Namespace, lq.Name, lq.ClusterQueue, lq.Admitted, lq.Reserving, lq.Pending)
	}
}

// orderingInWords says who ordered a ClusterQueue's pending Workloads.
func orderingInWords(cq kueueview.ClusterQueue) string {
	if cq.Ordering == kueueview.OrderedByKueue {
		if cq.OrderingNote != "" {
			return "in Kueue's order (visibility API), " + cq.OrderingNote
		}
		return "in Kueue's order (visibility API)"
	}
	words := "by priority, then creation, as Kueue's FIFO strategies order them"
	if cq.OrderingNote != "" {
		words += "; " + cq.OrderingNote
	}
	return words
}
