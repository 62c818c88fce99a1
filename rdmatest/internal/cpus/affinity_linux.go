package cpus

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Supported tells whether this system pins threads to CPUs and counts
// their preemptions (Linux: yes).
const Supported = true

// threadCPUs is the calling thread's affinity (every CPU where it cannot
// be read).
func threadCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return everyCPU()
	}
	var cpus []int
	for c := range 1 << 12 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// setAffinity sets thread tid's affinity (0: the calling thread's) to
// cpus.
func setAffinity(tid int, cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(tid, &set)
}

// saveAffinity reads the calling thread's affinity and returns what puts
// it back.
func saveAffinity() (func(), error) {
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	return func() { unix.SchedSetaffinity(0, &old) }, nil
}

// moveProcess sets every thread of the process to cpus, again until no
// thread appeared while the list was walked.
func moveProcess(cpus []int) error {
	moved := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("rdmatest: listing the process's threads: %w", err)
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
			if err := setAffinity(tid, cpus); err != nil && err != unix.ESRCH {
				return fmt.Errorf("rdmatest: moving thread %d to CPUs %v: %w", tid, cpus, err)
			}
		}
		if fresh == 0 { // no thread appeared while the list was walked
			return nil
		}
	}
}

// ThreadPreemptions is the calling thread's involuntary context switches
// so far (getrusage RUSAGE_THREAD, ru_nivcsw; 0 where getrusage cannot
// tell). It does not allocate.
func ThreadPreemptions() int64 {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) != nil {
		return 0
	}
	return ru.Nivcsw
}
