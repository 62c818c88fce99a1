package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// TestWritePingAfterWarm: a WRITE ping-pong's Run after Warm is n real
// round trips. The value the ping writes carries over from Warm, so the
// first measured message differs from the warm-up's and the passive side
// echoes every one (it once restarted at the warm-up's value: the first
// sample saw the old echo at once, and the passive side skipped it).
func TestWritePingAfterWarm(t *testing.T) {
	d := Device(t)
	s := Spec{Op: verbs.OpWrite, Size: 64}
	p := checkedPair(t, d, &s, KindLatency)
	cfg, ok := serveConfig(p.B, &s, roleFor(&s), p.Cfg.RecvDepth, d.Opts.Timeout)
	require.True(t, ok)
	resp, err := startServe(cfg, -1)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Stop() })
	const n = 20
	l, err := newPing(p, &s, n, d.Opts.Timeout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	require.NoError(t, l.Warm(1))
	res, err := readyLoop(l, -1).result()
	require.NoError(t, err)
	require.NoError(t, resp.Stop())
	assert.Equal(t, int64(n), res.Ops)
	assert.Equal(t, int64(n+1), resp.res.Ops, "the passive side echoed the warm-up and every measured message")
}

// TestSignalAllPing: with perftest's latency work (every WR signaled and
// awaited on both sides, receives reposted per message) the ping-pongs
// run to the end, every message echoed; the loop records one cycle
// sample fewer than round trips, and each cycle (post to next post)
// holds the round trip before it, so its median is not below the
// samples' (up to the histogram's 0.1%).
func TestSignalAllPing(t *testing.T) {
	d := Device(t)
	for _, s := range []Spec{
		{Op: verbs.OpWrite, Size: 64, SignalAll: true},
		{Op: verbs.OpSend, Size: 64, SignalAll: true},
		{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64, SignalAll: true},
		{Op: verbs.OpRead, Size: 64, SignalAll: true},
	} {
		t.Run(s.Op.String()+"/"+s.Transport.String(), func(t *testing.T) {
			p := checkedPair(t, d, &s, KindLatency)
			var resp *responder
			if cfg, ok := serveConfig(p.B, &s, roleFor(&s), p.Cfg.RecvDepth, d.Opts.Timeout); ok {
				require.True(t, cfg.SignalAll, "the echo side does the same work")
				var err error
				resp, err = startServe(cfg, -1)
				require.NoError(t, err)
				t.Cleanup(func() { resp.Stop() })
			}
			const n = 300 // more than the receive batch and the send queue's half
			l, err := newPing(p, &s, n, d.Opts.Timeout)
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, l.Close()) })
			res, err := readyLoop(l, -1).result()
			require.NoError(t, err)
			if resp != nil {
				require.NoError(t, resp.Stop())
				assert.Equal(t, int64(n), resp.res.Ops, "the passive side echoed every message")
			}
			assert.Equal(t, int64(n), res.Ops)
			rec := hist.NewRecorder()
			require.NoError(t, importLoop(rec, l, res))
			cyc, err := importCycles(l, res)
			require.NoError(t, err)
			assert.Equal(t, int64(n-1), cyc.Count())
			assert.GreaterOrEqual(t, float64(cyc.Quantile(50)), 0.999*float64(rec.Quantile(50)))
		})
	}
}

// TestEchoRPCSamplesInRun: every echo RPC sample is of a request posted
// in the measured run, however long the pause after Warm: no sample
// exceeds the run's own time (requests left outstanding by the warm-up
// once carried the pause into the first window of samples).
func TestEchoRPCSamplesInRun(t *testing.T) {
	d := Device(t)
	s := Spec{Kind: KindRPC, Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 64, QD: 8}
	s.defaults()
	require.NoError(t, s.CheckRPC(d.Limits()))
	c, resp, release := newEchoRPC(t, d, &s, 100, -1)
	t.Cleanup(release)
	require.NoError(t, c.Warm(int64(s.QD)))
	const pause = 200 * time.Millisecond
	time.Sleep(pause)
	res, err := readyLoop(c, -1).result()
	require.NoError(t, err)
	require.NoError(t, c.Drain(), "every request of the run is answered")
	require.NoError(t, resp.Stop())
	rec := hist.NewRecorder()
	require.NoError(t, importLoop(rec, c, res))
	require.Equal(t, int64(100), rec.Count())
	elapsed := res.Elapsed()
	require.Less(t, elapsed, pause, "the run itself is shorter than the pause (else the test shows nothing)")
	// Max is the highest value of its HDR bucket: up to 0.1% above the sample.
	assert.LessOrEqual(t, float64(rec.Max()), 1.001*float64(elapsed.Nanoseconds()), "a sample longer than the run")
}

// TestLoopConfigsRefused: loop configurations the C loops cannot run to
// the end are refused when the loop is built, naming the values.
func TestLoopConfigsRefused(t *testing.T) {
	d := Device(t)
	s := Spec{Op: verbs.OpSend, Size: 64}
	p := checkedPair(t, d, &s, KindLatency)
	a := p.A
	const timeout = time.Second
	wr := sendWR(&s, a, 0)
	twoSGE := wr
	twoSGE.NumSGE, twoSGE.SGE[1] = 2, a.Out(0, 8)
	// built is the outcome of building a loop, closed at once.
	built := func(l *verbs.Loop, err error) error {
		if err == nil {
			l.Close()
		}
		return err
	}
	ping := func(edit func(c *verbs.PingConfig)) error {
		c := verbs.PingConfig{QP: a.QPs[0], CQ: a.CQ, WR: wr, SendDepth: 64, Iters: 1, Timeout: timeout, Hist: histGeometry,
			Mode: verbs.PingRecv, Recv: a.In(0, 64), RecvDepth: 512}
		edit(&c)
		return built(verbs.NewPing(c))
	}
	stream := func(edit func(c *verbs.StreamConfig)) error {
		c := verbs.StreamConfig{CQ: a.CQ, QPs: []verbs.StreamQP{{QP: a.QPs[0], WR: wr, Marker: wr}}, Msgs: 10,
			QD: 8, Batch: 1, Signal: 1, SendDep: 16, Timeout: timeout, Hist: histGeometry}
		edit(&c)
		return built(verbs.NewStream(c))
	}
	rpc := func(edit func(c *verbs.RPCConfig)) error {
		req := wr
		req.Op = verbs.OpSendImm
		c := verbs.RPCConfig{QP: a.QPs[0], ReqCQ: a.CQ, RespCQ: a.CQ, WR: req, Out: a.outByte(0, 0), Window: 8, Stride: 64, Size: 64,
			RecvQP: a.QPs[0], Recv: a.In(0, 64), RecvDepth: 72, SendDepth: 16, RPCs: 1, Timeout: timeout, Hist: histGeometry}
		edit(&c)
		return built(verbs.NewRPC(c))
	}
	for _, tc := range []struct {
		name string
		err  error
		want string // "" = built
	}{
		{"ping as configured", ping(func(*verbs.PingConfig) {}), ""},
		{"ping receives below one repost batch", ping(func(c *verbs.PingConfig) { c.RecvDepth = 16 }), "receive depth 16 must be 64"},
		{"ping WR of two SGEs", ping(func(c *verbs.PingConfig) { c.WR = twoSGE }), "has 2 SGEs; the loop takes at most 1"},
		{"stream as configured", stream(func(*verbs.StreamConfig) {}), ""},
		{"stream marker of two SGEs", stream(func(c *verbs.StreamConfig) { c.QPs[0].Marker = twoSGE }), "QP 0's marker has 2 SGEs"},
		{"stream that could wait with no signaled WR", stream(func(c *verbs.StreamConfig) { c.Batch, c.Signal = 3, 8 }), "could wait for room with no signaled WR outstanding"},
		{"stream whose batch fits the signal interval", stream(func(c *verbs.StreamConfig) { c.Batch, c.Signal = 4, 8 }), ""},
		{"rpc receives below the window + one repost batch", rpc(func(c *verbs.RPCConfig) { c.RecvDepth = 71 }), "receive depth 71 must be 72"},
		{"rpc request of two SGEs", rpc(func(c *verbs.RPCConfig) { c.WR.NumSGE, c.WR.SGE[1] = 2, a.Out(0, 8) }), "the request has 2 SGEs"},
		{"open-loop stream in batches", stream(func(c *verbs.StreamConfig) { c.Batch, c.Signal, c.Interval = 2, 2, time.Millisecond }), "not batches of 2"},
	} {
		if tc.want == "" {
			assert.NoError(t, tc.err, tc.name)
		} else {
			assert.ErrorContains(t, tc.err, tc.want, tc.name)
		}
	}
}

// TestLoopHoldsItsObjects: the QPs, CQs and buffers a loop's C code
// touches refuse to close while the loop is open, naming it, and close
// once it is closed.
func TestLoopHoldsItsObjects(t *testing.T) {
	d := Device(t)
	s := Spec{Op: verbs.OpWrite, Size: 64}
	p := checkedPair(t, d, &s, KindLatency)
	l, err := newPing(p, &s, 1, d.Opts.Timeout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	for name, c := range map[string]interface{ Close() error }{"QP": p.A.QPs[0], "CQ": p.A.CQ} {
		err := c.Close()
		require.Error(t, err, "%s closed under an open loop", name)
		assert.Contains(t, err.Error(), "open objects use it", name)
		assert.Contains(t, err.Error(), "loop #", name)
	}
	require.NoError(t, l.Close())
	assert.NoError(t, p.A.QPs[0].Close(), "the QP closes once the loop is closed")
}
