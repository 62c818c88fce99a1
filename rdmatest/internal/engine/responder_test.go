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
	cfg := sinkConfig(t)
	r, err := startServe(cfg, -1)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, r.Stop())
	require.NoError(t, r.Stop())
	assert.Less(t, time.Since(start), 5*time.Second, "the loop ends on its stop flag, not its minute of idleness")
}

// TestResponderUnpinnable: a passive loop whose thread cannot be pinned
// (a CPU the process may not use) is an error at the start, naming the
// CPU, not a loop that never runs and a client that stalls; the loop is
// freed (the leak check of Device would name it).
func TestResponderUnpinnable(t *testing.T) {
	cfg := sinkConfig(t)
	r, err := startServe(cfg, 1023) // beyond any CPU the guest or a test host has
	require.Error(t, err)
	assert.Nil(t, r)
	assert.Contains(t, err.Error(), "CPU 1023")
}

// TestResponderEnded: a role without a loop has ended at once; a loop
// has ended once it returned, and only then is its CPU given back.
func TestResponderEnded(t *testing.T) {
	assert.True(t, (&responder{stopFn: func() error { return nil }}).ended())
	run := &loopRun{done: make(chan struct{})}
	r := &responder{run: run}
	assert.False(t, r.ended(), "the loop still runs")
	close(run.done)
	assert.True(t, r.ended())
}

// sinkConfig is the passive loop of a 64 B SEND stream's sink on a fresh
// pair (a minute of idleness allowed).
func sinkConfig(t *testing.T) verbs.ServeConfig {
	d := Device(t)
	s := Spec{Kind: KindStream, Op: verbs.OpSend, Size: 64}
	s.defaults()
	p := NewPair(t, d, s.pairConfig())
	cfg, ok := serveConfig(p.B, &s, roleSink, 16, time.Minute)
	require.True(t, ok)
	return cfg
}
