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
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// Process is a process to watch, under a name for the tables.
type Process struct {
	Name string
	Pid  int
}

// Usage is what a process used while a Sampler ran.
type Usage struct {
	Name string `json:"name"`
	Pid  int    `json:"pid"`
	// CPUSeconds is user plus system CPU time spent between Start and Stop.
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is the highest resident set size: the kernel's high-water
	// mark (VmHWM) when it could be reset at Start, and never less than the
	// highest sampled VmRSS.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// PeakSince says what PeakRSSBytes covers: "run" (VmHWM reset at Start)
	// or "process start" (VmHWM could not be reset).
	PeakSince string `json:"peakSince"`
	// Exited is set when the process went away before Stop.
	Exited bool `json:"exited,omitempty"`
}

// Sampler follows the CPU time and memory of some processes.
type Sampler struct {
	procs    []Process
	start    map[int]float64
	reset    map[int]bool
	mu       sync.Mutex
	maxRSS   map[int]int64
	lastCPU  map[int]float64
	machine  []machineSample
	stop     chan struct{}
	finished chan struct{}
}

// StartSampler resets the processes' peak-RSS marks (writing 5 to
// /proc/<pid>/clear_refs, which needs the right to ptrace them; root has
// it), reads their CPU time, and samples their RSS every interval until
// Stop.
func StartSampler(procs []Process, interval time.Duration) (*Sampler, error) {
	s := &Sampler{
		procs:    procs,
		start:    map[int]float64{},
		reset:    map[int]bool{},
		maxRSS:   map[int]int64{},
		lastCPU:  map[int]float64{},
		stop:     make(chan struct{}),
		finished: make(chan struct{}),
	}
	for _, p := range procs {
		cpu, err := CPUSeconds(p.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		s.start[p.Pid] = cpu
		s.lastCPU[p.Pid] = cpu
		s.reset[p.Pid] = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", p.Pid), []byte("5"), 0) == nil
	}
	s.sample()
	go func() {
		defer close(s.finished)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s, nil
}

func (s *Sampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cpu, err := ReadMachineCPU(); err == nil {
		s.machine = append(s.machine, machineSample{at: time.Now(), cpu: cpu})
	}
	for _, p := range s.procs {
		st, err := readStatus(p.Pid)
		if err != nil {
			continue
		}
		if st["VmRSS"] > s.maxRSS[p.Pid] {
			s.maxRSS[p.Pid] = st["VmRSS"]
		}
		if cpu, err := CPUSeconds(p.Pid); err == nil {
			s.lastCPU[p.Pid] = cpu
		}
	}
}

// Stop ends the sampling and returns each process's usage since Start.
func (s *Sampler) Stop() []Usage {
	close(s.stop)
	<-s.finished
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Usage
	for _, p := range s.procs {
		u := Usage{Name: p.Name, Pid: p.Pid, PeakSince: "run", PeakRSSBytes: s.maxRSS[p.Pid]}
		if !s.reset[p.Pid] {
			u.PeakSince = "process start"
		}
		st, err := readStatus(p.Pid)
		if err != nil {
			u.Exited = true
		} else if st["VmHWM"] > u.PeakRSSBytes && s.reset[p.Pid] {
			u.PeakRSSBytes = st["VmHWM"]
		}
		u.CPUSeconds = s.lastCPU[p.Pid] - s.start[p.Pid]
		out = append(out, u)
	}
	return out
}

// MachineBusy returns the share of the whole machine's CPU time that was
// busy between from and to, as far as the samples cover it; ok is false
// when they do not. The benchmark's own client is on the machine too.
func (s *Sampler) MachineBusy(from, to time.Time) (fraction float64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return busyFraction(s.machine, from, to)
}

// CPUSeconds reads a process's user plus system CPU time from
// /proc/<pid>/stat.
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	fields := strings.Fields(s[i+1:])
	// fields[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	utime, err := strconv.ParseUint(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseUint(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicks, nil
}

// readStatus returns the kB-valued lines of /proc/<pid>/status (VmRSS,
// VmHWM, ...) in bytes.
func readStatus(pid int) (map[string]int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		out[name] = n * 1024
	}
	return out, sc.Err()
}

// RSS returns a process's resident set size (VmRSS) in bytes, and the
// part of it that is anonymous memory (RssAnon: heap and stacks, not the
// pages of files it maps, such as its own binary).
func RSS(pid int) (rss, anon int64, err error) {
	st, err := readStatus(pid)
	if err != nil {
		return 0, 0, err
	}
	return st["VmRSS"], st["RssAnon"], nil
}
