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
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

func newHistoryCommand(e *env) *cobra.Command {
	var allNamespaces bool
	cmd := &cobra.Command{
		Use:   "history [NAME]",
		Short: "List the records of deleted training jobs, or show one",
		Long: `Without NAME, list the records the server keeps of deleted training jobs
(trainingjobrecords), the most recently deleted first: in the namespace, or in
all of them with -A. RAN is from the job's start to its end (or its deletion),
STEP its last reported step.

With NAME, a deleted job's name or a record's name, show the record as status
shows a job: its phase, times, progress, checkpoints, accounting, conditions,
attempts with their failed replicas, replicas and last events, as they were when
the job was deleted. Where jobs of that name were deleted more than once, the
latest is shown and the others are named.

The server keeps a bounded number of records per namespace for a bounded time
(its --job-records-per-namespace and --job-record-retention).`,
		Example: `  kubectl training history
  kubectl training history -A
  kubectl training history resnet-ddp`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listRecords(cmd.Context(), e, allNamespaces)
			}
			if allNamespaces {
				return errors.New("a record is in one namespace: use -n instead of --all-namespaces")
			}
			return showRecord(cmd.Context(), e, args[0])
		},
	}
	cmd.Flags().BoolVarP(&allNamespaces, "all-namespaces", "A", false, "List the records of every namespace.")
	return cmd
}

// listRecords prints one line per record: NAME, JOB, KIND, PHASE, RAN, STEP
// and DELETED, the most recently deleted first.
func listRecords(ctx context.Context, e *env, allNamespaces bool) error {
	c, err := e.clients()
	if err != nil {
		return err
	}
	namespace := c.namespace
	if allNamespaces {
		namespace = metav1.NamespaceAll
	}
	list, err := c.training.BatchV1beta1().TrainingJobRecords(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing trainingjobrecords: %w", err)
	}
	if len(list.Items) == 0 {
		if allNamespaces {
			fmt.Fprintln(e.streams.ErrOut, "No records of deleted jobs found.")
		} else {
			fmt.Fprintf(e.streams.ErrOut, "No records of deleted jobs found in %s namespace.\n", namespace)
		}
		return nil
	}
	records := newestDeletedFirst(list.Items)
	now := e.now()
	w := newTabWriter(e.streams.Out)
	if allNamespaces {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tJOB\tKIND\tPHASE\tRAN\tSTEP\tDELETED")
	for _, r := range records {
		if allNamespaces {
			fmt.Fprintf(w, "%s\t", r.Namespace)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.JobName, r.JobKind, orDash(string(r.Phase)), recordRan(&r),
			lastStep(r.Progress), age(r.DeletionTime.Time, now))
	}
	return w.Flush()
}

// newestDeletedFirst orders records by deletion, the latest first; records
// deleted in the same second by name.
func newestDeletedFirst(records []v1beta1.TrainingJobRecord) []v1beta1.TrainingJobRecord {
	out := slices.Clone(records)
	slices.SortStableFunc(out, func(a, b v1beta1.TrainingJobRecord) int {
		if c := b.DeletionTime.Compare(a.DeletionTime.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// recordRan is how long the deleted job ran: from its start to its
// completion, or to its deletion when it never completed.
func recordRan(r *v1beta1.TrainingJobRecord) string {
	if r.StartTime == nil {
		return "-"
	}
	end := r.DeletionTime.Time
	if r.CompletionTime != nil {
		end = r.CompletionTime.Time
	}
	return age(r.StartTime.Time, end)
}

func lastStep(samples []v1beta1.ProgressSample) string {
	if n := len(samples); n > 0 && samples[n-1].Step != nil {
		return fmt.Sprint(*samples[n-1].Step)
	}
	return "-"
}

// showRecord prints the record NAME names, or the latest of the job NAME.
func showRecord(ctx context.Context, e *env, name string) error {
	c, err := e.clients()
	if err != nil {
		return err
	}
	records := c.training.BatchV1beta1().TrainingJobRecords(c.namespace)
	var record *v1beta1.TrainingJobRecord
	var others []string
	switch r, err := records.Get(ctx, name, metav1.GetOptions{}); {
	case err == nil:
		record = r
	case !apierrors.IsNotFound(err):
		return err
	default:
		list, err := records.List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(labels.Set{v1beta1.LabelJobName: name}).String()})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return fmt.Errorf("no record of a deleted job named %s in namespace %s (kubectl training history lists them)", name, c.namespace)
		}
		sorted := newestDeletedFirst(list.Items)
		record = &sorted[0]
		for _, r := range sorted[1:] {
			others = append(others, r.Name)
		}
	}
	return writeRecord(e.streams.Out, record, others, e.now())
}

// writeRecord prints a record's own facts, then the deleted job as status
// shows a job, with the record's events.
func writeRecord(out io.Writer, r *v1beta1.TrainingJobRecord, others []string, now time.Time) error {
	kind, ok := kindCalled(r.JobKind)
	if !ok {
		return fmt.Errorf("record %s is of a job of kind %q, which this plugin does not know", r.Name, r.JobKind)
	}
	job := kind.New()
	if err := json.Unmarshal(r.Job.Raw, job); err != nil {
		return fmt.Errorf("reading the job in record %s: %w", r.Name, err)
	}
	w := newTabWriter(out)
	fmt.Fprintf(w, "Record:\t%s\n", r.Name)
	fmt.Fprintf(w, "Deleted:\t%s ago (%s)\n", age(r.DeletionTime.Time, now), r.DeletionTime.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "Job UID:\t%s\n", r.JobUID)
	if len(r.LeftOut) > 0 {
		fmt.Fprintf(w, "Left out:\t%s (to stay within the record's size)\n", strings.Join(r.LeftOut, ", "))
	}
	if len(others) > 0 {
		fmt.Fprintf(w, "Earlier:\t%s\n", strings.Join(others, ", "))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	events := make([]corev1.Event, len(r.Events))
	for i, ev := range r.Events {
		events[i] = corev1.Event{Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: ev.Count,
			FirstTimestamp: ev.FirstTime, LastTimestamp: ev.LastTime, Source: corev1.EventSource{Component: ev.Source}}
	}
	// Oldest first, as status shows a job's events.
	slices.Reverse(events)
	return writeJobStatus(out, kind, job, events, now)
}
