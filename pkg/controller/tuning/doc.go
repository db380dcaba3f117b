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

// Package tuning is the controller of TuningJobs, hyperparameter searches.
// It records each trial in the search's status before it creates the
// trial's job, so that a restart never makes a trial twice; it reads the
// trials' progress reports into objective values and curves; it pauses the
// trials asha or the median rule stops, and resumes the ones asha promotes;
// and it ends the search when the goal is reached, the trials are spent or
// too many failed.
//
//   - controller.go: the informers, the queue and the workers.
//   - plan.go: what a search's status and trials should be, from the
//     trials' jobs (no API calls; most of the tests are here).
//   - trials.go: a trial's job made from the template, and what a trial's
//     job says of the trial.
//   - sync.go: one sync: observe, plan, write the status, then act.
//   - metrics.go: the searches' trials by state and best values.
package tuning
