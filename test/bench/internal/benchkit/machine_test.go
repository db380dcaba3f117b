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
	"math"
	"testing"
	"time"
)

func TestParseMachineCPU(t *testing.T) {
	// user nice system idle iowait irq softirq steal guest guest_nice
	got, err := parseMachineCPU("cpu  100 2 30 500 7 1 4 6 50 0")
	if err != nil {
		t.Fatal(err)
	}
	want := MachineCPU{Busy: 100 + 2 + 30 + 1 + 4 + 6, Total: 100 + 2 + 30 + 1 + 4 + 6 + 500 + 7}
	if got != want {
		t.Errorf("parsed %+v, want %+v", got, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8"} {
		if _, err := parseMachineCPU(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestReadMachineCPU(t *testing.T) {
	a, err := ReadMachineCPU()
	if err != nil {
		t.Skipf("no /proc/stat here: %v", err)
	}
	if a.Total == 0 || a.Busy > a.Total {
		t.Errorf("read %+v", a)
	}
}

func TestBusyFraction(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	samples := []machineSample{
		{at(0), MachineCPU{Busy: 0, Total: 0}},
		{at(1), MachineCPU{Busy: 100, Total: 200}}, // half busy in the first second
		{at(2), MachineCPU{Busy: 300, Total: 400}}, // all busy in the second
		{at(3), MachineCPU{Busy: 300, Total: 600}}, // idle in the third
	}
	for _, tc := range []struct {
		from, to float64
		want     float64
		ok       bool
	}{
		{0, 1, 0.5, true},
		{1, 2, 1, true},
		{0, 2, 0.75, true},
		{0.5, 2.5, 1, true}, // only the samples at 1 and 2 lie inside
		{0, 3, 0.5, true},
		{0.2, 0.8, 0, false}, // no sample inside
		{2.5, 3.5, 0, false}, // one sample inside
	} {
		got, ok := busyFraction(samples, at(tc.from), at(tc.to))
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("busyFraction(%v s, %v s) = %v, %v; want %v, %v", tc.from, tc.to, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBusySecondsSince(t *testing.T) {
	earlier := MachineCPU{Busy: 1000, Total: 5000}
	later := MachineCPU{Busy: 1250, Total: 5600}
	if got := later.BusySecondsSince(earlier); got != 2.5 {
		t.Errorf("BusySecondsSince = %v, want 2.5 (250 ticks of 1/100 s)", got)
	}
}
