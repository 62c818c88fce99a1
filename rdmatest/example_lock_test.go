package rdmatest_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// benchmarkLockedRead takes a lock in B's memory with a compare-and-swap
// (0 → 1), checks it was free, READs the 256-byte record it protects and
// releases it with a fenced WRITE of 0 (after the READ). B's NIC serves
// all three: B runs no program.
func benchmarkLockedRead(b *testing.B) {
	p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{SlotSize: 512})
	a := p.A
	lock, record := a.Peer(0, 0), a.Peer(0, 64) // in B's memory: the lock word (0: free), the record
	old := a.In(0, 0, 8)                        // where the lock's old value lands
	rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "reads/s"}, a.Program(
		a.Post(0, rdmatest.CmpSwap(old, lock, 0, 1).Signaled()),
		a.Await(rdmatest.Sends(1)),
		a.Expect(old, 0), // the lock was free
		a.Post(0, rdmatest.Read(a.In(0, 64, 256), record),
			rdmatest.Write(a.Out(0, 0, 8), lock).Fenced().Signaled()), // 8 zero bytes
		a.Await(rdmatest.Sends(1)),
	))
}

// A lock-protected READ, three verbs per sample, all served by B's NIC.
func Example_lockedRead() {
	rdmatest.Benchmark("LockedRead/size=256", benchmarkLockedRead)
	// Output:
}
