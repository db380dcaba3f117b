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

package trainingjob

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/klog/v2"

	"tensorstack.dev/training/pkg/apis/batch"
)

// A job's progress history lives beside the job in the same etcd, in chunks
// of progressHistoryChunkSamples samples under
// <resource prefix>-progresshistory/<namespace>/<name>/<uid>/<seq>. Only the
// newest chunk is ever rewritten, so a stored report costs one small write
// however long the history; a full chunk is sealed and the next one begun.
// Beyond progressHistoryMaxChunks chunks, two neighbours of one grain become
// one of twice the grain, every other sample dropped: the whole run stays in
// view, and the older a part, the coarser (a chunk of level L keeps one
// report in 2^L).
const (
	progressHistoryChunkSamples = 256
	progressHistoryMaxChunks    = batch.MaxProgressHistorySamples / progressHistoryChunkSamples
)

// progressHistoryChunk is how a chunk is stored: a type of the registry's
// own, never served, so that its bookkeeping stays out of the API.
type progressHistoryChunk struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Seq orders a job's chunks, from 1.
	Seq     int64                  `json:"seq"`
	Samples []batch.ProgressSample `json:"samples,omitempty"`
	// Level is how often the chunk was thinned: it keeps one report in 2^Level.
	Level int `json:"level,omitempty"`
	// Thinned counts the samples dropped when older chunks became this one.
	Thinned int64 `json:"thinned,omitempty"`
	// MergedFrom is the chunk merged into this one, which is deleted next:
	// set, and that chunk still there, its samples are already in this one.
	MergedFrom int64 `json:"mergedFrom,omitempty"`
}

type progressHistoryChunkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []progressHistoryChunk `json:"items"`
}

func (c *progressHistoryChunk) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Samples = make([]batch.ProgressSample, len(c.Samples))
	for i := range c.Samples {
		c.Samples[i].DeepCopyInto(&out.Samples[i])
	}
	return &out
}

func (l *progressHistoryChunkList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]progressHistoryChunk, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*progressHistoryChunk)
	}
	return &out
}

// progressHistoryVersion is the stored chunks' apiVersion, in a scheme and
// codec of their own.
var progressHistoryVersion = schema.GroupVersion{Group: "progresshistory.batch.tensorstack.dev", Version: "v1"}

func progressHistoryCodec() runtime.Codec {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(progressHistoryVersion, &progressHistoryChunk{}, &progressHistoryChunkList{})
	return serializer.NewCodecFactory(scheme).LegacyCodec(progressHistoryVersion)
}

// progressHistory stores and reads the progress histories of one job kind.
type progressHistory struct {
	storage storage.Interface
	destroy func()
	prefix  string

	// known remembers each job's newest chunk and chunk count: a hint that
	// spares a list per write. etcd decides; a wrong hint costs a list.
	mu    sync.Mutex
	known map[types.UID]chunkRange
}

// chunkRange is a job's newest chunk and how many it has.
type chunkRange struct {
	newest int64
	count  int
}

// newProgressHistory opens the storage of a kind's progress histories: the
// kind's own etcd settings (servers, TLS, encryption at rest), its own
// key prefix and codec.
func newProgressHistory(optsGetter generic.RESTOptionsGetter, resource schema.GroupResource, example runtime.Object) (*progressHistory, error) {
	opts, err := optsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return nil, err
	}
	config := *opts.StorageConfig
	config.Codec = progressHistoryCodec()
	config.EncodeVersioner = progressHistoryVersion
	// As the job store makes its own prefix from the options' one.
	prefix := "/" + strings.TrimPrefix(opts.ResourcePrefix, "/") + "-progresshistory"
	s, destroy, err := generic.NewRawStorage(&config,
		func() runtime.Object { return &progressHistoryChunk{} },
		func() runtime.Object { return &progressHistoryChunkList{} }, prefix)
	if err != nil {
		return nil, fmt.Errorf("opening the progress history storage of %s: %w", resource, err)
	}
	return &progressHistory{storage: s, destroy: destroy, prefix: prefix, known: map[types.UID]chunkRange{}}, nil
}

func (h *progressHistory) jobPrefix(key jobKey) string {
	return path.Join(h.prefix, key.namespace, key.name, string(key.uid)) + "/"
}

func (h *progressHistory) chunkKey(key jobKey, seq int64) string {
	// Zero-padded, so that etcd lists a job's chunks in order.
	return fmt.Sprintf("%s%012d", h.jobPrefix(key), seq)
}

var errChunkFull = errors.New("the chunk is full")

// append adds a sample to the job's history.
func (h *progressHistory) append(ctx context.Context, key jobKey, sample batch.ProgressSample) error {
	// Two tries: a hint another apiserver made stale costs one list.
	var err error
	for range 2 {
		var r chunkRange
		var known bool
		if r, known, err = h.chunks(ctx, key); err != nil {
			return err
		}
		if !known {
			err = h.create(ctx, key, chunkRange{}, sample)
		} else if err = h.appendTo(ctx, key, r.newest, sample); errors.Is(err, errChunkFull) {
			err = h.create(ctx, key, r, sample)
		}
		if err == nil {
			return nil
		}
		h.forget(key.uid)
		if !storage.IsNotFound(err) && !storage.IsExist(err) {
			return err
		}
	}
	return err
}

// chunks is the job's chunk range, from the hint or from etcd; known is
// false for a job with no history yet.
func (h *progressHistory) chunks(ctx context.Context, key jobKey) (chunkRange, bool, error) {
	h.mu.Lock()
	r, ok := h.known[key.uid]
	h.mu.Unlock()
	if ok {
		return r, true, nil
	}
	list, err := h.list(ctx, key)
	if err != nil || len(list) == 0 {
		return chunkRange{}, false, err
	}
	r = chunkRange{newest: list[len(list)-1].Seq, count: len(list)}
	h.remember(key.uid, r)
	return r, true, nil
}

func (h *progressHistory) remember(uid types.UID, r chunkRange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.known[uid] = r
}

func (h *progressHistory) forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.known, uid)
}

// appendTo adds the sample to chunk seq unless it is full.
func (h *progressHistory) appendTo(ctx context.Context, key jobKey, seq int64, sample batch.ProgressSample) error {
	out := &progressHistoryChunk{}
	return h.storage.GuaranteedUpdate(ctx, h.chunkKey(key, seq), out, false, nil,
		func(input runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
			chunk := input.DeepCopyObject().(*progressHistoryChunk)
			if len(chunk.Samples) >= progressHistoryChunkSamples {
				return nil, nil, errChunkFull
			}
			chunk.Samples = append(chunk.Samples, sample)
			return chunk, nil, nil
		}, nil)
}

// create begins the chunk after r's newest with the sample, then merges
// chunks while there are too many.
func (h *progressHistory) create(ctx context.Context, key jobKey, r chunkRange, sample batch.ProgressSample) error {
	seq := r.newest + 1
	chunk := &progressHistoryChunk{
		ObjectMeta: metav1.ObjectMeta{Name: key.name, Namespace: key.namespace, UID: key.uid},
		Seq:        seq,
		Samples:    []batch.ProgressSample{sample},
	}
	if err := h.storage.Create(ctx, h.chunkKey(key, seq), chunk, &progressHistoryChunk{}, 0); err != nil {
		return err
	}
	r = chunkRange{newest: seq, count: r.count + 1}
	if r.count > progressHistoryMaxChunks {
		count, err := h.compact(ctx, key)
		if err != nil {
			h.forget(key.uid)
			return fmt.Errorf("thinning the progress history: %w", err)
		}
		r.count = count
	}
	h.remember(key.uid, r)
	return nil
}

// compact merges chunks until there are progressHistoryMaxChunks at most,
// and returns how many there are. It merges the oldest two neighbours of
// one level, or, where no two have one, the oldest two.
func (h *progressHistory) compact(ctx context.Context, key jobKey) (int, error) {
	chunks, err := h.list(ctx, key)
	if err != nil {
		return 0, err
	}
	for len(chunks) > progressHistoryMaxChunks {
		i := 0
		for j := range len(chunks) - 1 {
			if chunks[j].Level == chunks[j+1].Level {
				i = j
				break
			}
		}
		merged, err := h.merge(ctx, key, &chunks[i], &chunks[i+1])
		if err != nil {
			return 0, err
		}
		chunks = slices.Replace(chunks, i, i+2, *merged)
	}
	return len(chunks), nil
}

// merge makes two neighbouring chunks one, at the newer one's key, every
// other sample dropped, then deletes the older. Should it stop between the
// two, the newer one names the older as merged, and the next merge only
// deletes it.
func (h *progressHistory) merge(ctx context.Context, key jobKey, older, newer *progressHistoryChunk) (*progressHistoryChunk, error) {
	out := newer
	if newer.MergedFrom != older.Seq {
		out = &progressHistoryChunk{}
		err := h.storage.GuaranteedUpdate(ctx, h.chunkKey(key, newer.Seq), out, false, nil,
			func(input runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
				current := input.DeepCopyObject().(*progressHistoryChunk)
				both := withoutCopies(append(slices.Clone(older.Samples), current.Samples...))
				current.Samples = thin(both)
				current.Thinned += older.Thinned + int64(len(both)-len(current.Samples))
				current.Level = max(older.Level, current.Level) + 1
				current.MergedFrom = older.Seq
				return current, nil, nil
			}, nil)
		if err != nil {
			return nil, err
		}
	}
	err := h.storage.Delete(ctx, h.chunkKey(key, older.Seq), &progressHistoryChunk{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
	if err != nil && !storage.IsNotFound(err) {
		return nil, err
	}
	return out, nil
}

// thin keeps every other sample, the oldest among them: the first report
// of a run stays.
func thin(samples []batch.ProgressSample) []batch.ProgressSample {
	kept := make([]batch.ProgressSample, 0, (len(samples)+1)/2)
	for i := 0; i < len(samples); i += 2 {
		kept = append(kept, samples[i])
	}
	return kept
}

// withoutCopies drops the samples that repeat an earlier one's report time:
// a report is stored once, so two samples of one time are one report.
func withoutCopies(samples []batch.ProgressSample) []batch.ProgressSample {
	seen := make(map[int64]bool, len(samples))
	out := samples[:0:0]
	for _, s := range samples {
		t := s.ReportTime.UnixNano()
		if seen[t] {
			continue
		}
		seen[t] = true
		out = append(out, s)
	}
	return out
}

// list reads a job's chunks from etcd, oldest first.
func (h *progressHistory) list(ctx context.Context, key jobKey) ([]progressHistoryChunk, error) {
	list := &progressHistoryChunkList{}
	err := h.storage.GetList(ctx, h.jobPrefix(key), storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b progressHistoryChunk) int { return int(a.Seq - b.Seq) })
	return list.Items, nil
}

// read is a job's whole history.
func (h *progressHistory) read(ctx context.Context, key jobKey) ([]batch.ProgressSample, int64, error) {
	chunks, err := h.list(ctx, key)
	if err != nil {
		return nil, 0, err
	}
	var samples []batch.ProgressSample
	var thinned int64
	for i, c := range chunks {
		if i+1 < len(chunks) && chunks[i+1].MergedFrom == c.Seq {
			continue // already in the next one (a merge cut short)
		}
		samples = append(samples, c.Samples...)
		thinned += c.Thinned
	}
	samples = withoutCopies(samples)
	slices.SortStableFunc(samples, func(a, b batch.ProgressSample) int { return a.ReportTime.Compare(b.ReportTime.Time) })
	return samples, thinned, nil
}

// removeWithJob is the job store's AfterDelete: the history goes with its
// job. The hook has no request context, so it bounds its own time; a failure
// leaves chunks that no job reads (their key has the old job's UID).
func (h *progressHistory) removeWithJob(obj runtime.Object, _ *metav1.DeleteOptions) {
	job, ok := obj.(batch.TrainingJob)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	key := jobKey{namespace: job.GetNamespace(), name: job.GetName(), uid: job.GetUID()}
	if err := h.remove(ctx, key); err != nil {
		klog.ErrorS(err, "Deleting a job's progress history failed", "job", klog.KRef(key.namespace, key.name))
	}
}

// remove deletes a job's history.
func (h *progressHistory) remove(ctx context.Context, key jobKey) error {
	h.forget(key.uid)
	chunks, err := h.list(ctx, key)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range chunks {
		err := h.storage.Delete(ctx, h.chunkKey(key, c.Seq), &progressHistoryChunk{}, nil, storage.ValidateAllObjectFunc, nil, storage.DeleteOptions{})
		if err != nil && !storage.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ProgressHistoryREST is the progresshistory subresource of a job kind: a
// GET answers with every stored report's metrics (ProgressHistory).
type ProgressHistoryREST struct {
	store   *genericregistry.Store
	history *progressHistory
}

var _ rest.Getter = &ProgressHistoryREST{}

// New returns an empty history.
func (r *ProgressHistoryREST) New() runtime.Object { return &batch.ProgressHistory{} }

// Destroy closes the history's storage.
func (r *ProgressHistoryREST) Destroy() { r.history.destroy() }

// Get reads the job, for its UID and so that a job that does not exist is a
// 404, then its history.
func (r *ProgressHistoryREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	job := obj.(batch.TrainingJob)
	samples, thinned, err := r.history.read(ctx, jobKey{namespace: job.GetNamespace(), name: job.GetName(), uid: job.GetUID()})
	if err != nil {
		return nil, err
	}
	return &batch.ProgressHistory{
		ObjectMeta:     metav1.ObjectMeta{Name: job.GetName(), Namespace: job.GetNamespace(), UID: job.GetUID()},
		Samples:        samples,
		ThinnedSamples: thinned,
	}, nil
}
