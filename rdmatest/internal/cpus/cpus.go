package cpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// errUnsupported is every request to pin a thread where Supported is
// false.
var errUnsupported = fmt.Errorf("pinning threads to CPUs is not supported on %s: %w", runtime.GOOS, errors.ErrUnsupported)

// sysfsRoot is where Choose reads the device's NUMA placement (a test
// points it at a fake tree).
var sysfsRoot = "/sys"

// ParseList parses a Linux CPU list ("0-3,8,10-11") in its own order,
// each CPU once (its first place): -rdma.cpus 3,1 puts the requester on
// CPU 3.
func ParseList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("empty CPU list")
	}
	seen := map[int]bool{}
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a || b >= 1<<16 {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number or range lo-hi (0..65535)", s, part)
		}
		for c := a; c <= b; c++ {
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// FormatList formats CPUs as a Linux CPU list ("2-5,8").
func FormatList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// Allowed returns the CPUs this process may run on, read once, as it
// started: before Plan.ConfineRuntime narrowed its threads' affinity.
var Allowed = sync.OnceValue(threadCPUs)

// everyCPU is CPUs 0 … runtime.NumCPU()-1: what the process may use
// where its affinity cannot be read.
func everyCPU() []int {
	cpus := make([]int, runtime.NumCPU())
	for i := range cpus {
		cpus[i] = i
	}
	return cpus
}

// confined is set once ConfineRuntime has moved the process's threads
// off the loops' CPUs: an unpinned loop (cpu < 0) then takes every
// allowed CPU back for its run.
var confined atomic.Bool

// Plan is where a device's timed loops run.
type Plan struct {
	Allowed []int  // the CPUs the process may use (Allowed)
	Loop    []int  // the CPUs for the timed loops, in order of use
	Source  string // where Loop came from: -rdma.cpus, numa-local, allowed, …
}

// Choose returns the plan for the timed loops of device: their CPUs, in
// order of use, and where the list came from. override is -rdma.cpus
// (empty: none given); allowed is the CPUs the process may use.
func Choose(device, override string, allowed []int) (Plan, error) {
	p := Plan{Allowed: allowed}
	ok := map[int]bool{}
	for _, c := range allowed {
		ok[c] = true
	}
	pick := func(list []int) []int {
		var out []int
		for _, c := range list {
			if ok[c] {
				out = append(out, c)
			}
		}
		return out
	}
	if override == "none" {
		p.Source = "-rdma.cpus none"
		return p, nil
	}
	if !Supported {
		if override != "" {
			return Plan{}, fmt.Errorf("rdmatest: -rdma.cpus %q: %w", override, errUnsupported)
		}
		p.Source = "not supported on " + runtime.GOOS
		return p, nil
	}
	if override != "" {
		list, err := ParseList(override)
		if err != nil {
			return Plan{}, fmt.Errorf("rdmatest: -rdma.cpus: %w", err)
		}
		if got := pick(list); len(got) != len(list) {
			return Plan{}, fmt.Errorf("rdmatest: -rdma.cpus %q names CPUs this process may not use (allowed: %v)", override, allowed)
		}
		p.Loop, p.Source = list, "-rdma.cpus"
		return p, nil
	}
	if device != "" {
		b, err := os.ReadFile(filepath.Join(sysfsRoot, "class/infiniband", device, "device/local_cpulist"))
		if err == nil {
			if list, err := ParseList(string(b)); err == nil {
				if got := pick(list); len(got) > 0 {
					p.Loop, p.Source = got, "numa-local"
					return p, nil
				}
			}
		}
	}
	p.Loop, p.Source = allowed, "allowed"
	return p, nil
}

// ForLoops returns one CPU per spinning loop of a run with busy loops:
// [requester, passive side], each -1 (not pinned) when the process has
// fewer usable CPUs than busy loops.
func (p Plan) ForLoops(busy int) [2]int {
	cpus := [2]int{-1, -1}
	if len(p.Loop) >= busy {
		copy(cpus[:], p.Loop[:min(busy, 2)])
	}
	return cpus
}

// Line is the rdma-cpus configuration line: where the requester's and
// the passive side's loops run, where the list came from and, when
// ConfineRuntime would move it, where the rest of the process runs.
func (p Plan) Line() string {
	c := p.ForLoops(2)
	var line string
	switch {
	case c[1] >= 0:
		line = fmt.Sprintf("requester=%d,passive=%d(%s)", c[0], c[1], p.Source)
	case p.ForLoops(1)[0] >= 0:
		line = fmt.Sprintf("requester=%d,passive=unpinned(%s)", p.ForLoops(1)[0], p.Source)
	default:
		return "unpinned"
	}
	if rest := p.spare(); rest != nil {
		line += ",runtime=" + FormatList(rest)
	}
	return line
}

// spare is Allowed without the loops' CPUs (the first two of Loop:
// requester and passive side); nil when no loop CPU is chosen or no CPU
// is spare.
func (p Plan) spare() []int {
	if len(p.Loop) == 0 {
		return nil
	}
	busy := map[int]bool{}
	for _, c := range p.Loop[:min(2, len(p.Loop))] {
		busy[c] = true
	}
	var rest []int
	for _, c := range p.Allowed {
		if !busy[c] {
			rest = append(rest, c)
		}
	}
	return rest
}

// ConfineRuntime moves every thread of the process onto the allowed CPUs
// that are not the loops' (the first two of Loop: requester and passive
// side), so that the Go runtime's own threads — sysmon above all, which
// wakes every few milliseconds while a loop runs in C and, in a guest
// with no CPU to spare, took a loop's CPU 5x as often as anything in a
// C-only process (docs/performance.md) — do not run where a loop spins.
// Threads created later inherit the affinity of their creator; a loop's
// thread pins itself to its CPU when its run starts and returns to these
// CPUs after it. It returns the CPUs the rest of the process runs on, or
// nil, changing nothing, when no allowed CPU is spare.
func (p Plan) ConfineRuntime() ([]int, error) {
	rest := p.spare()
	if rest == nil {
		return nil, nil
	}
	// Since Go 1.25 the runtime recomputes GOMAXPROCS from its threads'
	// affinity unless it was set: set it, so that moving the threads
	// does not shrink it (go test sets it already; a program of one's own
	// need not have).
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	if err := moveProcess(rest); err != nil {
		return nil, err
	}
	confined.Store(true)
	return rest, nil
}

// PinThread pins the calling OS thread to cpu (the caller has locked its
// goroutine to the thread; the goroutine must end without unlocking, so
// that the thread, with its affinity, ends with it). cpu < 0 (an unpinned
// loop) does nothing, or, once ConfineRuntime has moved the process off
// the loops' CPUs, gives the thread every allowed CPU back.
func PinThread(cpu int) error {
	var cpus []int
	switch {
	case cpu < 0 && !confined.Load():
		return nil
	case cpu < 0: // unpinned, but not confined with the runtime
		cpus = Allowed()
	default:
		cpus = []int{cpu}
	}
	if err := setAffinity(0, cpus); err != nil {
		if cpu < 0 {
			return fmt.Errorf("rdmatest: giving an unpinned loop every allowed CPU %v: %w", Allowed(), err)
		}
		return fmt.Errorf("rdmatest: pinning a loop to CPU %d: %w", cpu, err)
	}
	return nil
}

// PinSelf pins the calling (locked) thread to cpu and returns what puts
// its former affinity back. cpu < 0 is as for PinThread.
func PinSelf(cpu int) (restore func(), err error) {
	if cpu < 0 && !confined.Load() {
		return func() {}, nil
	}
	restore, err = saveAffinity()
	if err != nil {
		return nil, fmt.Errorf("rdmatest: reading the thread's CPU affinity: %w", err)
	}
	if err := PinThread(cpu); err != nil {
		return nil, err
	}
	return restore, nil
}

// passiveCPUs are the CPUs that loops of passive sides served to remote
// clients hold: CPUs are the process's, whichever plan they came from.
var passiveCPUs struct {
	sync.Mutex
	held map[int]bool
}

// Take gives a passive side served to a remote client a CPU of its own
// for its loop, one that no other passive side holds, or -1 (unpinned)
// when every one is held or there are none. The order is a benchmark's:
// the passive side's CPU (the second of Loop) first, then the rest of
// the list, and the requester's (the first) last, so that a benchmark in
// the same process (the peer's tests) keeps its requester's CPU. Give
// returns it.
func (p Plan) Take() int {
	passiveCPUs.Lock()
	defer passiveCPUs.Unlock()
	n := len(p.Loop)
	for i := range n {
		if c := p.Loop[(i+1)%n]; !passiveCPUs.held[c] {
			if passiveCPUs.held == nil {
				passiveCPUs.held = map[int]bool{}
			}
			passiveCPUs.held[c] = true
			return c
		}
	}
	return -1
}

// Give returns a CPU from Plan.Take (-1 is nothing to return).
func Give(cpu int) {
	if cpu < 0 {
		return
	}
	passiveCPUs.Lock()
	delete(passiveCPUs.held, cpu)
	passiveCPUs.Unlock()
}
