package engine

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// Device tests of verification: for every family, a run whose result is
// made wrong on purpose must fail its check.

// checkedPair makes s a spec of kind k with its defaults, checks it and
// returns a fresh pair for it, its memory filled with the patterns.
func checkedPair(t *testing.T, d *Dev, s *Spec, k Kind) *Pair {
	t.Helper()
	s.Kind = k
	s.defaults()
	require.NoError(t, s.Check(d))
	p := NewPair(t, d, s.pairConfig())
	p.fillPatterns(s)
	return p
}

// latencyRun runs n round trips of s on a fresh pair after corrupt has
// disturbed it (after the warm-up), and returns the pair, the loop's
// error and the verification's.
func latencyRun(t *testing.T, d *Dev, s Spec, n int64, corrupt func(p *Pair)) (loopErr, verifyErr error) {
	t.Helper()
	p := checkedPair(t, d, &s, KindLatency)
	resp, err := p.startPassive(&s, -1)
	require.NoError(t, err)
	ping, err := newPing(p, &s, n, d.Opts.Timeout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ping.Close()) })
	require.NoError(t, ping.Warm(1))
	corrupt(p)
	_, loopErr = readyLoop(ping, -1).result()
	require.NoError(t, resp.Stop())
	return loopErr, p.verifyLatency(&s)
}

func TestVerifyLatencyCatchesWrongResults(t *testing.T) {
	d := Device(t)
	for _, tc := range []struct {
		name    string
		s       Spec
		corrupt func(p *Pair)
	}{
		{"write echo carries a corrupted byte", Spec{Op: verbs.OpWrite, Size: 64}, func(p *Pair) { p.B.OutBytes(0)[10] ^= 0xff }},
		{"send echo carries a corrupted byte", Spec{Op: verbs.OpSend, Size: 64}, func(p *Pair) { p.A.OutBytes(0)[3] ^= 0xff }},
		{"ud send echo carries a corrupted byte", Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64}, func(p *Pair) { p.A.OutBytes(0)[63] ^= 0xff }},
		{"read target holds a corrupted byte", Spec{Op: verbs.OpRead, Size: 64}, func(p *Pair) { p.B.InBytes(0)[0] ^= 0xff }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loopErr, verr := latencyRun(t, d, tc.s, 50, func(*Pair) {})
			require.NoError(t, loopErr)
			require.NoError(t, verr, "an undisturbed run must pass its check")
			loopErr, verr = latencyRun(t, d, tc.s, 50, tc.corrupt)
			require.NoError(t, loopErr)
			assert.ErrorContains(t, verr, "verification", "the corrupted run must fail its check")
		})
	}
	for _, op := range []verbs.Opcode{verbs.OpFetchAdd, verbs.OpCmpSwap} {
		t.Run(op.String()+" counter moved by someone else", func(t *testing.T) {
			loopErr, _ := latencyRun(t, d, Spec{Op: op}, 50, func(*Pair) {})
			require.NoError(t, loopErr)
			loopErr, _ = latencyRun(t, d, Spec{Op: op}, 50, func(p *Pair) {
				c := p.B.InBytes(0)
				binary.LittleEndian.PutUint64(c, binary.LittleEndian.Uint64(c)+1000)
			})
			var le *verbs.LoopError
			require.ErrorAs(t, loopErr, &le)
			assert.Equal(t, verbs.LoopCheck, le.Status)
			t.Log(loopErr)
		})
	}
}

// streamRun runs a stream of n messages of s on a fresh pair (with its
// passive side) after corrupt, and returns the verification's error and
// the sink's report.
func streamRun(t *testing.T, d *Dev, s Spec, n int64, corrupt func(p *Pair)) (error, *sinkReport) {
	t.Helper()
	p := checkedPair(t, d, &s, KindStream)
	corrupt(p)
	l, err := newStreamLoop(p, p.A, &s, n, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	resp, err := p.startPassive(&s, -1)
	require.NoError(t, err)
	_, err = readyLoop(l, -1).result()
	require.NoError(t, err)
	sink, err := p.stopSink(resp, &s, 0, n)
	require.NoError(t, err)
	return p.verifyStream(&s, n), sink
}

func TestVerifyStreamCatchesWrongResults(t *testing.T) {
	d := Device(t)
	setCounter := func(p *Pair) { binary.LittleEndian.PutUint64(p.B.InBytes(0), 5) }
	for _, tc := range []struct {
		name    string
		s       Spec
		corrupt func(p *Pair)
	}{
		{"write stream carries a corrupted byte", Spec{Op: verbs.OpWrite, Size: 256, QD: 16}, func(p *Pair) { p.A.OutBytes(0)[100] ^= 0xff }},
		{"send stream carries a corrupted byte", Spec{Op: verbs.OpSend, Size: 256, QD: 16}, func(p *Pair) { p.A.OutBytes(0)[0] ^= 0xff }},
		{"read target holds a corrupted byte", Spec{Op: verbs.OpRead, Size: 256, QD: 16}, func(p *Pair) { p.B.InBytes(0)[255] ^= 0xff }},
		{"fetch-add counter started at 5", Spec{Op: verbs.OpFetchAdd, QD: 16}, setCounter},
		{"compare-and-swap counter started at 5", Spec{Op: verbs.OpCmpSwap, QD: 16}, setCounter},
		{"fetch-add over 4 counters, one started at 5", Spec{Op: verbs.OpFetchAdd, QD: 16, Counters: 4, Stride: 64},
			func(p *Pair) { binary.LittleEndian.PutUint64(p.B.InBytes(0)[3*64:], 5) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			verr, _ := streamRun(t, d, tc.s, 200, func(*Pair) {})
			require.NoError(t, verr, "an undisturbed run must pass its check")
			verr, _ = streamRun(t, d, tc.s, 200, tc.corrupt)
			assert.ErrorContains(t, verr, "verification", "the corrupted run must fail its check")
			t.Log(verr)
		})
	}
}

// TestVerifyCountsDroppedUD: UD messages that find no receive posted are
// dropped by the passive side's NIC; the sink's count must show it.
func TestVerifyCountsDroppedUD(t *testing.T) {
	d := Device(t)
	s := Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64, QD: 16}
	p := checkedPair(t, d, &s, KindStream)
	// A sink with 3 receives posted, started only after the stream: the
	// other 97 messages find no receive.
	cfg, ok := serveConfig(p.B, &s, "sink", 3, d.Opts.Timeout)
	require.True(t, ok)
	const n = 100
	l, err := newStreamLoop(p, p.A, &s, n, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	serve, err := verbs.NewServe(cfg)
	require.NoError(t, err)
	_, err = readyLoop(l, -1).result()
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond) // the last datagrams land, or not
	run := readyLoop(serve, -1)
	run.begin()
	sink, err := p.stopSink(&responder{run: run, timeout: d.Opts.Timeout}, &s, 0, n)
	require.NoError(t, err)
	assert.Equal(t, int64(3), sink.delivered(n), "3 receives were posted: 3 messages delivered")
}
