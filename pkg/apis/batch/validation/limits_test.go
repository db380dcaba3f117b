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

package validation

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
)

// withTotalReplicas gives the worker as many replicas as make the job's
// total the given number.
func withTotalReplicas(total int64) specMod {
	return func(s *batch.TrainingJobSpec) {
		others := batch.TotalReplicas(s.ReplicaSpecs) - int64(*worker(s).Replicas)
		worker(s).Replicas = ptr.To(int32(total - others))
	}
}

// commandOfBytes is a command line of exactly n bytes as
// batch.MaxCommandBytes counts them.
func commandOfBytes(n int) []string {
	command := []string{"bash", "-c"}
	script := n - batch.CommandBytes(command) - 1
	return append(command, strings.Repeat("x", script))
}

// limitCases are the bounds of the shared spec, each at and past its limit;
// TestSharedSpec runs them against both kinds.
func limitCases() []commonCase {
	withDebugCommand := func(command []string) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.RunMode = &batch.RunMode{Debug: &batch.DebugMode{Enabled: true, ReplicaSpecs: []batch.ReplicaDebugSpec{
				{Type: batch.ReplicaTypeWorker, Command: command},
			}}}
		}
	}
	withResume := func(command, args []string) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true, ResumeSpecs: []batch.ResumeSpec{
				{Type: batch.ReplicaTypeWorker, Command: command, Args: args},
			}}}
		}
	}
	// withTemplateNote gives the first replica type's template an
	// annotation of n bytes.
	withTemplateNote := func(n int) specMod {
		return func(s *batch.TrainingJobSpec) {
			s.ReplicaSpecs[0].Template.Annotations = map[string]string{"example.com/note": strings.Repeat("x", n)}
		}
	}
	policy := func(change func(*batch.RunPolicy)) specMod {
		return func(s *batch.TrainingJobSpec) { change(&s.RunPolicy) }
	}
	const (
		deadline = "spec.runPolicy.activeDeadlineSeconds"
		backoff  = "spec.runPolicy.backoffLimit"
		ttl      = "spec.runPolicy.ttlSecondsAfterFinished"
	)
	atCap, overCap := commandOfBytes(batch.MaxCommandBytes), commandOfBytes(batch.MaxCommandBytes+1)
	return []commonCase{
		{"replicas at the cap", withTotalReplicas(batch.MaxTotalReplicas), nil},
		{"replicas one over the cap", withTotalReplicas(batch.MaxTotalReplicas + 1), []wantErr{invalid("spec.replicaSpecs")}},
		{"replicas at the int32 limit", func(s *batch.TrainingJobSpec) { worker(s).Replicas = ptr.To[int32](math.MaxInt32) },
			[]wantErr{invalid("spec.replicaSpecs")}},
		{"replicas 100000", func(s *batch.TrainingJobSpec) { worker(s).Replicas = ptr.To[int32](100000) },
			[]wantErr{invalid("spec.replicaSpecs")}},

		{"deadline at the maximum", policy(func(p *batch.RunPolicy) { p.ActiveDeadlineSeconds = ptr.To[int64](batch.MaxActiveDeadlineSeconds) }), nil},
		{"deadline over the maximum", policy(func(p *batch.RunPolicy) { p.ActiveDeadlineSeconds = ptr.To[int64](batch.MaxActiveDeadlineSeconds + 1) }),
			[]wantErr{invalid(deadline)}},
		{"deadline at the int64 limit", policy(func(p *batch.RunPolicy) { p.ActiveDeadlineSeconds = ptr.To[int64](math.MaxInt64) }),
			[]wantErr{invalid(deadline)}},
		{"start timeout at the maximum", policy(func(p *batch.RunPolicy) { p.StartTimeoutSeconds = ptr.To[int64](batch.MaxStartTimeoutSeconds) }), nil},
		{"start timeout over the maximum", policy(func(p *batch.RunPolicy) { p.StartTimeoutSeconds = ptr.To[int64](batch.MaxStartTimeoutSeconds + 1) }),
			[]wantErr{invalid("spec.runPolicy.startTimeoutSeconds")}},
		{"backoff limit at the maximum", policy(func(p *batch.RunPolicy) { p.BackoffLimit = ptr.To[int32](batch.MaxBackoffLimit) }), nil},
		{"backoff limit over the maximum", policy(func(p *batch.RunPolicy) { p.BackoffLimit = ptr.To[int32](batch.MaxBackoffLimit + 1) }),
			[]wantErr{invalid(backoff)}},
		{"backoff limit at the int32 limit", policy(func(p *batch.RunPolicy) { p.BackoffLimit = ptr.To[int32](math.MaxInt32) }),
			[]wantErr{invalid(backoff)}},
		{"TTL at the maximum", policy(func(p *batch.RunPolicy) { p.TTLSecondsAfterFinished = ptr.To[int32](batch.MaxTTLSecondsAfterFinished) }), nil},
		{"TTL over the maximum", policy(func(p *batch.RunPolicy) {
			p.TTLSecondsAfterFinished = ptr.To[int32](batch.MaxTTLSecondsAfterFinished + 1)
		}),
			[]wantErr{invalid(ttl)}},

		{"a template of 100 KiB", withTemplateNote(100 * 1024), nil},
		{"a template over the size limit", withTemplateNote(batch.MaxPodTemplateBytes),
			[]wantErr{tooLong("spec.replicaSpecs[0].template")}},

		{"debug command at the size limit", withDebugCommand(atCap), nil},
		{"debug command over the size limit", withDebugCommand(overCap), []wantErr{tooLong("spec.runMode.debug.replicaSpecs[0].command")}},
		{"debug command of many empty entries", withDebugCommand(make([]string, batch.MaxCommandBytes+1)),
			[]wantErr{tooLong("spec.runMode.debug.replicaSpecs[0].command")}},
		{"resume command and args at the size limit", withResume(atCap, atCap), nil},
		{"resume command over the size limit", withResume(overCap, nil), []wantErr{tooLong("spec.runMode.pause.resumeSpecs[0].command")}},
		{"resume args over the size limit", withResume(nil, overCap), []wantErr{tooLong("spec.runMode.pause.resumeSpecs[0].args")}},
	}
}

// TestReplicaCapMessage checks that the refusal names the total and the
// maximum, and that counts near the int32 limit do not overflow the total.
func TestReplicaCapMessage(t *testing.T) {
	cases := []struct {
		name      string
		mod       specMod
		wantTotal string
	}{
		{"one over", withTotalReplicas(batch.MaxTotalReplicas + 1), strconv.Itoa(batch.MaxTotalReplicas + 1)},
		{"two types at the int32 limit", func(s *batch.TrainingJobSpec) {
			for i := range s.ReplicaSpecs {
				if s.ReplicaSpecs[i].Type != batch.ReplicaTypeMaster {
					s.ReplicaSpecs[i].Replicas = ptr.To[int32](math.MaxInt32)
				}
			}
			s.ReplicaSpecs = append(s.ReplicaSpecs, replica(batch.ReplicaTypeNode, math.MaxInt32, "pytorch"))
		}, strconv.FormatInt(2*math.MaxInt32+1, 10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidatePyTorchTrainingJob(ptJob(onPT(tc.mod)))
			expectErrors(t, errs, invalid("spec.replicaSpecs"))
			if len(errs) != 1 {
				return
			}
			want := fmt.Sprintf("add up to %s, over the maximum of %d", tc.wantTotal, batch.MaxTotalReplicas)
			if !strings.Contains(errs[0].Detail, want) || fmt.Sprint(errs[0].BadValue) != tc.wantTotal {
				t.Errorf("error %q, want the value %s and a message containing %q", errs[0].Error(), tc.wantTotal, want)
			}
		})
	}
}

// TestPyTorchLimits covers the bounds of the fields only PyTorch jobs have,
// and the number of replica types, which only PyTorch leaves open.
func TestPyTorchLimits(t *testing.T) {
	withTorchrun := func(tc batch.TorchrunConfig) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			tc.Enabled = true
			j.Spec.TorchrunConfig = &tc
		}
	}
	withElastic := func(minimum, maximum, expected int32) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			j.Spec.Elastic = &batch.ElasticConfig{Enabled: true, MinReplicas: &minimum, MaxReplicas: &maximum, ExpectedReplicas: &expected}
		}
	}
	withTypes := func(n int) func(*batch.PyTorchTrainingJob) {
		return func(j *batch.PyTorchTrainingJob) {
			j.Spec.ReplicaSpecs = []batch.ReplicaSpec{replica(batch.ReplicaTypeMaster, 1, "pytorch")}
			for i := 1; i < n; i++ {
				j.Spec.ReplicaSpecs = append(j.Spec.ReplicaSpecs, replica(batch.ReplicaType(fmt.Sprintf("type-%d", i)), 0, "pytorch"))
			}
		}
	}
	const replicaCap = batch.MaxTotalReplicas
	cases := []struct {
		name string
		job  *batch.PyTorchTrainingJob
		want []wantErr
	}{
		{"torchrun restarts at the maximum", ptJob(withTorchrun(batch.TorchrunConfig{MaxRestarts: ptr.To[int32](batch.MaxTorchrunRestarts)})), nil},
		{"torchrun restarts over the maximum", ptJob(withTorchrun(batch.TorchrunConfig{MaxRestarts: ptr.To[int32](batch.MaxTorchrunRestarts + 1)})),
			[]wantErr{invalid("spec.torchrunConfig.maxRestarts")}},
		{"torchrun options at the size limit", ptJob(withTorchrun(batch.TorchrunConfig{ExtraOptions: commandOfBytes(batch.MaxCommandBytes)})), nil},
		{"torchrun options over the size limit", ptJob(withTorchrun(batch.TorchrunConfig{ExtraOptions: commandOfBytes(batch.MaxCommandBytes + 1)})),
			[]wantErr{tooLong("spec.torchrunConfig.extraOptions")}},
		{"elastic range up to the cap", ptJob(withElastic(1, replicaCap, replicaCap)), nil},
		{"elastic range beyond the cap", ptJob(withElastic(replicaCap+1, replicaCap+2, replicaCap+1)), []wantErr{
			invalid("spec.elastic.minReplicas"), invalid("spec.elastic.maxReplicas"), invalid("spec.elastic.expectedReplicas"),
		}},
		{"elastic maximum beyond the cap", ptJob(withElastic(1, math.MaxInt32, 2)), []wantErr{invalid("spec.elastic.maxReplicas")}},
		{"replica types at the limit", ptJob(withTypes(batch.MaxReplicaTypes)), nil},
		{"replica types over the limit", ptJob(withTypes(batch.MaxReplicaTypes + 1)), []wantErr{
			{field.ErrorTypeTooMany, "spec.replicaSpecs"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidatePyTorchTrainingJob(tc.job), tc.want...)
		})
	}
}

// TestLimitsOnUpdate makes sure a change cannot take a job past a limit.
func TestLimitsOnUpdate(t *testing.T) {
	old := tfJob(func(j *batch.TensorFlowTrainingJob) {
		j.Spec.RunMode = &batch.RunMode{Pause: &batch.PauseMode{Enabled: true}}
	})
	job := old.DeepCopy()
	withTotalReplicas(batch.MaxTotalReplicas + 1)(&job.Spec.TrainingJobSpec)
	job.Spec.RunPolicy.BackoffLimit = ptr.To[int32](math.MaxInt32)
	expectErrors(t, ValidateTensorFlowTrainingJobUpdate(job, old), invalid("spec.replicaSpecs"), invalid("spec.runPolicy.backoffLimit"))
}
