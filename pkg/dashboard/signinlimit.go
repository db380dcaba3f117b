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
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Sign-ins each client may try: a token costs the API server a review and, once
// accepted, the dashboard a session, so that a flood of them from one client
// neither loads the API nor signs real users out.
const (
	// signInsPerMinute is each client's sustained rate of sign-ins.
	signInsPerMinute = 30
	// signInBurst is how many a client may try at once: a team behind one
	// address signing in together.
	signInBurst = 20
	// maxLimitedClients bounds the clients remembered; past it they are all
	// forgotten, each starting again with a full burst.
	maxLimitedClients = 4096
)

// signInLimiter limits the sign-ins of each client, by its address.
type signInLimiter struct {
	now func() time.Time

	mu       sync.Mutex
	byClient map[string]*rate.Limiter
}

func newSignInLimiter() *signInLimiter {
	return &signInLimiter{now: time.Now, byClient: map[string]*rate.Limiter{}}
}

// allow takes one sign-in of the request's client, or answers 429 with when
// to try again and returns false.
func (l *signInLimiter) allow(w http.ResponseWriter, r *http.Request) bool {
	client := r.RemoteAddr
	if host, _, err := net.SplitHostPort(client); err == nil {
		client = host
	}
	l.mu.Lock()
	limiter, ok := l.byClient[client]
	if !ok {
		if len(l.byClient) >= maxLimitedClients {
			clear(l.byClient)
		}
		limiter = rate.NewLimiter(rate.Every(time.Minute/signInsPerMinute), signInBurst)
		l.byClient[client] = limiter
	}
	now := l.now()
	reservation := limiter.ReserveN(now, 1)
	wait := reservation.DelayFrom(now)
	if wait > 0 {
		reservation.CancelAt(now)
	}
	l.mu.Unlock()
	if wait <= 0 {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
	writeError(w, http.StatusTooManyRequests, "too many sign-ins from this address: try again in "+wait.Round(time.Second).String())
	return false
}
