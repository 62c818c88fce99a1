package rdmatest_test

import (
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// No Go code runs per operation: the cgo calls Serve and Measure make
// (opening the pair, building, running and closing the loops, B's
// included) are the same however many iterations b.N asks for, so none
// is per operation.
func TestProgramNoCgoPerOperation(t *testing.T) {
	d := rdmatest.Device(t)
	bProg := func(s *rdmatest.Side) rdmatest.Program {
		return s.Program(s.Await(rdmatest.Recvs(1)), s.Post(0, rdmatest.Send(s.Out(0, 0, 8))).SignalEvery(64)).KeepRecvs(8)
	}
	// Serve opens the pair (NewPair only describes it), so the counts
	// below include opening it: the process's first pair makes one-time
	// calls (of the device's), made here before counting.
	testing.Benchmark(func(b *testing.B) {
		p := rdmatest.NewPair(b, d, rdmatest.PairConfig{SlotSize: 64})
		rdmatest.Serve(b, p, bProg(p.B))
		b.SkipNow()
	})
	var ns []int
	var calls []int64
	res := testing.Benchmark(func(b *testing.B) {
		p := rdmatest.NewPair(b, d, rdmatest.PairConfig{SlotSize: 64})
		a, s := p.A, p.B
		prog := a.Program(a.Post(0, rdmatest.Send(a.Out(0, 0, 8)).Signaled()), a.Await(rdmatest.Recvs(1), rdmatest.Sends(1))).KeepRecvs(8)
		c0 := runtime.NumCgoCall() // before Serve: B's thread enters its loop (one cgo call) at a time of its own
		rdmatest.Serve(b, p, bProg(s))
		rdmatest.Measure(b, p, rdmatest.MeasureOpts{}, prog)
		calls = append(calls, runtime.NumCgoCall()-c0)
		ns = append(ns, b.N)
	})
	require.Positive(t, res.N, "the benchmark ran")
	require.GreaterOrEqual(t, len(ns), 2, "runs of different b.N")
	require.NotEqual(t, ns[0], ns[len(ns)-1])
	for i := range calls {
		assert.Equal(t, calls[0], calls[i], "cgo calls of Measure with b.N %d and %d", ns[0], ns[i])
	}
	assert.Zero(t, res.AllocsPerOp())
}

// A program refused before it runs: the error names the side and the
// step first, with the file:line that built the step and one prefix
// ("rdmatest: side A, step 1 (await, own_test.go:70): …"; @ in want
// stands for that line number).
// Programs rdmatest refuses need no device (the pair is never opened);
// the one verbs refuses when it builds the loop does.
func TestProgramRefused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		device bool // refused by verbs when the loop is built, on the device
		prog   func(a, b *rdmatest.Side) rdmatest.Program
		want   string
	}{
		{"B's program given to A", false, func(_, b *rdmatest.Side) rdmatest.Program { return b.Program(b.Repost()) },
			"rdmatest: side B's program given to side A"},
		{"a step of the other side", false, func(a, b *rdmatest.Side) rdmatest.Program {
			return a.Program(a.Post(0, rdmatest.Send(a.Out(0, 0, 8)).Signaled()), b.Await(rdmatest.Sends(1)))
		}, "rdmatest: side A, step 1 (await, own_test.go:@): a step of side B"},
		{"memory of the other side", false, func(a, b *rdmatest.Side) rdmatest.Program {
			return a.Program(a.Post(0, rdmatest.Send(b.Out(0, 0, 8)).Signaled()), a.Await(rdmatest.Sends(1)))
		}, "rdmatest: side A, step 0 (post, own_test.go:@): WR 0: its memory is side B's"},
		{"an offset out of the slot", false, func(a, _ *rdmatest.Side) rdmatest.Program {
			return a.Program(a.Post(0, rdmatest.Send(a.Out(0, 0, 8)).Signaled()), a.Await(rdmatest.Sends(1)), a.Expect(a.In(0, 64, 8), 0))
		}, "rdmatest: side A, step 2 (expect, own_test.go:@): bytes 64..72 of QP 0's in slot: out of range: a slot holds 64 bytes"},
		{"nothing ever signaled", true, func(a, _ *rdmatest.Side) rdmatest.Program {
			return a.Program(a.Post(0, rdmatest.Write(a.Out(0, 0, 8), a.Peer(0, 0))), a.SpinEqual(a.In(0, 0, 8), 1))
		}, "rdmatest: side A, step 0 (post, own_test.go:@): send queue: no WR posted on QP 0 is ever signaled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &rdmatest.Dev{} // never opened: refused before the pair is
			if tt.device {
				d = rdmatest.Device(t)
			}
			failed := func() (msg string) {
				defer func() { msg = fmt.Sprint(recover()) }() // Benchmark panics with the failure
				rdmatest.Benchmark("Refused", func(b *testing.B) {
					p := rdmatest.NewPair(b, d, rdmatest.PairConfig{SlotSize: 64})
					rdmatest.Measure(b, p, rdmatest.MeasureOpts{}, tt.prog(p.A, p.B))
				})
				return ""
			}()
			assert.Regexp(t, strings.ReplaceAll(regexp.QuoteMeta(tt.want), "@", `\d+`), failed)
			assert.NotContains(t, failed, "verbs:", "one prefix, rdmatest's")
		})
	}
}

// BenchmarkProgramWriteLat is the built-in WriteLat ping-pong (scenario
// WriteLat, transport RC, 8 bytes) as two programs, written with the
// public API (make progcost compares the two in one process, block by
// block: docs/performance.md). Like the hand-written loop: the
// requester's post signals once every half send queue (64 of 128), the
// sample runs from the post to the spin that sees the answer and is
// halved, and B answers each new value of the last byte with it.
func BenchmarkProgramWriteLat(b *testing.B) {
	const size = 8
	p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{})
	a, s := p.A, p.B
	rdmatest.Serve(b, p, s.Program(
		s.SpinChange(s.In(0, size-1, 1)),
		s.PutGen(s.Out(0, size-1, 1)),
		s.Post(0, rdmatest.Write(s.Out(0, 0, size), s.Peer(0, 0))).SignalEvery(64),
	))
	rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "msgs/s", Warmup: 1}, a.Program(
		a.NextGen(),
		a.PutGen(a.Out(0, size-1, 1)),
		a.StartSample(),
		a.Post(0, rdmatest.Write(a.Out(0, 0, size), a.Peer(0, 0))).SignalEvery(64),
		a.SpinGen(a.In(0, size-1, 1)),
		a.EndHalfSample(),
	))
}
