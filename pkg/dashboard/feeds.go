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

package dashboard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"k8s.io/client-go/tools/cache"
)

// jobFeeds share an informer among the event streams that would each run
// the same one: the streams of one user (one token, so the same rights) of
// the same jobs, kept the same way. An informer keeps every job it follows;
// one per stream made a server's memory grow with streams × jobs, and a user
// with a few tabs, or anyone with a token and a loop, could push it past its
// limit (docs/benchmarks.md). A new stream is sent the informer's jobs as it
// joins, then every change.
type jobFeeds struct {
	mu    sync.Mutex
	byKey map[feedKey]*jobFeed
}

// feedKey tells feeds apart: whose rights, which jobs, kept how.
type feedKey struct {
	identity, resource, namespace, selector string
	listed                                  bool
}

type jobFeed struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	streams  int
}

func newJobFeeds() *jobFeeds { return &jobFeeds{byKey: map[feedKey]*jobFeed{}} }

// subscribe adds handler to the key's informer, started from newInformer
// when no stream runs it, and returns its registration (HasSynced: the jobs
// there were are sent) and what removes it, which stops the informer after
// its last stream.
func (f *jobFeeds) subscribe(key feedKey, newInformer func() cache.SharedIndexInformer,
	handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, func(), error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	feed := f.byKey[key]
	if feed == nil {
		ctx, stop := context.WithCancel(context.Background())
		feed = &jobFeed{informer: newInformer(), stop: stop}
		go feed.informer.RunWithContext(ctx)
		f.byKey[key] = feed
	}
	registration, err := feed.informer.AddEventHandler(handler)
	if err != nil {
		if feed.streams == 0 {
			feed.stop()
			delete(f.byKey, key)
		}
		return nil, nil, err
	}
	feed.streams++
	var once sync.Once
	return registration, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			_ = feed.informer.RemoveEventHandler(registration)
			feed.streams--
			if feed.streams == 0 {
				feed.stop()
				delete(f.byKey, key)
			}
		})
	}, nil
}

// running is how many informers the feeds run.
func (f *jobFeeds) running() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byKey)
}

// identityOf tells whose rights a request reads with, for feedKey: a digest
// of its bearer token (none on the local server, which has one user).
func identityOf(ctx context.Context) string {
	token := BearerToken(ctx)
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
