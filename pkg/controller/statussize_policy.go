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

package controller

import "tensorstack.dev/training/pkg/apis/batch/v1beta1"

// droppedProgramText stands where dropProgramText removed a log tail.
const droppedProgramText = "dropped: the job's status was too large to store with it"

// dropProgramText removes from a status the text the job's programs wrote:
// failed replicas' and a stall's log tails, and containers' termination
// messages. A status write refused for its size is tried again without them
// (writeStatus) rather than left to be refused on every reconcile; exit
// codes, reasons, states and conditions stay. It says whether it removed
// anything.
func dropProgramText(st *v1beta1.TrainingJobStatus) bool {
	dropped := false
	for ai := range st.Attempts {
		for fi := range st.Attempts[ai].FailedReplicas {
			if f := &st.Attempts[ai].FailedReplicas[fi]; f.Logs != "" {
				f.Logs, f.LogError, dropped = "", droppedProgramText, true
			}
		}
	}
	if st.Stall != nil {
		for li := range st.Stall.Logs {
			if l := &st.Stall.Logs[li]; l.Lines != "" {
				l.Lines, l.Error, dropped = "", droppedProgramText, true
			}
		}
	}
	for ti := range st.Tasks {
		for ri := range st.Tasks[ti].ReplicaStatus {
			for ci := range st.Tasks[ti].ReplicaStatus[ri].Containers {
				if t := st.Tasks[ti].ReplicaStatus[ri].Containers[ci].LastTermination; t != nil && t.Message != "" {
					t.Message, dropped = "", true
				}
			}
		}
	}
	return dropped
}
