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
	"io"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// listedJob is a row of the job list.
type listedJob struct {
	kind *jobKind
	job  v1beta1.TrainingJob
}

// listJobs prints the jobs of every kind, like kubectl get trainingjobs.
func listJobs(ctx context.Context, e *env, allNamespaces bool) error {
	c, err := e.clients()
	if err != nil {
		return err
	}
	namespace := c.namespace
	if allNamespaces {
		namespace = metav1.NamespaceAll
	}
	var rows []listedJob
	for _, kind := range jobKinds {
		jobs, err := kind.Client(c.training, namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("listing %s: %w", kind.Resource, err)
		}
		for _, job := range jobs {
			rows = append(rows, listedJob{kind: kind, job: job})
		}
	}
	if len(rows) == 0 {
		if allNamespaces {
			fmt.Fprintln(e.streams.ErrOut, "No training jobs found.")
		} else {
			fmt.Fprintf(e.streams.ErrOut, "No training jobs found in %s namespace.\n", namespace)
		}
		return nil
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i].job, rows[j].job
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return writeJobList(e.streams.Out, rows, allNamespaces, e.now())
}

// writeJobList prints one line per job: NAME, KIND, PHASE, READY (replicas
// running or succeeded, of all), RESTARTS (the backoff count) and AGE.
func writeJobList(out io.Writer, rows []listedJob, withNamespace bool, now time.Time) error {
	w := newTabWriter(out)
	if withNamespace {
		fmt.Fprint(w, "NAMESPACE\t")
	}
	fmt.Fprintln(w, "NAME\tKIND\tPHASE\tREADY\tRESTARTS\tAGE")
	for _, row := range rows {
		spec, status := row.job.CommonSpec(), row.job.JobStatus()
		total := 0
		for _, r := range spec.ReplicaSpecs {
			total += replicaCount(spec, r.Type)
		}
		if withNamespace {
			fmt.Fprintf(w, "%s\t", row.job.GetNamespace())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d/%d\t%d\t%s\n", row.job.GetName(), row.kind.Name, phaseOf(row.job),
			status.Aggregate.Running+status.Aggregate.Succeeded, total, status.BackoffCount,
			age(row.job.GetCreationTimestamp().Time, now))
	}
	return w.Flush()
}
