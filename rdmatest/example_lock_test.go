package rdmatest_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// benchmarkLockedRead takes a lock in B's memory with a compare-and-swap
// (0 → 1), checks it was free, READs the 256-byte record it protects,
// awaits the READ and releases the lock with a WRITE of 0. B's NIC
// serves all three: B runs no program. (Awaiting the READ does what a
// Fenced WRITE would, in the program: rxe can lose the wake-up of a
// fenced WR, see WR.Fenced.)
func benchmarkLockedRead(b *testing.B) {
	p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{SlotSize: 512})
	a := p.A
	lock, record := a.Peer(0, 0), a.Peer(0, 64) // in B's memory: the lock word (0: free), the record
	old := a.In(0, 0, 8)                        // where the lock's old value lands
	rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "reads/s"}, a.Program(
		a.Post(0, rdmatest.CmpSwap(old, lock, 0, 1).Signaled()),
		a.Await(rdmatest.Sends(1)),
		a.Expect(old, 0), // the lock was free
		a.Post(0, rdmatest.Read(a.In(0, 64, 256), record).Signaled()),
		a.Await(rdmatest.Sends(1)),                                 // the record is here
		a.Post(0, rdmatest.Write(a.Out(0, 0, 8), lock).Signaled()), // 8 zero bytes: release
		a.Await(rdmatest.Sends(1)),
	))
}

// A lock-protected READ, three verbs per sample, all served by B's NIC.
func Example_lockedRead() {
	rdmatest.Benchmark("LockedRead/size=256", benchmarkLockedRead)
	// Output:
}
