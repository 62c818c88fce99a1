package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// CPU placement of the timed loops. Every loop that spins (the
// requester's, and the in-process passive side's) runs on an OS thread of
// its own, pinned to a CPU of its own, as perftest's -F-less default and
// numactl practice do: the CPUs come from -rdma.cpus when given, else
// from the device's NUMA node (sysfs device/local_cpulist), intersected
// with the CPUs this process may use; the requester takes the first, the
// passive side the second. Where there are fewer CPUs than spinning loops
// (threads runs oversubscribe on purpose), or with -rdma.cpus none,
// nothing is pinned. The choice is printed as the rdma-cpus configuration
// line.

// sysfsRoot is where loopCPUs reads the device's NUMA placement (a test
// points it at a fake tree).
var sysfsRoot = "/sys"

// parseCPUList parses a Linux CPU list ("0-3,8,10-11") in its own order,
// each CPU once (its first place): -rdma.cpus 3,1 puts the requester on
// CPU 3.
func parseCPUList(s string) ([]int, error) {
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

// allowedCPUs is the CPUs this process may run on, read once, as it
// started: before confineRuntime narrowed its threads' affinity.
var allowedCPUs = sync.OnceValue(threadCPUs)

// confined is set once confineRuntime has moved the process's threads
// off the loops' CPUs: an unpinned loop (cpu < 0) then takes every
// allowed CPU back for its run.
var confined atomic.Bool

// threadCPUs is the calling thread's affinity.
func threadCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		cpus := make([]int, runtime.NumCPU())
		for i := range cpus {
			cpus[i] = i
		}
		return cpus
	}
	var cpus []int
	for c := range 1 << 12 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// loopCPUs returns the CPUs for the timed loops, in order of use, and
// where the list came from. override is -rdma.cpus (empty: none).
func loopCPUs(device, override string, allowed []int) ([]int, string, error) {
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
		return nil, "-rdma.cpus none", nil
	}
	if override != "" {
		list, err := parseCPUList(override)
		if err != nil {
			return nil, "", fmt.Errorf("rdmatest: -rdma.cpus: %w", err)
		}
		if got := pick(list); len(got) != len(list) {
			return nil, "", fmt.Errorf("rdmatest: -rdma.cpus %q names CPUs this process may not use (allowed: %v)", override, allowed)
		}
		return list, "-rdma.cpus", nil
	}
	if device != "" {
		b, err := os.ReadFile(filepath.Join(sysfsRoot, "class/infiniband", device, "device/local_cpulist"))
		if err == nil {
			if list, err := parseCPUList(string(b)); err == nil {
				if got := pick(list); len(got) > 0 {
					return got, "numa-local", nil
				}
			}
		}
	}
	return allowed, "allowed", nil
}

// confineRuntime moves every thread of the process onto the allowed CPUs
// that are not the loops' (the first two of loop: requester and passive
// side), so that the Go runtime's own threads — sysmon above all, which
// wakes every few milliseconds while a loop runs in C and, in a guest
// with no CPU to spare, took a loop's CPU 5x as often as anything in a
// C-only process (docs/performance.md) — do not run where a loop spins.
// Threads created later inherit the affinity of their creator; a loop's
// thread pins itself to its CPU when its run starts and returns to these
// CPUs after it. It returns the CPUs the rest of the process runs on, or
// nil, changing nothing, when no allowed CPU is spare.
func confineRuntime(allowed, loop []int) ([]int, error) {
	rest := spareCPUs(allowed, loop)
	if rest == nil {
		return nil, nil
	}
	var set unix.CPUSet
	for _, c := range rest {
		set.Set(c)
	}
	// Since Go 1.25 the runtime recomputes GOMAXPROCS from its threads'
	// affinity unless it was set: set it, so that moving the threads
	// does not shrink it (go test sets it already; a program of one's own
	// need not have).
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	moved := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return nil, fmt.Errorf("rdmatest: listing the process's threads: %w", err)
		}
		fresh := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || moved[tid] {
				continue
			}
			fresh++
			moved[tid] = true
			// A thread may end meanwhile (ESRCH): nothing to move then.
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return nil, fmt.Errorf("rdmatest: moving thread %d to CPUs %v: %w", tid, rest, err)
			}
		}
		if fresh == 0 { // no thread appeared while the list was walked
			break
		}
	}
	confined.Store(true)
	return rest, nil
}

// spareCPUs is allowed without the loops' CPUs (the first two of loop:
// requester and passive side); nil when no loop CPU is chosen or no CPU
// is spare.
func spareCPUs(allowed, loop []int) []int {
	if len(loop) == 0 {
		return nil
	}
	busy := map[int]bool{}
	for _, c := range loop[:min(2, len(loop))] {
		busy[c] = true
	}
	var rest []int
	for _, c := range allowed {
		if !busy[c] {
			rest = append(rest, c)
		}
	}
	return rest
}

// cpuListString formats CPUs as a Linux CPU list ("2-5,8").
func cpuListString(cpus []int) string {
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

// pinThread pins the calling OS thread to cpu (the caller has locked its
// goroutine to the thread; the goroutine must end without unlocking, so
// that the thread, with its affinity, ends with it). cpu < 0 (an unpinned
// loop) does nothing, or, once confineRuntime has moved the process off
// the loops' CPUs, gives the thread every allowed CPU back.
func pinThread(cpu int) error {
	var set unix.CPUSet
	switch {
	case cpu < 0 && !confined.Load():
		return nil
	case cpu < 0: // unpinned, but not confined with the runtime
		for _, c := range allowedCPUs() {
			set.Set(c)
		}
	default:
		set.Set(cpu)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		if cpu < 0 {
			return fmt.Errorf("rdmatest: giving an unpinned loop every allowed CPU %v: %w", allowedCPUs(), err)
		}
		return fmt.Errorf("rdmatest: pinning a loop to CPU %d: %w", cpu, err)
	}
	return nil
}

// loopCPUs returns one CPU per spinning loop of a run with busy loops:
// [requester, passive side], each -1 (not pinned) when the process has
// fewer usable CPUs than busy loops.
func (d *Dev) loopCPUs(busy int) [2]int {
	cpus := [2]int{-1, -1}
	if len(d.cpus) >= busy {
		copy(cpus[:], d.cpus[:min(busy, 2)])
	}
	return cpus
}

// cpuLine is the rdma-cpus configuration line: where the requester's and
// the passive side's loops run, and where the list came from.
func (d *Dev) cpuLine() string {
	c := d.loopCPUs(2)
	var line string
	switch {
	case c[1] >= 0:
		line = fmt.Sprintf("requester=%d,passive=%d(%s)", c[0], c[1], d.cpusSrc)
	case d.loopCPUs(1)[0] >= 0:
		line = fmt.Sprintf("requester=%d,passive=unpinned(%s)", d.loopCPUs(1)[0], d.cpusSrc)
	default:
		return "unpinned"
	}
	// Where Device moves the rest of the process (confineRuntime).
	if rest := spareCPUs(d.allowed, d.cpus); rest != nil {
		line += ",runtime=" + cpuListString(rest)
	}
	return line
}

// pinSelf pins the calling (locked) thread to cpu and returns what puts
// its former affinity back. cpu < 0 is as for pinThread.
func pinSelf(cpu int) (func(), error) {
	if cpu < 0 && !confined.Load() {
		return func() {}, nil
	}
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, fmt.Errorf("rdmatest: reading the thread's CPU affinity: %w", err)
	}
	if err := pinThread(cpu); err != nil {
		return nil, err
	}
	return func() { unix.SchedSetaffinity(0, &old) }, nil
}

// passiveCPUs are the CPUs that loops of passive sides served to remote
// clients (Passive) hold: CPUs are the process's, whichever Dev took them.
var passiveCPUs struct {
	sync.Mutex
	held map[int]bool
}

// takeCPU gives a passive side served to a remote client (Passive) a CPU
// of its own for its loop, one that no other passive side holds, or -1
// (unpinned) when every one is held or there are none. The order is a
// benchmark's: the passive side's CPU (the second of the loop CPUs)
// first, then the rest of the list, and the requester's (the first) last,
// so that a benchmark in the same process (the peer's tests) keeps its
// requester's CPU. giveCPU returns it.
func (d *Dev) takeCPU() int {
	passiveCPUs.Lock()
	defer passiveCPUs.Unlock()
	n := len(d.cpus)
	for i := range n {
		if c := d.cpus[(i+1)%n]; !passiveCPUs.held[c] {
			if passiveCPUs.held == nil {
				passiveCPUs.held = map[int]bool{}
			}
			passiveCPUs.held[c] = true
			return c
		}
	}
	return -1
}

// giveCPU returns a CPU from takeCPU (-1 is nothing to return).
func giveCPU(cpu int) {
	if cpu < 0 {
		return
	}
	passiveCPUs.Lock()
	delete(passiveCPUs.held, cpu)
	passiveCPUs.Unlock()
}
