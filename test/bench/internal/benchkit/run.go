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

package benchkit

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel calls fn(i) for i in [0, n) from c goroutines and returns the wall
// time and every call's latency (in the order of i). It stops at the first
// error and returns it.
func Parallel(ctx context.Context, n, c int, fn func(ctx context.Context, i int) error) (time.Duration, []time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				t := time.Now()
				if err := fn(ctx, i); err != nil {
					once.Do(func() {
						firstErr = fmt.Errorf("call %d: %w", i, err)
						cancel()
					})
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	return time.Since(start), lat, firstErr
}

// IntEnv returns the integer environment variable name, or def when unset.
// Zero is a value (BENCH_RUNNING=0: no running jobs); a negative number or
// a word is reported and def used instead.
func IntEnv(name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		fmt.Fprintf(os.Stderr, "%s=%q is not a whole number of 0 or more; using %d\n", name, v, def)
		return def
	}
	return n
}

// BoolEnv returns the environment variable name as a switch, 1 or 0 as the
// scripts write it (or true/false), or def when unset.
func BoolEnv(name string, def bool) bool {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q is neither 1 nor 0; using %t\n", name, v, def)
		return def
	}
	return b
}

// StringEnv returns the environment variable name, or def when unset.
func StringEnv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Logf prints a timestamped progress line on stderr.
func Logf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}
