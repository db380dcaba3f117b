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
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"tensorstack.dev/training/pkg/apis/batch"
)

// parameterName is the form of a parameter's name, which placeholders use.
var parameterName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// maxASHAResource bounds the last rung, so that computing it cannot
// overflow.
const maxASHAResource = int64(1) << 53

// ValidateTuningJob checks a search being created.
func ValidateTuningJob(job *batch.TuningJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMeta(&job.ObjectMeta, true, apivalidation.NameIsDNS1035Label, metadataPath)
	allErrs = append(allErrs, validateTuningName(job)...)
	return append(allErrs, validateTuningJobSpec(job.Name, &job.Spec, specPath)...)
}

// ValidateTuningJobUpdate checks a change of a search's spec: only how many
// trials it runs, at once and in all, and whether it is suspended may
// change; what a trial is and how it is judged may not, or the trials made
// so far would no longer be comparable.
func ValidateTuningJobUpdate(job, old *batch.TuningJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&job.ObjectMeta, &old.ObjectMeta, metadataPath)
	allErrs = append(allErrs, validateTuningJobSpec(job.Name, &job.Spec, specPath)...)
	mutable := old.Spec.DeepCopy()
	mutable.ParallelTrials, mutable.MaxTrials = job.Spec.ParallelTrials, job.Spec.MaxTrials
	mutable.MaxFailedTrials, mutable.Suspend = job.Spec.MaxFailedTrials, job.Spec.Suspend
	if !apiequality.Semantic.DeepEqual(mutable, &job.Spec) {
		allErrs = append(allErrs, field.Forbidden(specPath,
			"only parallelTrials, maxTrials, maxFailedTrials and suspend may change once a search exists"))
	}
	if made := int32(len(old.Status.Trials)); job.Spec.MaxTrials < made {
		allErrs = append(allErrs, field.Invalid(specPath.Child("maxTrials"), job.Spec.MaxTrials,
			fmt.Sprintf("the search has made %d trials already", made)))
	}
	return allErrs
}

// ValidateTuningJobStatusUpdate checks a write of a search's status.
func ValidateTuningJobStatusUpdate(job, old *batch.TuningJob) field.ErrorList {
	allErrs := apivalidation.ValidateObjectMetaUpdate(&job.ObjectMeta, &old.ObjectMeta, metadataPath)
	statusPath := field.NewPath("status")
	allErrs = append(allErrs, metav1validation.ValidateConditions(job.Status.Conditions, statusPath.Child("conditions"))...)
	if n := len(job.Status.Trials); n > batch.MaxTrials {
		allErrs = append(allErrs, field.TooMany(statusPath.Child("trials"), n, batch.MaxTrials))
	}
	for i := range job.Status.Trials {
		if n := len(job.Status.Trials[i].Curve); n > batch.MaxTrialCurvePoints {
			allErrs = append(allErrs, field.TooMany(statusPath.Child("trials").Index(i).Child("curve"), n, batch.MaxTrialCurvePoints))
		}
	}
	return allErrs
}

// validateTuningName checks that the trials' names, <search>-<index>, are
// valid job names.
func validateTuningName(job *batch.TuningJob) field.ErrorList {
	if job.Name == "" || job.Spec.MaxTrials < 1 {
		return nil
	}
	longest := batch.TrialName(job.Name, min(job.Spec.MaxTrials, batch.MaxTrials)-1)
	if len(longest) > utilvalidation.DNS1035LabelMaxLength {
		return field.ErrorList{field.TooLong(metadataPath.Child("name"), job.Name,
			utilvalidation.DNS1035LabelMaxLength-(len(longest)-len(job.Name)))}
	}
	return nil
}

func validateTuningJobSpec(name string, spec *batch.TuningJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	allErrs = append(allErrs, validateTuningParameters(spec.Parameters, fldPath.Child("parameters"))...)
	allErrs = append(allErrs, validateTrialTemplate(name, spec, fldPath.Child("trialTemplate"))...)
	allErrs = append(allErrs, validateObjective(&spec.Objective, fldPath.Child("objective"))...)
	allErrs = append(allErrs, validateAlgorithm(spec, fldPath.Child("algorithm"))...)
	allErrs = append(allErrs, validateEarlyStopping(spec.EarlyStopping, fldPath.Child("earlyStopping"))...)
	allErrs = append(allErrs, validateTrialCounts(spec, fldPath)...)
	return allErrs
}

func validateTrialCounts(spec *batch.TuningJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	maxPath := fldPath.Child("maxTrials")
	switch {
	case spec.MaxTrials < 1:
		allErrs = append(allErrs, field.Invalid(maxPath, spec.MaxTrials, "must be at least 1"))
	case spec.MaxTrials > batch.MaxTrials:
		allErrs = append(allErrs, field.Invalid(maxPath, spec.MaxTrials, fmt.Sprintf("must be at most %d", batch.MaxTrials)))
	}
	parallelPath := fldPath.Child("parallelTrials")
	switch {
	case spec.ParallelTrials < 1:
		allErrs = append(allErrs, field.Invalid(parallelPath, spec.ParallelTrials, "must be at least 1"))
	case spec.MaxTrials >= 1 && spec.ParallelTrials > spec.MaxTrials:
		allErrs = append(allErrs, field.Invalid(parallelPath, spec.ParallelTrials,
			fmt.Sprintf("must be at most maxTrials (%d): more trials cannot run at once than the search makes", spec.MaxTrials)))
	}
	if n := spec.MaxFailedTrials; n != nil && *n < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedTrials"), *n, "must be at least 0"))
	}
	return allErrs
}

func validateTuningParameters(params []batch.TuningParameter, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case len(params) == 0:
		return field.ErrorList{field.Required(fldPath, "a search varies at least one parameter")}
	case len(params) > batch.MaxTuningParameters:
		allErrs = append(allErrs, field.TooMany(fldPath, len(params), batch.MaxTuningParameters))
	}
	seen := map[string]bool{}
	for i := range params {
		p, path := &params[i], fldPath.Index(i)
		switch {
		case !parameterName.MatchString(p.Name):
			allErrs = append(allErrs, field.Invalid(path.Child("name"), p.Name,
				"must be letters, digits and '_', starting with a letter"))
		case len(p.Name) > utilvalidation.DNS1035LabelMaxLength:
			allErrs = append(allErrs, field.TooLong(path.Child("name"), p.Name, utilvalidation.DNS1035LabelMaxLength))
		case seen[p.Name]:
			allErrs = append(allErrs, field.Duplicate(path.Child("name"), p.Name))
		}
		seen[p.Name] = true
		allErrs = append(allErrs, validateTuningParameter(p, path)...)
	}
	return allErrs
}

func validateTuningParameter(p *batch.TuningParameter, path *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch p.Type {
	case batch.ParameterCategorical:
		if len(p.Values) == 0 {
			allErrs = append(allErrs, field.Required(path.Child("values"), "a categorical parameter needs at least one value"))
		}
		seen := map[string]bool{}
		for i, v := range p.Values {
			if seen[v] {
				allErrs = append(allErrs, field.Duplicate(path.Child("values").Index(i), v))
			}
			seen[v] = true
		}
		for _, f := range []struct {
			name, value string
		}{{"min", p.Min}, {"max", p.Max}, {"step", p.Step}} {
			if f.value != "" {
				allErrs = append(allErrs, field.Forbidden(path.Child(f.name), "a categorical parameter takes values, not a range"))
			}
		}
		if p.LogScale {
			allErrs = append(allErrs, field.Forbidden(path.Child("logScale"), "a categorical parameter takes values, not a range"))
		}
	case batch.ParameterDouble, batch.ParameterInt:
		if len(p.Values) > 0 {
			allErrs = append(allErrs, field.Forbidden(path.Child("values"), "a "+string(p.Type)+" parameter takes min and max"))
		}
		lo, loErr := parseBound(p.Min, p.Type, path.Child("min"), true)
		hi, hiErr := parseBound(p.Max, p.Type, path.Child("max"), true)
		allErrs = append(allErrs, loErr...)
		allErrs = append(allErrs, hiErr...)
		if len(loErr)+len(hiErr) > 0 {
			return allErrs
		}
		if lo > hi {
			allErrs = append(allErrs, field.Invalid(path.Child("max"), p.Max, "must be at least min ("+p.Min+")"))
		}
		if p.LogScale && lo <= 0 {
			allErrs = append(allErrs, field.Invalid(path.Child("min"), p.Min, "must be above 0 on a log scale"))
		}
		if p.Step != "" {
			step, errs := parseBound(p.Step, p.Type, path.Child("step"), false)
			allErrs = append(allErrs, errs...)
			if len(errs) == 0 && step <= 0 {
				allErrs = append(allErrs, field.Invalid(path.Child("step"), p.Step, "must be above 0"))
			}
			if len(errs) == 0 && step > 0 && (hi-lo)/step > batch.MaxGridPoints {
				allErrs = append(allErrs, field.Invalid(path.Child("step"), p.Step,
					fmt.Sprintf("makes more than %d values from min to max", batch.MaxGridPoints)))
			}
		}
	case "":
		allErrs = append(allErrs, field.Required(path.Child("type"), "double, int or categorical"))
	default:
		allErrs = append(allErrs, field.NotSupported(path.Child("type"), p.Type,
			[]batch.TuningParameterType{batch.ParameterDouble, batch.ParameterInt, batch.ParameterCategorical}))
	}
	return allErrs
}

// parseBound reads a parameter's min, max or step.
func parseBound(s string, typ batch.TuningParameterType, path *field.Path, required bool) (float64, field.ErrorList) {
	if s == "" {
		if required {
			return 0, field.ErrorList{field.Required(path, "a "+string(typ)+" parameter needs min and max")}
		}
		return 0, nil
	}
	v, err := batch.ParseParameterNumber(s, typ)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(path, s, err.Error())}
	}
	return v, nil
}

// validateTrialTemplate checks the template as the job a trial is made
// from: one kind, checked as that kind's jobs are (or, when it names a
// runtime, its runtime reference and trainer), and placeholders that name
// parameters.
func validateTrialTemplate(name string, spec *batch.TuningJobSpec, tmplPath *field.Path) field.ErrorList {
	t := &spec.TrialTemplate
	kind, allErrs := validateTemplateKind(t, tmplPath, "a search's trials are of one kind")
	if kind == "" {
		return allErrs
	}
	if common := t.CommonSpec(); common.RuntimeRef != nil {
		// The runtime is applied, and the whole job checked, when a trial
		// is created.
		for _, err := range ValidateRuntimeRequest(kind, common) {
			if path, ok := templatePath(err.Field, tmplPath, batch.TemplateKinds()[kind]); ok {
				err.Field = path
				allErrs = append(allErrs, err)
			}
		}
	} else {
		jobName := templateJobName
		if name != "" && spec.MaxTrials >= 1 {
			jobName = batch.TrialName(name, min(spec.MaxTrials, batch.MaxTrials)-1)
		}
		allErrs = append(allErrs, validateKindTemplate(kind, jobName, t, tmplPath)...)
	}
	return append(allErrs, validatePlaceholders(spec, tmplPath)...)
}

// validatePlaceholders refuses a placeholder that names no parameter.
func validatePlaceholders(spec *batch.TuningJobSpec, tmplPath *field.Path) field.ErrorList {
	raw, err := json.Marshal(&spec.TrialTemplate)
	if err != nil {
		return field.ErrorList{field.InternalError(tmplPath, err)}
	}
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return field.ErrorList{field.InternalError(tmplPath, err)}
	}
	known := map[string]bool{batch.TrialNamePlaceholder: true}
	names := make([]string, 0, len(spec.Parameters))
	for _, p := range spec.Parameters {
		known[batch.ParamPlaceholderPrefix+p.Name] = true
		names = append(names, p.Name)
	}
	sort.Strings(names)
	var allErrs field.ErrorList
	batch.WalkPlaceholders(doc, tmplPath, func(placeholder string, path *field.Path) {
		if !known[placeholder] {
			allErrs = append(allErrs, field.Invalid(path, "${"+placeholder+"}",
				fmt.Sprintf("names no parameter: use ${%s<name>} with one of %s, or ${%s}",
					batch.ParamPlaceholderPrefix, strings.Join(names, ", "), batch.TrialNamePlaceholder)))
		}
	})
	// Map iteration order made the walk's order random.
	sort.Slice(allErrs, func(i, j int) bool { return allErrs[i].Field < allErrs[j].Field })
	return allErrs
}

func validateObjective(o *batch.TuningObjective, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case o.Metric == "":
		allErrs = append(allErrs, field.Required(fldPath.Child("metric"), "the metric the trials report, such as loss"))
	case !progressMetricName.MatchString(o.Metric) || len(o.Metric) > utilvalidation.DNS1035LabelMaxLength:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("metric"), o.Metric,
			"must be a progress metric's name: letters, digits and '_', '-', '.', '/', starting with a letter, at most 63"))
	}
	if !slices.Contains([]batch.ObjectiveDirection{batch.Minimize, batch.Maximize}, o.Direction) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("direction"), o.Direction,
			[]batch.ObjectiveDirection{batch.Minimize, batch.Maximize}))
	}
	if o.Goal != "" {
		if _, err := batch.ParseMetricValue(o.Goal); err != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("goal"), o.Goal, err.Error()))
		}
	}
	switch o.TrialValue {
	case batch.TrialValueLast, batch.TrialValueBest:
		if o.Step != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("step"), "only with trialValue atStep"))
		}
	case batch.TrialValueAtStep:
		if o.Step == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("step"), "the step whose value counts"))
		} else if *o.Step < 1 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("step"), *o.Step, "must be at least 1"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("trialValue"), o.TrialValue,
			[]batch.TrialValue{batch.TrialValueLast, batch.TrialValueBest, batch.TrialValueAtStep}))
	}
	return allErrs
}

func validateAlgorithm(spec *batch.TuningJobSpec, fldPath *field.Path) field.ErrorList {
	a := &spec.Algorithm
	var allErrs field.ErrorList
	switch a.Name {
	case batch.AlgorithmRandom, batch.AlgorithmTPE:
	case batch.AlgorithmGrid:
		for i, p := range spec.Parameters {
			if p.Type == batch.ParameterDouble && p.Step == "" {
				allErrs = append(allErrs, field.Required(field.NewPath("spec", "parameters").Index(i).Child("step"),
					"a grid search needs the step of every double parameter"))
			}
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("name"), a.Name,
			[]batch.TuningAlgorithmName{batch.AlgorithmRandom, batch.AlgorithmGrid, batch.AlgorithmTPE}))
	}
	if a.StartupTrials < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("startupTrials"), a.StartupTrials, "must be at least 0"))
	} else if a.StartupTrials > 0 && a.Name != batch.AlgorithmTPE {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("startupTrials"), "only under tpe"))
	}
	return allErrs
}

func validateEarlyStopping(es *batch.EarlyStopping, fldPath *field.Path) field.ErrorList {
	if es == nil {
		return nil
	}
	switch {
	case es.ASHA == nil && es.MedianStop == nil:
		return field.ErrorList{field.Required(fldPath, "one of asha or medianStop")}
	case es.ASHA != nil && es.MedianStop != nil:
		return field.ErrorList{field.Forbidden(fldPath.Child("medianStop"), "a search stops trials by one rule; it has asha")}
	}
	var allErrs field.ErrorList
	if m := es.MedianStop; m != nil {
		path := fldPath.Child("medianStop")
		if m.StartStep < 0 {
			allErrs = append(allErrs, field.Invalid(path.Child("startStep"), m.StartStep, "must be at least 0"))
		}
		if m.MinTrials < 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("minTrials"), m.MinTrials, "must be at least 1"))
		}
	}
	if a := es.ASHA; a != nil {
		path := fldPath.Child("asha")
		if a.Resource != batch.ResourceSteps && a.Resource != batch.ResourceEpochs {
			allErrs = append(allErrs, field.NotSupported(path.Child("resource"), a.Resource,
				[]batch.ASHAResource{batch.ResourceSteps, batch.ResourceEpochs}))
		}
		if a.MinResource < 1 {
			allErrs = append(allErrs, field.Invalid(path.Child("minResource"), a.MinResource, "must be at least 1"))
		}
		if a.ReductionFactor < 2 || a.ReductionFactor > 10 {
			allErrs = append(allErrs, field.Invalid(path.Child("reductionFactor"), a.ReductionFactor, "must be from 2 to 10"))
		}
		if a.Rungs < 1 || a.Rungs > 10 {
			allErrs = append(allErrs, field.Invalid(path.Child("rungs"), a.Rungs, "must be from 1 to 10"))
		}
		if len(allErrs) == 0 {
			last := float64(a.MinResource) * math.Pow(float64(a.ReductionFactor), float64(a.Rungs-1))
			if last > float64(maxASHAResource) {
				allErrs = append(allErrs, field.Invalid(path.Child("minResource"), a.MinResource,
					"puts the last rung beyond "+strconv.FormatInt(maxASHAResource, 10)))
			}
		}
	}
	return allErrs
}
