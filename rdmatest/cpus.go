package rdmatest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

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

// parseCPUList parses a Linux CPU list ("0-3,8,10-11").
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
	sort.Ints(cpus)
	return cpus, nil
}

// allowedCPUs is the CPUs this process may run on.
func allowedCPUs() []int {
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

// pinThread pins the calling OS thread to cpu (the caller has locked its
// goroutine to the thread; the goroutine must end without unlocking, so
// that the thread, with its affinity, ends with it). cpu < 0 does nothing.
func pinThread(cpu int) error {
	if cpu < 0 {
		return nil
	}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
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
	if c[1] < 0 {
		c = d.loopCPUs(1)
		if c[0] < 0 {
			return "unpinned"
		}
		return fmt.Sprintf("requester=%d,passive=unpinned(%s)", c[0], d.cpusSrc)
	}
	return fmt.Sprintf("requester=%d,passive=%d(%s)", c[0], c[1], d.cpusSrc)
}

// pinSelf pins the calling (locked) thread to cpu and returns what puts
// its former affinity back. cpu < 0 does nothing.
func pinSelf(cpu int) (func(), error) {
	if cpu < 0 {
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
