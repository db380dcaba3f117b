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
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// MachineCPU is the time all CPUs of the machine spent, in clock ticks,
// from the first line of /proc/stat.
type MachineCPU struct {
	// Busy is user, nice, system, irq, softirq and steal time.
	Busy uint64
	// Total adds idle and iowait.
	Total uint64
}

// BusySecondsSince is the CPU time, summed over all CPUs, that the machine
// spent busy from an earlier reading to this one.
func (m MachineCPU) BusySecondsSince(earlier MachineCPU) float64 {
	return float64(m.Busy-earlier.Busy) / clockTicks
}

// ReadMachineCPU reads the machine's CPU times.
func ReadMachineCPU() (MachineCPU, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return MachineCPU{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return MachineCPU{}, fmt.Errorf("/proc/stat is empty: %v", sc.Err())
	}
	return parseMachineCPU(sc.Text())
}

// parseMachineCPU parses the "cpu" line of /proc/stat: user nice system
// idle iowait irq softirq steal [guest guest_nice], the guest times being
// part of user and nice already.
func parseMachineCPU(line string) (MachineCPU, error) {
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("unexpected first line of /proc/stat: %q", line)
	}
	var v [8]uint64
	for i := range v {
		n, err := strconv.ParseUint(fields[i+1], 10, 64)
		if err != nil {
			return MachineCPU{}, fmt.Errorf("unexpected first line of /proc/stat: %q: %w", line, err)
		}
		v[i] = n
	}
	idle := v[3] + v[4]
	busy := v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
	return MachineCPU{Busy: busy, Total: busy + idle}, nil
}

// machineSample is the machine's CPU times at one moment.
type machineSample struct {
	at  time.Time
	cpu MachineCPU
}

// busyFraction returns the share of the machine's CPU time that was busy
// from one sample to another, the samples taken closest to from and to
// within them; ok is false when fewer than two samples lie between.
func busyFraction(samples []machineSample, from, to time.Time) (fraction float64, ok bool) {
	first, last := -1, -1
	for i, s := range samples {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || last <= first {
		return 0, false
	}
	a, b := samples[first].cpu, samples[last].cpu
	if b.Total <= a.Total {
		return 0, false
	}
	return float64(b.Busy-a.Busy) / float64(b.Total-a.Total), true
}
