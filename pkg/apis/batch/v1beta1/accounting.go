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

package v1beta1

// AccountingStates are the states a job's time is counted in, in the order
// a job usually passes through them.
var AccountingStates = []AccountingState{AccountingQueued, AccountingStarting, AccountingRunning, AccountingPaused}

// StateSeconds is the field that counts the time spent in state, or nil
// for a state that is not counted.
func (a *Accounting) StateSeconds(state AccountingState) *int64 {
	switch state {
	case AccountingQueued:
		return &a.QueuedSeconds
	case AccountingStarting:
		return &a.StartingSeconds
	case AccountingRunning:
		return &a.RunningSeconds
	case AccountingPaused:
		return &a.PausedSeconds
	}
	return nil
}
