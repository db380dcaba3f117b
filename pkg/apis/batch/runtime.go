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

package batch

// Kind names the job kind the template makes, "" when it holds none.
func (t *TrainingJobTemplate) Kind() string {
	switch {
	case t.Pytorch != nil:
		return "PyTorchTrainingJob"
	case t.Tensorflow != nil:
		return "TensorFlowTrainingJob"
	case t.Xgboost != nil:
		return "XGBoostTrainingJob"
	case t.MPI != nil:
		return "MPIJob"
	case t.Generic != nil:
		return "GenericJob"
	}
	return ""
}

// CommonSpec is the part of the template's spec every kind shares, nil
// when it holds none.
func (t *TrainingJobTemplate) CommonSpec() *TrainingJobSpec {
	switch {
	case t.Pytorch != nil:
		return &t.Pytorch.TrainingJobSpec
	case t.Tensorflow != nil:
		return &t.Tensorflow.TrainingJobSpec
	case t.Xgboost != nil:
		return &t.Xgboost.TrainingJobSpec
	case t.MPI != nil:
		return &t.MPI.TrainingJobSpec
	case t.Generic != nil:
		return &t.Generic.TrainingJobSpec
	}
	return nil
}

// Canonicalize rewrites the accepted spellings of every kind's spec the
// template holds, as a job of the kind is rewritten when it is stored.
func (t *TrainingJobTemplate) Canonicalize() {
	if t.Pytorch != nil {
		job := PyTorchTrainingJob{Spec: *t.Pytorch}
		CanonicalizePyTorchJob(&job)
		*t.Pytorch = job.Spec
	}
	if t.Tensorflow != nil {
		job := TensorFlowTrainingJob{Spec: *t.Tensorflow}
		CanonicalizeTensorFlowJob(&job)
		*t.Tensorflow = job.Spec
	}
	if t.Xgboost != nil {
		job := XGBoostTrainingJob{Spec: *t.Xgboost}
		CanonicalizeXGBoostJob(&job)
		*t.Xgboost = job.Spec
	}
	if t.MPI != nil {
		job := MPIJob{Spec: *t.MPI}
		CanonicalizeMPIJob(&job)
		*t.MPI = job.Spec
	}
	if t.Generic != nil {
		job := GenericJob{Spec: *t.Generic}
		CanonicalizeGenericJob(&job)
		*t.Generic = job.Spec
	}
}
