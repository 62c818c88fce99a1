package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestResponderStopTwice: the benchmarks stop the passive side on their
// error path and again, deferred; the second call must not wait (it once
// added 10 s to every benchmark run), and a remote role is stopped once.
func TestResponderStopTwice(t *testing.T) {
	calls := 0
	remote := &responder{stopFn: func() error { calls++; return nil }}
	assert.NoError(t, remote.Stop())
	assert.NoError(t, remote.Stop())
	assert.Equal(t, 1, calls, "a remote role is stopped once")
	var none *responder
	assert.NoError(t, none.Stop(), "no passive side: nothing to stop")
	assert.Zero(t, none.recvs())
}

// TestResponderStopsItsLoop: a C passive loop stops on its flag, is freed
// only after it returned (the leak check would name a loop left open),
// and a second Stop returns at once.
func TestResponderStopsItsLoop(t *testing.T) {
	d := Device(t)
	s := Spec{Kind: KindStream, Op: verbs.OpSend, Size: 64}
	s.defaults()
	p := NewPair(t, d, s.pairConfig())
	cfg, ok := serveConfig(p.B, &s, roleSink, 16, time.Minute)
	require.True(t, ok)
	r, err := startServe(cfg, -1)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, r.Stop())
	require.NoError(t, r.Stop())
	assert.Less(t, time.Since(start), 5*time.Second, "the loop ends on its stop flag, not its minute of idleness")
}
