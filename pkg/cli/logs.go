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
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

type logsOptions struct {
	container   string
	follow      bool
	allReplicas bool
	prefix      bool
	tail        int64
	maxRequests int
}

func newLogsCommand(e *env) *cobra.Command {
	var o logsOptions
	cmd := &cobra.Command{
		Use:   "logs JOB [REPLICA]",
		Short: "Print the logs of a training job's replica",
		Long: `Print the logs of a replica of a training job. REPLICA is TYPE-INDEX, e.g.
worker-1 for the pod <job>-worker-1. Without REPLICA, the replica whose outcome
decides the job, by its kind's rule: the leader (a chief, master or launcher)
where the job has one, which for MPI shows every rank's output; otherwise the
replica its success rules name, a worker, or index 0 of the first replica
type. The container is the kind's training container, else the first one,
unless -c names another.

With --all-replicas, every pod of the job is shown (concurrently with -f), each
line prefixed with [pod/container] unless --prefix=false.`,
		Example: `  kubectl training logs pj/resnet-ddp
  kubectl training logs tj/mnist worker-1 -f
  kubectl training logs tj/mnist --all-replicas -f --tail 20`,
		Args:              cobra.RangeArgs(1, 2),
		ValidArgsFunction: completeJobThenReplica(e),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.allReplicas && !cmd.Flags().Changed("prefix") {
				o.prefix = true // as kubectl logs does for more than one pod
			}
			return o.run(cmd.Context(), e, args)
		},
	}
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "The container to print the logs of; default: the training container.")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "Keep streaming the logs as they are written.")
	cmd.Flags().BoolVar(&o.allReplicas, "all-replicas", false, "Print the logs of every pod of the job.")
	cmd.Flags().BoolVar(&o.prefix, "prefix", false, "Prefix each line with [pod/container]; default true with --all-replicas.")
	cmd.Flags().Int64Var(&o.tail, "tail", -1, "Print only the last N lines of each log; -1 prints all.")
	cmd.Flags().IntVar(&o.maxRequests, "max-log-requests", 10, "With --all-replicas -f, the most logs to stream at once.")
	return cmd
}

// logSource is one container's log.
type logSource struct {
	pod, container string
}

func (s logSource) String() string { return s.pod + "/" + s.container }

func (o *logsOptions) run(ctx context.Context, e *env, args []string) error {
	if o.allReplicas && len(args) > 1 {
		return errors.New("name either a REPLICA or --all-replicas, not both")
	}
	if o.tail < -1 {
		return fmt.Errorf("--tail %d: must be -1 (all lines) or more", o.tail)
	}
	c, err := e.clients()
	if err != nil {
		return err
	}
	found, err := c.findJob(ctx, args[0])
	if err != nil {
		return err
	}

	var sources []logSource
	if o.allReplicas {
		sources, err = o.jobPodSources(ctx, c, found)
	} else {
		var source logSource
		source, err = o.replicaSource(found, args[1:])
		sources = []logSource{source}
	}
	if err != nil {
		return err
	}
	if o.follow && len(sources) > o.maxRequests {
		return fmt.Errorf("%s has %d pods, more than --max-log-requests=%d to follow at once; raise it", found.Ref(), len(sources), o.maxRequests)
	}
	err = o.stream(ctx, e, c.kube.CoreV1().Pods(c.namespace), sources)
	if apierrors.IsNotFound(err) && !o.allReplicas {
		// A paused, pending or cleaned-up job has no pods to read.
		return fmt.Errorf("%w (%s is %s)", err, found.Ref(), phaseOf(found.job))
	}
	return err
}

// replicaSource is the log of the replica named (or the deciding one) in
// the job's training container or -c.
func (o *logsOptions) replicaSource(found foundJob, replicaArg []string) (logSource, error) {
	spec := found.job.CommonSpec()
	var replica replicaRef
	if len(replicaArg) > 0 {
		var err error
		if replica, err = parseReplica(replicaArg[0]); err != nil {
			return logSource{}, err
		}
		if err := checkReplica(spec, replica); err != nil {
			return logSource{}, fmt.Errorf("%s: %w", found.Ref(), err)
		}
	} else {
		var ok bool
		if replica, ok = decidingReplica(found.job); !ok {
			return logSource{}, fmt.Errorf("%s has no replicas", found.Ref())
		}
	}
	container := o.container
	if container == "" {
		container = trainingContainer(found.kind, replicaSpec(spec, replica.Type).Template.Spec.Containers)
	}
	return logSource{pod: replica.PodName(found.job.GetName()), container: container}, nil
}

// jobPodSources lists the pods the job has now, in the order of its replica
// types and indexes.
func (o *logsOptions) jobPodSources(ctx context.Context, c clients, found foundJob) ([]logSource, error) {
	pods, err := c.kube.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: jobPodSelector(found)})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", found.Ref(), err)
	}
	if len(pods.Items) == 0 {
		return nil, fmt.Errorf("%s has no pods in namespace %q (phase %s)", found.Ref(), c.namespace, phaseOf(found.job))
	}
	typeOrder := map[string]int{}
	for i, t := range replicaTypes(found.job.CommonSpec()) {
		typeOrder[t] = i
	}
	sort.SliceStable(pods.Items, func(i, j int) bool {
		a, b := pods.Items[i].Labels, pods.Items[j].Labels
		if ta, tb := typeOrder[a[v1beta1.LabelReplicaType]], typeOrder[b[v1beta1.LabelReplicaType]]; ta != tb {
			return ta < tb
		}
		ia, _ := strconv.Atoi(a[v1beta1.LabelReplicaIndex])
		ib, _ := strconv.Atoi(b[v1beta1.LabelReplicaIndex])
		if ia != ib {
			return ia < ib
		}
		return pods.Items[i].Name < pods.Items[j].Name
	})

	sources := make([]logSource, 0, len(pods.Items))
	for _, pod := range pods.Items {
		container := o.container
		if container == "" {
			container = trainingContainer(found.kind, pod.Spec.Containers)
		}
		sources = append(sources, logSource{pod: pod.Name, container: container})
	}
	return sources, nil
}

// jobPodSelector selects the pods of a job, and no other kind's job of the
// same name.
func jobPodSelector(found foundJob) string {
	return labels.SelectorFromSet(labels.Set{
		v1beta1.LabelJobName: found.job.GetName(),
		v1beta1.LabelJobKind: found.kind.Name,
	}).String()
}

// stream copies the logs to the output: one after the other, or all at once
// when following, since a followed log never ends.
func (o *logsOptions) stream(ctx context.Context, e *env, pods typedcorev1.PodInterface, sources []logSource) error {
	out := &lineWriter{out: e.streams.Out}
	copyOne := func(source logSource) error { return o.copyLog(ctx, pods, out, source) }

	if !o.follow || len(sources) == 1 {
		var errs []error
		for _, source := range sources {
			if err := copyOne(source); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}

	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i, source := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = copyOne(source)
			if errs[i] != nil {
				// Tell at once: the other streams may go on for long.
				fmt.Fprintln(e.streams.ErrOut, ErrorMessage(errs[i]))
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// copyLog copies one container's log to out, each line prefixed with
// [pod/container] if o.prefix says so. An interrupted copy is no failure.
func (o *logsOptions) copyLog(ctx context.Context, pods typedcorev1.PodInterface, out *lineWriter, source logSource) error {
	opts := &corev1.PodLogOptions{Container: source.container, Follow: o.follow}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	logs, err := pods.GetLogs(source.pod, opts).Stream(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("logs of %s: %w", source, err)
	}
	defer logs.Close()
	prefix := ""
	if o.prefix {
		prefix = "[" + source.String() + "] "
	}
	if err := out.copyLines(prefix, logs); err != nil && ctx.Err() == nil {
		return fmt.Errorf("logs of %s: %w", source, err)
	}
	return nil
}

// lineWriter writes whole lines from concurrent streams, so that lines of
// different pods never interleave mid-line.
type lineWriter struct {
	mu  sync.Mutex
	out io.Writer
}

func (w *lineWriter) copyLines(prefix string, r io.Reader) error {
	reader := bufio.NewReader(r)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			w.mu.Lock()
			_, werr := io.WriteString(w.out, prefix)
			if werr == nil {
				_, werr = w.out.Write(line)
			}
			w.mu.Unlock()
			if werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// phaseOf is a job's phase, Pending before the controller first reported.
func phaseOf(job v1beta1.TrainingJob) v1beta1.JobPhase {
	if phase := job.JobStatus().Phase; phase != "" {
		return phase
	}
	return v1beta1.JobPending
}
