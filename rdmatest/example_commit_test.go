package rdmatest_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// benchmarkCommit is a pattern of one's own: WRITE a 4 KiB block, SEND an
// 8-byte commit, await the passive side's 8-byte ACK. Both sides are
// programs that run in C. In a _test.go file of your own it is
// func BenchmarkCommit(b *testing.B), run by go test -bench with
// rdmatest.Main as TestMain.
func benchmarkCommit(b *testing.B) {
	p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{SlotSize: 8 + 4096})
	a, s := p.A, p.B
	rdmatest.Serve(b, p, s.Program( // B acknowledges every commit with 8 bytes
		s.Await(rdmatest.Recvs(1)),
		s.Post(0, rdmatest.Send(s.Out(0, 0, 8))).SignalEvery(64),
	).KeepRecvs(8))
	rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "commits/s"}, a.Program(
		a.Post(0, rdmatest.Write(a.Out(0, 8, 4096), a.Peer(0, 8)), // the block, behind B's receive
			rdmatest.Send(a.Out(0, 0, 8)).Signaled()), // the commit
		a.Await(rdmatest.Recvs(1), rdmatest.Sends(1)), // the ACK, and the commit's completion
	).KeepRecvs(8))
}

// A benchmark of one's own pattern: Measure reports p50-ns … max-ns per
// commit, commits/s, cpu-ns/op and allocations. Here Benchmark runs it
// (an Example cannot be a benchmark) and writes the result line to
// standard error; without an RDMA device it is skipped.
func Example_commit() {
	rdmatest.Benchmark("Commit/size=4096", benchmarkCommit)
	// Output:
}
