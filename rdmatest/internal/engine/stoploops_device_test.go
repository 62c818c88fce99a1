package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestStopLoops: the device's StopLoops ends a running loop inside its
// timed region — a WriteLatGap loop of 1 s gaps that would run for a
// day — within a second, with ErrStopped, and any later call of a loop
// on the device at once (rdmapeer's agent binds a Run's context to it).
func TestStopLoops(t *testing.T) {
	d := Device(t)
	if err := checkProcs(2); err != nil {
		t.Skip(err)
	}
	cpus := d.cpus.ForLoops(2)
	s := Spec{Kind: KindLatency, Op: verbs.OpWrite, Size: 8, Transport: verbs.TransportRC, Gap: time.Second}
	s.defaults()
	p := NewPair(t, d, s.pairConfig())
	t.Cleanup(func() { assert.NoError(t, p.close()) })
	resp, err := p.startPassive(&s, cpus[1])
	require.NoError(t, err)
	a, err := newPing(p, &s, 100000, d.Opts.Timeout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	r := readyLoop(a, cpus[0])
	r.begin()
	time.Sleep(1500 * time.Millisecond) // two round trips in, waiting out a gap
	t0 := time.Now()
	d.StopLoops()
	err = r.wait(5 * time.Second)
	took := time.Since(t0)
	require.ErrorIs(t, err, verbs.ErrStopped)
	assert.Less(t, took, time.Second)
	t.Logf("the loop ended %v after StopLoops: %v", took, err)
	assert.NoError(t, resp.Stop(), "the passive side, on the same device, stopped too")

	b, err := newPing(p, &s, 1, d.Opts.Timeout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	t0 = time.Now()
	assert.ErrorIs(t, b.Warm(1), verbs.ErrStopped, "a loop entering after StopLoops ends at once")
	assert.Less(t, time.Since(t0), time.Second)
}
