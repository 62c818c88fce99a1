package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	rec := NewRecorder()
	require.NoError(t, rec.importLoop(c, res))
	require.Equal(t, int64(100), rec.Count())
	elapsed := res.Elapsed()
	require.Less(t, elapsed, pause, "the run itself is shorter than the pause (else the test shows nothing)")
	// Max is the highest value of its HDR bucket: up to 0.1% above the sample.
	assert.LessOrEqual(t, float64(rec.h.Max()), 1.001*float64(elapsed.Nanoseconds()), "a sample longer than the run")
}
