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
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/generated/clientset/versioned"
)

// maxEvents is how many of a job's latest events status shows.
const maxEvents = 10

type statusOptions struct {
	watch         bool
	allNamespaces bool
}

func newStatusCommand(e *env) *cobra.Command {
	var o statusOptions
	cmd := &cobra.Command{
		Use:   "status [JOB]",
		Short: "Show a training job's state, replicas and events, or list the jobs",
		Long: `With JOB, show the job's phase, run mode, age and duration, its backoff count
and limit, its conditions, a table of its replicas and its latest events.
RESTARTS counts the replaced pods of the replica's type. With --watch, show it
again on every change until the job finishes or you press Ctrl-C.

A TuningJob (a hyperparameter search), named tune/NAME (or tuningjob/NAME),
shows its state, objective, algorithm and early stopping, its trial counts, its
best trial and value, its conditions and its latest events; kubectl training
trials lists its trials.

Without JOB, list the jobs of every kind: in the namespace, or in all of them
with -A.`,
		Example: `  kubectl training status pj/resnet-ddp
  kubectl training status tj/mnist --watch
  kubectl training status tune/lr-search
  kubectl training status -A`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeStatusArg(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				if o.watch {
					return errors.New("--watch needs a JOB")
				}
				return listJobs(cmd.Context(), e, o.allNamespaces)
			}
			if o.allNamespaces {
				return errors.New("a JOB is in one namespace: use -n instead of --all-namespaces")
			}
			return o.showJob(cmd.Context(), e, args[0])
		},
	}
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "Show the job again whenever it changes, until it finishes.")
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "List the jobs of every namespace.")
	return cmd
}

func (o *statusOptions) showJob(ctx context.Context, e *env, arg string) error {
	if name, ok, err := parseTuningArg(arg, false); ok || err != nil {
		if err != nil {
			return err
		}
		return o.showTuningJob(ctx, e, name)
	}
	c, err := e.clients()
	if err != nil {
		return err
	}
	found, err := c.findJob(ctx, arg)
	if err != nil {
		return err
	}
	show := func(job v1beta1.TrainingJob) error {
		events, err := jobEvents(ctx, c.kube, found.kind, job)
		if err != nil {
			return err
		}
		return writeJobStatus(e.streams.Out, found.kind, job, events, e.now())
	}
	if err := show(found.job); err != nil {
		return err
	}
	if !o.watch {
		return nil
	}
	_, deleted, err := watchJob(ctx, c.training, found, func(job v1beta1.TrainingJob) error {
		fmt.Fprintln(e.streams.Out)
		return show(job)
	})
	if deleted {
		fmt.Fprintf(e.streams.Out, "\n%s was deleted\n", found.Ref())
	}
	return err
}

// watchJob calls changed with the job on every change until it finishes, is
// deleted or ctx ends (Ctrl-C), and returns the job as it last saw it and
// whether it was deleted. A watch the server closes is opened again.
func watchJob(ctx context.Context, client versioned.Interface, found foundJob, changed func(v1beta1.TrainingJob) error) (job v1beta1.TrainingJob, deleted bool, err error) {
	jobs := found.kind.Client(client, found.job.GetNamespace())
	job = found.job
	for !phaseOf(job).IsFinished() {
		w, err := jobs.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", job.GetName()).String(),
			ResourceVersion: job.GetResourceVersion(),
		})
		if err != nil {
			if ctx.Err() != nil {
				return job, false, nil
			}
			return job, false, fmt.Errorf("watching %s: %w", found.Ref(), err)
		}
		next, done, err := nextChange(ctx, w, job, jobs)
		w.Stop()
		switch {
		case ctx.Err() != nil:
			return job, false, nil
		case err != nil:
			return job, false, fmt.Errorf("watching %s: %w", found.Ref(), err)
		case done:
			return job, true, nil
		}
		if next != job {
			job = next
			if err := changed(job); err != nil {
				return job, false, err
			}
		}
	}
	return job, false, nil
}

// nextChange waits for the job to change. It returns the job unchanged when
// the watch closed without news, and done when the job was deleted.
func nextChange(ctx context.Context, w watch.Interface, job v1beta1.TrainingJob, jobs jobClient) (v1beta1.TrainingJob, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return job, false, nil
		case event, ok := <-w.ResultChan():
			if !ok {
				return job, false, nil
			}
			switch event.Type {
			case watch.Added, watch.Modified:
				changed, ok := event.Object.(v1beta1.TrainingJob)
				if !ok || changed.GetName() != job.GetName() || changed.GetResourceVersion() == job.GetResourceVersion() {
					continue
				}
				return changed, false, nil
			case watch.Deleted:
				if deleted, ok := event.Object.(v1beta1.TrainingJob); ok && deleted.GetName() == job.GetName() {
					return job, true, nil
				}
			case watch.Error:
				err := apierrors.FromObject(event.Object)
				if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
					return job, false, err
				}
				// The version watched from is too old: start again from now.
				current, err := jobs.Get(ctx, job.GetName())
				if apierrors.IsNotFound(err) {
					return job, true, nil
				}
				return current, false, err
			}
		}
	}
}

// jobEvents are the job's latest events, oldest first.
func jobEvents(ctx context.Context, kube kubernetes.Interface, kind *jobKind, job v1beta1.TrainingJob) ([]corev1.Event, error) {
	return objectEvents(ctx, kube, kind.Name, kind.Ref(job.GetName()), job)
}

// objectEvents are the latest events of an object of the kind, oldest
// first; ref names the object in an error.
func objectEvents(ctx context.Context, kube kubernetes.Interface, kind, ref string, obj metav1.Object) ([]corev1.Event, error) {
	selector := fields.Set{"involvedObject.name": obj.GetName(), "involvedObject.kind": kind}
	list, err := kube.CoreV1().Events(obj.GetNamespace()).List(ctx, metav1.ListOptions{FieldSelector: selector.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the events of %s: %w", ref, err)
	}
	var events []corev1.Event
	for _, event := range list.Items {
		// An object of the same name deleted earlier has events of its own.
		involved := event.InvolvedObject
		if involved.Name == obj.GetName() && involved.Kind == kind && (involved.UID == "" || involved.UID == obj.GetUID()) {
			events = append(events, event)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return eventTime(events[i]).Before(eventTime(events[j])) })
	if len(events) > maxEvents {
		events = events[len(events)-maxEvents:]
	}
	return events, nil
}

// eventTime is when an event was last seen.
func eventTime(event corev1.Event) time.Time {
	switch {
	case !event.LastTimestamp.IsZero():
		return event.LastTimestamp.Time
	case !event.EventTime.IsZero():
		return event.EventTime.Time
	case !event.FirstTimestamp.IsZero():
		return event.FirstTimestamp.Time
	default:
		return event.CreationTimestamp.Time
	}
}

// writeJobStatus is the human view of one job.
func writeJobStatus(out io.Writer, kind *jobKind, job v1beta1.TrainingJob, events []corev1.Event, now time.Time) error {
	spec, status := job.CommonSpec(), job.JobStatus()
	w := newTabWriter(out)
	fmt.Fprintf(w, "Job:\t%s\n", kind.Ref(job.GetName()))
	fmt.Fprintf(w, "Kind:\t%s\n", kind.Name)
	fmt.Fprintf(w, "Namespace:\t%s\n", job.GetNamespace())
	fmt.Fprintf(w, "Phase:\t%s\n", phaseOf(job))
	fmt.Fprintf(w, "Mode:\t%s\n", runMode(spec))
	fmt.Fprintf(w, "Age:\t%s\n", age(job.GetCreationTimestamp().Time, now))
	fmt.Fprintf(w, "Duration:\t%s\n", runDuration(status, now))
	fmt.Fprintf(w, "Backoff:\t%d/%d%s\n", status.BackoffCount, backoffLimit(spec), restartsHow(spec, status))
	if tb := status.Tensorboard; tb != nil {
		fmt.Fprintf(w, "TensorBoard:\t%s\n", tensorboardState(tb))
	}
	writeProgress(w, status, now)
	writeCheckpoint(w, status, now)
	writeAccounting(w, status, now)
	writeSuspectNodes(w, status, now)
	if err := w.Flush(); err != nil {
		return err
	}

	w = newTabWriter(out)
	fmt.Fprintln(w, "Conditions:")
	if len(status.Conditions) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  TYPE\tSTATUS\tREASON\tAGE\tMESSAGE")
		for _, c := range status.Conditions {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, orDash(c.Reason), age(c.LastTransitionTime.Time, now), orDash(c.Message))
		}
	}
	writeAttempts(w, status, now)
	fmt.Fprintln(w, "Replicas:")
	rows := replicaRows(spec, status, now)
	if len(rows) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  REPLICA\tPOD\tPHASE\tEXIT CODE\tPOD UID\tRESTARTS\tLAST FAILURE")
		for _, r := range rows {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.replica, r.pod, r.phase, r.exitCodes, r.podUID, r.restarts, r.lastFailure)
		}
	}
	fmt.Fprintln(w, "Events:")
	if len(events) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		fmt.Fprintln(w, "  TYPE\tREASON\tAGE\tFROM\tMESSAGE")
		for _, event := range events {
			fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", event.Type, event.Reason, eventAge(event, now), eventSource(event), strings.TrimSpace(event.Message))
		}
	}
	return w.Flush()
}

// replicaRow is one line of the replica table.
type replicaRow struct {
	replica, pod, phase, exitCodes, podUID, lastFailure string
	restarts                                            int32
}

// replicaRows lists the replicas the spec asks for, in spec order, with
// what the status reports of each; replicas the status still reports beyond
// the spec (a scaled-down paused job) follow.
func replicaRows(spec *v1beta1.TrainingJobSpec, status *v1beta1.TrainingJobStatus, now time.Time) []replicaRow {
	tasks := map[v1beta1.ReplicaType]*v1beta1.TaskStatus{}
	for i := range status.Tasks {
		tasks[status.Tasks[i].Type] = &status.Tasks[i]
	}
	types := make([]v1beta1.ReplicaType, 0, len(spec.ReplicaSpecs)+len(status.Tasks))
	for _, r := range spec.ReplicaSpecs {
		types = append(types, r.Type)
	}
	for _, task := range status.Tasks {
		if replicaSpec(spec, task.Type) == nil {
			types = append(types, task.Type)
		}
	}

	var rows []replicaRow
	for _, t := range types {
		task := tasks[t]
		if task == nil {
			task = &v1beta1.TaskStatus{Type: t}
		}
		n := max(replicaCount(spec, t), len(task.ReplicaStatus))
		for i := range n {
			row := replicaRow{replica: replicaRef{Type: t, Index: i}.String(), pod: "-", phase: "-", exitCodes: "-", podUID: "-",
				lastFailure: "-", restarts: task.RestartCount}
			if i < len(task.ReplicaStatus) {
				replica := task.ReplicaStatus[i]
				row.pod = orDash(replica.Name)
				row.phase = replicaPhase(replica, now)
				row.exitCodes = exitCodes(replica.Containers)
				row.lastFailure = lastFailure(replica.Containers)
				if replica.UID != "" {
					row.podUID = string(replica.UID)[:min(8, len(replica.UID))]
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// replicaPhase is the replica's phase, with its reason and, while it waits
// out the restart backoff, how long until its next pod: "Deleted (BackOff,
// restarts in 15s)".
func replicaPhase(replica v1beta1.ReplicaStatus, now time.Time) string {
	phase := orDash(string(replica.Phase))
	if replica.Reason == "" {
		// A container that cannot start says why: "Pending (ImagePullBackOff)".
		for _, c := range replica.Containers {
			if c.State == v1beta1.ContainerStateWaiting && c.Reason != "" && c.Reason != "ContainerCreating" {
				return fmt.Sprintf("%s (%s)", phase, c.Reason)
			}
		}
		return phase
	}
	if at := replica.RestartAt; at != nil && at.After(now) {
		return fmt.Sprintf("%s (%s, restarts in %s)", phase, replica.Reason, duration.HumanDuration(at.Sub(now)))
	}
	return fmt.Sprintf("%s (%s)", phase, replica.Reason)
}

// exitCodes shows the exit codes of a replica's terminated containers: just
// the code for a one-container pod, name:code for each otherwise.
func exitCodes(containers []v1beta1.ContainerStatus) string {
	var codes []string
	for _, c := range containers {
		if c.State != v1beta1.ContainerStateTerminated {
			continue
		}
		if len(containers) == 1 {
			return fmt.Sprint(c.ExitCode)
		}
		codes = append(codes, fmt.Sprintf("%s:%d", c.Name, c.ExitCode))
	}
	if len(codes) == 0 {
		return "-"
	}
	return strings.Join(codes, ",")
}

// lastFailureWidth bounds the LAST FAILURE column; the status holds the
// whole recorded message.
const lastFailureWidth = 80

// lastFailure is how a replica's container last failed, as recorded in its
// status even after the pod is gone: "OOMKilled (exit 137): ...".
func lastFailure(containers []v1beta1.ContainerStatus) string {
	for _, c := range containers {
		if t := c.LastTermination; t != nil && t.ExitCode != 0 {
			summary := t.Brief()
			if len(containers) > 1 {
				summary = c.Name + ": " + summary
			}
			if runes := []rune(summary); len(runes) > lastFailureWidth {
				summary = string(runes[:lastFailureWidth-1]) + "…"
			}
			return summary
		}
	}
	return "-"
}

// runMode is Immediate, Debug or Pause, as the server's table says.
func runMode(spec *v1beta1.TrainingJobSpec) string {
	switch {
	case v1beta1.DebugEnabled(spec):
		return "Debug"
	case v1beta1.PauseEnabled(spec):
		return "Pause"
	default:
		return "Immediate"
	}
}

// backoffLimit is the job's limit, or the API's default of 3.
func backoffLimit(spec *v1beta1.TrainingJobSpec) int32 {
	if spec.RunPolicy.BackoffLimit == nil {
		return 3
	}
	return *spec.RunPolicy.BackoffLimit
}

func age(since, now time.Time) string {
	if since.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(since))
}

// runDuration is batch.RunLength as the status shows it; "-" before the
// job started.
func runDuration(status *v1beta1.TrainingJobStatus, now time.Time) string {
	d, started := batch.RunLength(status.StartTime, status.CompletionTime, now)
	if !started {
		return "-"
	}
	return duration.HumanDuration(d)
}

func tensorboardState(tb *v1beta1.DependentStatus) string {
	state := "not ready"
	if tb.Ready {
		state = "ready"
	}
	if tb.Dependent != nil && tb.Dependent.Name != "" {
		state = tb.Dependent.Name + " " + state
	}
	if tb.Reason != "" {
		state += " (" + tb.Reason + ")"
	}
	return state
}

// eventAge is as kubectl describe has it: 3m, or 3m (x2 over 10m).
func eventAge(event corev1.Event, now time.Time) string {
	last := age(eventTime(event), now)
	if event.Count > 1 && !event.FirstTimestamp.IsZero() {
		return fmt.Sprintf("%s (x%d over %s)", last, event.Count, age(event.FirstTimestamp.Time, now))
	}
	return last
}

func eventSource(event corev1.Event) string {
	switch {
	case event.Source.Component != "":
		return event.Source.Component
	case event.ReportingController != "":
		return event.ReportingController
	default:
		return "-"
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// restartsHow notes, after the backoff count, that the job restarts in
// place, and its attempt, or that it asked to and its nodes cannot.
func restartsHow(spec *v1beta1.TrainingJobSpec, status *v1beta1.TrainingJobStatus) string {
	if spec.RunPolicy.RestartStrategy != v1beta1.RestartStrategyInPlace {
		return ""
	}
	if c := meta.FindStatusCondition(status.Conditions, v1beta1.ConditionRestartedInPlace); c != nil &&
		c.Reason == v1beta1.ReasonNoNodeRestartsInPlace {
		return ", recreates its pods: no node they may run on restarts them in place"
	}
	return fmt.Sprintf(", restarts in place (attempt %d)", status.AttemptCount)
}
