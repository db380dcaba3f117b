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

package tuning

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-base/metrics"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
)

// recentTrials is how many of a search's last ended trials the failing
// gauge looks at.
const recentTrials = 5

var (
	trialsDesc = metrics.NewDesc("training_controller_tuning_trials",
		"Trials of each search, by state (Pending, Running, Paused, Succeeded, Failed, Stopped).",
		[]string{"namespace", "search", "state"}, nil, metrics.ALPHA, "")
	bestDesc = metrics.NewDesc("training_controller_tuning_best_objective",
		"The best objective value of each search that has one; metric names the objective.",
		[]string{"namespace", "search", "metric", "direction"}, nil, metrics.ALPHA, "")
	recentFailedDesc = metrics.NewDesc("training_controller_tuning_recent_failed_trials",
		"Of the last 5 trials of each running search that ended (Succeeded or Failed), how many failed.",
		[]string{"namespace", "search"}, nil, metrics.ALPHA, "")
	recentEndedDesc = metrics.NewDesc("training_controller_tuning_recent_ended_trials",
		"How many of the last 5 trials of each running search that ended are counted in recent_failed_trials.",
		[]string{"namespace", "search"}, nil, metrics.ALPHA, "")
)

// Collector returns the collector of the searches' gauges; register it with
// legacyregistry.CustomMustRegister.
func (c *Controller) Collector() metrics.StableCollector {
	return &collector{c: c}
}

type collector struct {
	metrics.BaseStableCollector
	c *Controller
}

func (*collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- trialsDesc
	ch <- bestDesc
	ch <- recentFailedDesc
	ch <- recentEndedDesc
}

func (col *collector) CollectWithStability(ch chan<- metrics.Metric) {
	searches, err := col.c.searches.List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range searches {
		st := &s.Status
		for state, n := range map[v1beta1.TrialState]int32{
			v1beta1.TrialPending: st.Counts.Pending, v1beta1.TrialRunning: st.Counts.Running, v1beta1.TrialPaused: st.Counts.Paused,
			v1beta1.TrialSucceeded: st.Counts.Succeeded, v1beta1.TrialFailed: st.Counts.Failed, v1beta1.TrialStopped: st.Counts.Stopped,
		} {
			ch <- metrics.NewLazyConstMetric(trialsDesc, metrics.GaugeValue, float64(n), s.Namespace, s.Name, string(state))
		}
		if v, err := batch.ParseMetricValue(st.BestValue); err == nil && st.BestValue != "" {
			ch <- metrics.NewLazyConstMetric(bestDesc, metrics.GaugeValue, v, s.Namespace, s.Name,
				s.Spec.Objective.Metric, string(s.Spec.Objective.Direction))
		}
		if ended(s.Status.Conditions) {
			continue
		}
		failed, ended := 0, 0
		// Trials are recorded in the order they were made; the last that
		// ended are near the end.
		for i := len(st.Trials) - 1; i >= 0 && ended < recentTrials; i-- {
			switch st.Trials[i].State {
			case v1beta1.TrialFailed:
				failed++
				ended++
			case v1beta1.TrialSucceeded:
				ended++
			}
		}
		ch <- metrics.NewLazyConstMetric(recentFailedDesc, metrics.GaugeValue, float64(failed), s.Namespace, s.Name)
		ch <- metrics.NewLazyConstMetric(recentEndedDesc, metrics.GaugeValue, float64(ended), s.Namespace, s.Name)
	}
}
