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

package deploy

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/jobclient"
)

// runtimeResources are the runtimes, which the controller's role lets it
// get for the trials made from them.
var runtimeResources = []string{"clustertrainingruntimes", "trainingruntimes"}

// tuning: a search of one trial of each kind, paused and resumed as a
// whole: the controller records and creates the trial, then pauses and
// resumes it (tuningjobs list/watch and status update, every kind's create,
// pause and resume). Then searches whose trials name a runtime, the
// cluster's and the namespace's: their trials are created only if the
// controller may get the runtimes.
func (s *scenarios) tuning(t *testing.T) {
	s.t = t
	ctx := context.Background()
	templates := map[string]v1beta1.TrainingJobTemplate{
		"TensorFlowTrainingJob": {Tensorflow: &tfJob("x", "1h").Spec},
		"PyTorchTrainingJob":    {Pytorch: &ptJob("x", "1h").Spec},
		"XGBoostTrainingJob":    {Xgboost: &xgbJob("x", "1h").Spec},
		"GenericJob":            {Generic: &genericJob("x", "1h").Spec},
		"MPIJob":                {MPI: &mpiJob("x", "1h").Spec},
	}
	searches := s.c.jobs.BatchV1beta1().TuningJobs(s.ns)
	for _, k := range jobclient.Kinds {
		name := "tune-" + k.ShortName
		search := &v1beta1.TuningJob{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1beta1.TuningJobSpec{
				TrialTemplate: templates[k.Name],
				Parameters:    []v1beta1.TuningParameter{{Name: "lr", Type: v1beta1.ParameterDouble, Min: "0.001", Max: "0.1"}},
				Objective:     v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize},
				MaxTrials:     1,
			},
		}
		if _, err := searches.Create(ctx, search, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", k.Name, err)
		}
		trial := k.Client(s.c.jobs, s.ns)
		paused := func(want bool) func(ctx context.Context) (bool, error) {
			return func(ctx context.Context) (bool, error) {
				job, err := trial.Get(ctx, name+"-0")
				if err != nil {
					return false, ignoreNotFound(err)
				}
				return v1beta1.PauseEnabled(job.CommonSpec()) == want, nil
			}
		}
		s.wait(fmt.Sprintf("the trial of %s", name), paused(false))
		if _, err := searches.Pause(ctx, name, &v1beta1.PauseRequest{}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s.wait(fmt.Sprintf("the trial of %s paused with it", name), paused(true))
		if _, err := searches.Resume(ctx, name, &v1beta1.ResumeRequest{}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s.wait(fmt.Sprintf("the trial of %s resumed with it", name), paused(false))
		if err := searches.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
	}

	team := &v1beta1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Name: "team-generic"},
		Spec:       v1beta1.TrainingRuntimeSpec{Template: v1beta1.TrainingJobTemplate{Generic: &genericJob("x", "1h").Spec}},
	}
	if _, err := s.c.jobs.BatchV1beta1().TrainingRuntimes(s.ns).Create(ctx, team, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, ref := range map[string]v1beta1.RuntimeRef{
		"tune-cluster-runtime": {Name: "generic", Kind: "ClusterTrainingRuntime"},
		"tune-team-runtime":    {Name: "team-generic", Kind: "TrainingRuntime"},
	} {
		search := &v1beta1.TuningJob{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1beta1.TuningJobSpec{
				TrialTemplate: v1beta1.TrainingJobTemplate{Generic: &v1beta1.GenericJobSpec{TrainingJobSpec: v1beta1.TrainingJobSpec{
					RuntimeRef: &ref,
					Trainer:    &v1beta1.Trainer{Command: []string{"sleep", "${param.seconds}"}},
				}}},
				Parameters: []v1beta1.TuningParameter{{Name: "seconds", Type: v1beta1.ParameterInt, Min: "1", Max: "9"}},
				Objective:  v1beta1.TuningObjective{Metric: "loss", Direction: v1beta1.Minimize},
				MaxTrials:  1,
			},
		}
		if _, err := searches.Create(ctx, search, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s.wait(fmt.Sprintf("the trial of %s, made from %s %s", name, ref.Kind, ref.Name), func(ctx context.Context) (bool, error) {
			got, err := searches.Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(got.Status.Trials) == 0 {
				return false, err
			}
			switch trial := got.Status.Trials[0]; trial.State {
			case v1beta1.TrialFailed:
				return false, fmt.Errorf("the trial failed: %s", trial.Message)
			case v1beta1.TrialPending:
				return false, nil
			}
			return true, nil
		})
		if err := searches.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
	}
}
