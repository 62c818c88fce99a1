package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// benchmarkOwn runs f as rdmatest.Benchmark does and returns its result,
// or the failure's message (rdmatest.Benchmark panics with it).
func benchmarkOwn(name string, f func(b *testing.B)) (r testing.BenchmarkResult, failure string) {
	defer func() {
		if v := recover(); v != nil {
			failure = fmt.Sprint(v)
		}
	}()
	return rdmatest.Benchmark(name, f), ""
}

// TestPeerServesPrograms runs patterns of one's own against a peer in
// this process, on the same device: side B's program is sent in the
// Setup and runs in the peer (or B is a target the NIC serves), the
// delivered count comes back in Stopped, a program the peer refuses
// when it builds it is an error naming the side and the step, and the
// peer serves the next client and releases everything.
func TestPeerServesPrograms(t *testing.T) {
	d := rdmatest.Device(t)
	addr, srv := startPeer(t, d, testToken, testLimits)
	client := *d
	client.Opts.Peer, client.Opts.PeerToken = addr, testToken
	commit := func(b *testing.B) { // the commit example: B's program acknowledges every commit
		p := rdmatest.NewPair(b, &client, rdmatest.PairConfig{SlotSize: 8 + 4096})
		a, s := p.A, p.B
		rdmatest.Serve(b, p, s.Program(s.Await(rdmatest.Recvs(1)), s.Post(0, rdmatest.Send(s.Out(0, 0, 8))).SignalEvery(64)).KeepRecvs(8))
		rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "commits/s"}, a.Program(
			a.Post(0, rdmatest.Write(a.Out(0, 8, 4096), a.Peer(0, 8)), rdmatest.Send(a.Out(0, 0, 8)).Signaled()),
			a.Await(rdmatest.Sends(1), rdmatest.Recvs(1)),
		).KeepRecvs(8))
	}
	sink := func(b *testing.B) { // B only receives: its count comes after A's last send (oob.Stop.Expect)
		p := rdmatest.NewPair(b, &client, rdmatest.PairConfig{})
		a, s := p.A, p.B
		rdmatest.Serve(b, p, s.Program(s.Await(rdmatest.Recvs(1))).KeepRecvs(8))
		rdmatest.Measure(b, p, rdmatest.MeasureOpts{}, a.Program(a.Post(0, rdmatest.Send(a.Out(0, 0, 8)).Signaled()), a.Await(rdmatest.Sends(1))))
	}
	lock := func(b *testing.B) { // no program on B: a target allowing atomics, READ and WRITE, zeroed
		p := rdmatest.NewPair(b, &client, rdmatest.PairConfig{SlotSize: 512})
		a := p.A
		old, lock := a.In(0, 0, 8), a.Peer(0, 0)
		rdmatest.Measure(b, p, rdmatest.MeasureOpts{}, a.Program(
			a.Post(0, rdmatest.CmpSwap(old, lock, 0, 1).Signaled()),
			a.Await(rdmatest.Sends(1)),
			a.Expect(old, 0),
			a.Post(0, rdmatest.Read(a.In(0, 64, 256), a.Peer(0, 64)).Signaled()),
			a.Await(rdmatest.Sends(1)), // not a Fenced WRITE: rxe can lose its wake-up (WR.Fenced)
			a.Post(0, rdmatest.Write(a.Out(0, 0, 8), lock).Signaled()),
			a.Await(rdmatest.Sends(1)),
		))
	}
	refused := func(b *testing.B) { // passes the static checks; verbs refuses it: a READ never awaited
		p := rdmatest.NewPair(b, &client, rdmatest.PairConfig{})
		a, s := p.A, p.B
		rdmatest.Serve(b, p, s.Program(s.Post(0, rdmatest.Read(s.In(0, 0, 8), s.Peer(0, 0))), s.Await(rdmatest.Recvs(1))).KeepRecvs(0))
		rdmatest.Measure(b, p, rdmatest.MeasureOpts{}, a.Program(a.Post(0, rdmatest.Send(a.Out(0, 0, 8)).Signaled()), a.Await(rdmatest.Sends(1))))
	}
	for _, tc := range []struct {
		name string
		f    func(b *testing.B)
		want string // the failure; "" = runs
	}{
		{"Commit", commit, ""},
		{"Sink", sink, ""},
		{"LockedRead", lock, ""},
		{"Refused", refused, "program step 0 (post): never awaited"},
		{"CommitAgain", commit, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, failure := benchmarkOwn(tc.name, tc.f)
			if tc.want != "" {
				assert.Contains(t, failure, tc.want)
				assert.Contains(t, failure, "side B's program")
			} else {
				require.Empty(t, failure)
				require.Positive(t, r.N, "the benchmark ran no iteration")
				assert.Positive(t, r.Extra["p50-ns"])
			}
			waitReleased(t, d)
		})
	}
	assert.Eventually(t, func() bool { return srv.failed.Load() == 1 }, 5*time.Second, 10*time.Millisecond,
		"one session failed (the refused program): %d did", srv.failed.Load())
	assert.Zero(t, srv.panics.Load())
}
