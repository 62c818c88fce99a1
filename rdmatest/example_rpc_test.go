package rdmatest_test

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// benchmarkWriteRPC is an RPC answered by RDMA WRITE: A SENDs a 32-byte
// request; B WRITEs a 1 KiB response into A's memory, then an 8-byte
// WRITE_WITH_IMM as the notice, whose immediate data A checks.
func benchmarkWriteRPC(b *testing.B) {
	p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{SlotSize: 2048})
	a, s := p.A, p.B
	rdmatest.Serve(b, p, s.Program(
		s.Await(rdmatest.Recvs(1)), // a request
		s.Post(0, rdmatest.Write(s.Out(0, 0, 1024), s.Peer(0, 64)),
			rdmatest.Write(s.Out(0, 1024, 8), s.Peer(0, 1088)).WithImm(42)).SignalEvery(32),
	).KeepRecvs(32))
	rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "rpcs/s"}, a.Program(
		a.Post(0, rdmatest.Send(a.Out(0, 0, 32)).Signaled()),
		a.Await(rdmatest.Recvs(1), rdmatest.Sends(1)), // the notice, and the request's completion
		a.CopyImm(a.In(0, 1100, 4)),
		a.Expect(a.In(0, 1100, 4), 42),
	).KeepRecvs(0)) // the notices consume receives with no memory
}

// An RPC whose response B writes: both sides' programs run in C.
func Example_writeRPC() {
	rdmatest.Benchmark("WriteRPC/size=1024", benchmarkWriteRPC)
	// Output:
}
