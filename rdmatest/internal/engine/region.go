package engine

import (
	"runtime/debug"
	"syscall"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/counters"
	"github.com/rdmabench/rdmabench/rdmatest/internal/cpus"
)

// region is what is read just before and just after a timed region: the
// port's counters and the process's CPU time.
type region struct {
	counters    counters.Values
	preemptions int64         // loopPreemptions at the start
	noLoop      bool          // no loop thread ran the region (ControlPath): no preempted/run
	cpu         time.Duration // CPU time at the start; after end, the CPU time spent
	ended       bool
	// wall is the system clock at the start; end stores the span in
	// timed (the Dev's LastRegion).
	wall  time.Time
	timed *lastRegion
}

// beforeRun is the last step before a timed region: it finishes any
// garbage collection the setup's allocations started (a GC cycle running
// into the region would put its mark worker on a CPU a loop spins on;
// the loops allocate nothing, so none starts later) and returns the free
// memory to the OS now (debug.FreeOSMemory), so that the runtime's
// background scavenger has nothing to do during the run: its madvise
// calls would wake a thread on a CPU a loop spins on and send TLB
// shootdowns to every CPU running the process. Then it reads the port's
// counters (nil when the device has none: the run goes on without
// counter deltas) and the process's CPU time.
func beforeRun(b *testing.B, d *Dev) *region {
	debug.FreeOSMemory()
	r := &region{}
	c, err := counters.Read(d.Name(), d.PortNum)
	if err != nil {
		b.Logf("rdmatest: no port counters: %v", err)
	} else {
		r.counters = c
	}
	r.preemptions = loopPreemptions.Load()
	r.cpu = cpuTime()
	r.wall, r.timed = time.Now(), d.timed
	return r
}

// end marks the end of the timed region (call it right after the timer
// stops).
func (r *region) end() {
	if r.ended {
		return
	}
	r.cpu, r.ended = cpuTime()-r.cpu, true
	if t := r.timed; t != nil {
		now := time.Now()
		t.mu.Lock()
		t.start, t.end = r.wall, now
		t.mu.Unlock()
	}
}

// report reports what the region cost: cpu-ns/op, the user and system
// CPU time of the whole process (every thread: the requester's loop, the
// in-process passive side's, the Go runtime) during the timed region,
// divided by ops; a loop that busy-polls burns its CPU whether or not
// work arrives, so for polling runs this is about (spinning threads ×
// elapsed) / ops, as perftest's --cpu_util shows ~100% per polling
// thread. Then the port counters that moved (see counters.Report), so
// that a fast run with retransmissions shows them.
func (r *region) report(b *testing.B, d *Dev, ops int64) {
	b.Helper()
	r.end()
	if ops > 0 {
		b.ReportMetric(float64(r.cpu.Nanoseconds())/float64(ops), "cpu-ns/op")
	}
	// The loops' threads end their counts when their runs end (the
	// passive side's at its stop, before this report). A region that no
	// loop thread ran has nothing counted: it reports no such metric
	// rather than a 0 that was never measured.
	if !r.noLoop && cpus.Supported {
		b.ReportMetric(float64(loopPreemptions.Load()-r.preemptions), "preempted/run")
	}
	if r.counters == nil {
		return
	}
	after, err := counters.Read(d.Name(), d.PortNum)
	if err != nil {
		b.Errorf("rdmatest: reading port counters after the run: %v", err)
		return
	}
	delta, err := counters.Delta(r.counters, after)
	if err != nil {
		b.Errorf("rdmatest: %v", err)
	}
	counters.Report(b, delta)
}

// cpuTime is the user and system CPU time of the process so far
// (getrusage RUSAGE_SELF; 0 where it is not available).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
