package engine

import "runtime"

// The requester's loop spins on its completion queue or on memory, and
// so does the in-process passive side's when it has work of its own
// (answering a ping-pong, consuming receives, mirroring a stream,
// serving RPCs): each a C loop on an OS thread of its own. Each needs a
// CPU: with fewer, one runs only when the other's time slice ends, and a
// ping-pong's "latency" becomes the scheduler's (measured with the
// earlier Go loops: about 1 ms at GOMAXPROCS=1 where rxe in the VM gave
// 20–40 µs). A loop in C holds no P, but GOMAXPROCS is still checked: Go
// sets it from a container's CPU limit, the quota two spinning threads
// would share.

// busyGoroutines is how many goroutines busy-poll during a Latency
// or Stream run of s on d: the requester's, and
// the passive side's unless a remote peer plays it or the NIC alone
// serves the verb (READ, WRITE and atomics of a stream, READ and atomic
// round trips).
func (s *Spec) busyGoroutines(d *Dev) int {
	if d.Opts.Peer == "" && (s.Bidir || roleFor(s) != roleTarget) {
		return 2
	}
	return 1
}

// checkProcs returns an *Unsupported error when busy spinning goroutines
// cannot each have a CPU: GOMAXPROCS (go test -cpu, or the container's
// CPU limit, which Go follows) or the CPUs this process may run on are
// fewer.
func checkProcs(busy int) error {
	procs, cpus := runtime.GOMAXPROCS(0), runtime.NumCPU()
	if busy <= min(procs, cpus) {
		return nil
	}
	return unsupported("this run busy-polls on %d goroutines (requester and in-process passive side) but GOMAXPROCS is %d and %d CPUs are usable: "+
		"each would wait for the other's time slice, which measures the Go scheduler, not the NIC; run with GOMAXPROCS (go test -cpu) and CPUs of at least %d",
		busy, procs, cpus, busy)
}
