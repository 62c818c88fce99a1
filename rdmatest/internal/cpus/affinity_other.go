//go:build !linux

package cpus

import "fmt"

// Supported tells whether this system pins threads to CPUs and counts
// their preemptions: only Linux does.
const Supported = false

// threadCPUs is every CPU: this system keeps no affinity to read.
func threadCPUs() []int { return everyCPU() }

func setAffinity(int, []int) error { return errUnsupported }

func saveAffinity() (func(), error) { return nil, errUnsupported }

func moveProcess([]int) error {
	return fmt.Errorf("rdmatest: moving the process off the loops' CPUs: %w", errUnsupported)
}

// ThreadPreemptions is always 0 here: this system cannot count a
// thread's preemptions (Supported is false; nothing reports them).
func ThreadPreemptions() int64 { return 0 }
