package rdmatest_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// benchmarkCommit is a pattern of one's own: WRITE a 4 KiB block, SEND
// an 8-byte commit, await the passive side's 8-byte ACK. In a _test.go
// file of your own it is func BenchmarkCommit(b *testing.B), run by
// go test -bench with rdmatest.Main as TestMain.
func benchmarkCommit(b *testing.B) {
	p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{SlotSize: 4096 + 8})
	rdmatest.Serve(b, p, rdmatest.EchoSends(8)) // B acknowledges every SEND with 8 bytes
	write := p.A.Peer[0].Write(p.A.OutAt(0, 0, 4096))
	commit := p.A.Peer[0].Send(p.A.OutAt(0, 4096, 8)).Signaled()
	rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "commits/s"}, func() error {
		if err := p.A.Post(0, write, commit); err != nil {
			return err
		}
		return p.A.Await(rdmatest.Recvs(1), rdmatest.Sends(1)) // the ACK, and the commit's completion
	})
}

// A benchmark of one's own pattern: Measure reports p50-ns … max-ns per
// commit, commits/s, cpu-ns/op and allocations. Here Benchmark runs it
// (an Example cannot be a benchmark) and writes the result line to
// standard error; without an RDMA device it is skipped.
func Example_commit() {
	rdmatest.Benchmark("Commit/size=4096", benchmarkCommit)
	// Output:
}
