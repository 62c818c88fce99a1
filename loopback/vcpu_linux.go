//go:build linux

package loopback

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// pinVCPUs pins the vCPU threads of the qemu process pid ("CPU n/TCG" or
// "CPU n/KVM", named by -name ...,debug-threads=on) one to a host CPU:
// vCPU n to the n-th CPU this process may use. Unpinned, the host's
// scheduler sometimes runs both vCPU threads on one core for seconds,
// and everything in the guest then runs about 1.5× slower: the
// benchmarks' runs switch between two speeds (docs/compare.md). It does
// nothing when the host has fewer usable CPUs than the guest has vCPUs.
// It waits for the threads until ctx ends or 60 s pass; the result says
// what was pinned, or why nothing was.
func pinVCPUs(ctx context.Context, pid, vcpus int) string {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return fmt.Sprintf("vCPUs not pinned: %v", err)
	}
	var host []int
	for c := 0; c < len(allowed)*64 && len(host) < allowed.Count(); c++ {
		if allowed.IsSet(c) {
			host = append(host, c)
		}
	}
	if len(host) < vcpus {
		return fmt.Sprintf("vCPUs not pinned: %d vCPUs on %d host CPUs", vcpus, len(host))
	}
	deadline := time.Now().Add(60 * time.Second)
	pinned := map[int]int{} // vCPU → thread
	for len(pinned) < vcpus {
		for n, tid := range vcpuThreads(pid) {
			if _, done := pinned[n]; done || n >= vcpus {
				continue
			}
			var set unix.CPUSet
			set.Set(host[n])
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				return fmt.Sprintf("vCPUs not pinned: vCPU %d (thread %d): %v", n, tid, err)
			}
			pinned[n] = tid
		}
		if len(pinned) == vcpus {
			break
		}
		select {
		case <-ctx.Done():
			return "vCPUs not pinned: the guest ended first"
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("vCPUs not pinned: found %d of %d vCPU threads of qemu (pid %d) in 60 s", len(pinned), vcpus, pid)
		}
	}
	parts := make([]string, 0, vcpus)
	for n := range vcpus {
		parts = append(parts, fmt.Sprintf("vCPU %d on CPU %d", n, host[n]))
	}
	return "vCPUs pinned: " + strings.Join(parts, ", ")
}

// vcpuThreads maps vCPU numbers to the thread IDs of qemu process pid.
func vcpuThreads(pid int) map[int]int {
	m := map[int]int{}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/comm", pid))
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		n, ok := parseVCPUName(strings.TrimSpace(string(b)))
		if !ok {
			continue
		}
		if tid, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			m[n] = tid
		}
	}
	return m
}

// parseVCPUName reads a qemu vCPU thread's name, "CPU 1/TCG" or
// "CPU 1/KVM".
func parseVCPUName(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, "CPU ")
	if !ok {
		return 0, false
	}
	num, accel, ok := strings.Cut(rest, "/")
	if !ok || (accel != "TCG" && accel != "KVM") {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	return n, err == nil && n >= 0
}
