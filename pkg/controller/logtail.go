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

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/ptr"

	"tensorstack.dev/training/pkg/apis/batch"
	"tensorstack.dev/training/pkg/apis/batch/v1beta1"
	"tensorstack.dev/training/pkg/podbuilder"
)

// The end of a replica's log, read before its pod goes: for a stall
// (status.stall) and for a failed replica (status.attempts).

// logTailTimeout bounds the read of one replica's log.
const logTailTimeout = 5 * time.Second

// readLogTail reads the last lines of a pod's container (the adapter's
// training container when none is named), at most lines lines within
// maxBytes, bounded in time by logTailTimeout. A read that fails says why
// in the tail's Error.
func readLogTail(ctx context.Context, pods corev1client.PodInterface, a podbuilder.Adapter, p *corev1.Pod,
	container string, lines int64, maxBytes int) v1beta1.ReplicaLogTail {
	tail := v1beta1.ReplicaLogTail{Name: p.Name}
	opts := &corev1.PodLogOptions{Container: container, TailLines: ptr.To(lines), LimitBytes: ptr.To(int64(4 * maxBytes))}
	if i := podbuilder.TrainingContainer(a, &p.Spec); i >= 0 && container == "" {
		opts.Container = p.Spec.Containers[i].Name
	}
	ctx, cancel := context.WithTimeout(ctx, logTailTimeout)
	defer cancel()
	raw, err := pods.GetLogs(p.Name, opts).DoRaw(ctx)
	if err != nil {
		tail.Error = batch.CutBytes(err.Error(), 256)
		return tail
	}
	tail.Lines = logTailText(raw, maxBytes)
	return tail
}

// logTailText is the end of a log within n bytes, starting at a line when
// it had to be cut.
func logTailText(raw []byte, n int) string {
	tail := batch.TailBytes(string(raw), n)
	if len(tail) < len(raw) {
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i+1 < len(tail) {
			tail = tail[i+1:]
		}
	}
	return tail
}
