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
	"fmt"
	"io"
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

// logTailReadLimit bounds the bytes one read of a log's last lines takes
// from the kubelet: lines may be megabytes long.
const logTailReadLimit = 8 << 20

// readLogTail reads the last lines of a pod's container (the adapter's
// training container when none is named), at most lines lines within
// maxBytes, bounded in time by logTailTimeout. A read that fails says why
// in the tail's Error.
//
// The kubelet cuts a read at PodLogOptions.LimitBytes from the start of the
// lines asked for, which loses the end, the line that says what went wrong
// last, whenever the lines are long; so the whole of them is streamed and
// only its end kept. Where even that is over logTailReadLimit, the last line
// alone is read again.
func readLogTail(ctx context.Context, pods corev1client.PodInterface, a podbuilder.Adapter, p *corev1.Pod,
	container string, lines int64, maxBytes int) v1beta1.ReplicaLogTail {
	tail := v1beta1.ReplicaLogTail{Name: p.Name}
	opts := &corev1.PodLogOptions{Container: container, TailLines: ptr.To(lines)}
	if i := podbuilder.TrainingContainer(a, &p.Spec); i >= 0 && container == "" {
		opts.Container = p.Spec.Containers[i].Name
	}
	ctx, cancel := context.WithTimeout(ctx, logTailTimeout)
	defer cancel()
	// Twice the budget of raw bytes: room to start at a line, and for the
	// bytes that are not UTF-8, each of which may take three once valid.
	keep := 2 * maxBytes
	raw, complete, err := streamLogEnd(ctx, pods, p.Name, opts, keep)
	if err == nil && !complete && lines > 1 {
		opts.TailLines = ptr.To[int64](1)
		raw, complete, err = streamLogEnd(ctx, pods, p.Name, opts, keep)
	}
	if err != nil {
		tail.Error = batch.CutBytes(err.Error(), 256)
		return tail
	}
	if !complete {
		tail.Error = fmt.Sprintf("the log's last line is over %d bytes: this is a part of it", logTailReadLimit)
	}
	tail.Lines = logTailText(raw, maxBytes, complete)
	return tail
}

// streamLogEnd reads a pod's log as opts asks, keeping its last keep bytes;
// complete says whether it reached the end within logTailReadLimit.
func streamLogEnd(ctx context.Context, pods corev1client.PodInterface, pod string, opts *corev1.PodLogOptions,
	keep int) ([]byte, bool, error) {
	stream, err := pods.GetLogs(pod, opts).Stream(ctx)
	if err != nil {
		return nil, false, err
	}
	defer stream.Close() //nolint:errcheck // a read-only stream
	return lastBytes(stream, keep, logTailReadLimit)
}

// lastBytes reads r up to its end or limit bytes, whichever comes first, and
// returns the last keep bytes it read; complete says whether it reached the
// end.
func lastBytes(r io.Reader, keep, limit int) (tail []byte, complete bool, err error) {
	buf := make([]byte, 0, 2*keep)
	chunk := make([]byte, 32<<10)
	for read := 0; ; {
		if read == limit {
			// At the limit: complete only if nothing follows.
			n, err := io.ReadFull(r, chunk[:1])
			return buf, n == 0 && err == io.EOF, nil
		}
		n, err := r.Read(chunk[:min(len(chunk), limit-read)])
		read += n
		buf = append(buf, chunk[:n]...)
		if len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if err == io.EOF {
			return buf, true, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// logTailText is the end of a log within n bytes, made valid UTF-8, starting
// at a line when it had to be cut and the log's end was reached.
func logTailText(raw []byte, n int, complete bool) string {
	text := batch.ValidText(string(raw))
	tail := batch.TailBytes(text, n)
	if len(tail) < len(text) && complete {
		if i := strings.IndexByte(tail, '\n'); i >= 0 && i+1 < len(tail) {
			tail = tail[i+1:]
		}
	}
	return tail
}
