package engine

import (
	"flag"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/verbs"
)

var (
	costBlocks = flag.Int("progcost.blocks", 4, "TestProgramCost: blocks of each contestant, interleaved")
	costIters  = flag.Int("progcost.iters", 200, "TestProgramCost: round trips per block")
)

// writeLatSpecs are the WriteLat ping-pong (8 bytes, RC) as programs,
// the hand-written loops' work: A's WRITE signaled once every half send
// queue (64 of 128), the sample from the post to the spin that sees the
// answer, halved; B answers each new value of the last byte with it.
func writeLatSpecs(size int) (a, b prog.Spec) {
	last := func(in bool) prog.Mem { return prog.Mem{In: in, Off: size - 1, Len: 1} }
	write := prog.WR{Op: verbs.OpWrite, Local: prog.Mem{Len: size}}
	a = prog.Spec{Steps: []prog.Step{
		{Kind: verbs.StepNextGen}, {Kind: verbs.StepPutGen, At: last(false)}, {Kind: verbs.StepSampleStart},
		{Kind: verbs.StepPost, WRs: []prog.WR{write}, Every: 64}, {Kind: verbs.StepSpinGen, At: last(true)},
		{Kind: verbs.StepSampleEnd, Halve: true},
	}}
	b = prog.Spec{Steps: []prog.Step{
		{Kind: verbs.StepSpinChange, At: last(true)}, {Kind: verbs.StepPutGen, At: last(false)},
		{Kind: verbs.StepPost, WRs: []prog.WR{write}, Every: 64},
	}}
	return a, b
}

// TestProgramCost measures the interpreter's cost per operation (issue
// #28): the hand-written WriteLat loops (verbs.NewPing, NewServe) against
// the same ping-pong as two programs, in blocks of -progcost.iters round
// trips on a fresh pair each, interleaved in one process (the order
// alternating), so that both see the same machine; it logs each
// contestant's p50 over all its blocks and the median of the blocks' p50
// ratios. make test runs a few small blocks (a check that both run and
// agree within a factor of 2); docs/performance.md records a long run.
func TestProgramCost(t *testing.T) {
	d := Device(t)
	if err := checkProcs(2); err != nil {
		t.Skip(err)
	}
	cpus := d.cpus.ForLoops(2)
	timeout := d.Opts.Timeout
	s := Spec{Kind: KindLatency, Op: verbs.OpWrite, Size: 8, Transport: verbs.TransportRC}
	s.defaults()
	iters := int64(*costIters)
	// run runs one block on a fresh pair and returns its samples.
	run := func(program bool) *hist.Recorder {
		p := NewPair(t, d, s.pairConfig())
		defer func() { require.NoError(t, p.close()) }()
		var a *verbs.Loop
		var resp *responder
		var err error
		if program {
			as, bs := writeLatSpecs(s.Size)
			l, err := newProgram(p.B, s.Transport, bs, prog.Run{Passive: true, Idle: timeout, Timeout: timeout})
			require.NoError(t, err)
			r := readyLoop(l, cpus[1])
			r.begin()
			resp = &responder{run: r, timeout: timeout}
			a, err = newProgram(p.A, s.Transport, as, prog.Run{Iters: iters, Timeout: timeout, Hist: histGeometry})
			require.NoError(t, err)
		} else {
			resp, err = p.startPassive(&s, cpus[1])
			require.NoError(t, err)
			a, err = newPing(p, &s, iters, timeout)
			require.NoError(t, err)
		}
		_, rec := measureBlock(t, a, resp, cpus[0], iters)
		return rec
	}
	hand, interp := hist.NewRecorder(), hist.NewRecorder()
	var ratios []float64
	for k := range *costBlocks {
		var h, g *hist.Recorder
		if k%2 == 0 {
			h, g = run(false), run(true)
		} else {
			g, h = run(true), run(false)
		}
		hand.Merge(h)
		interp.Merge(g)
		ratios = append(ratios, float64(g.Quantile(50))/float64(h.Quantile(50)))
	}
	slices.Sort(ratios)
	n := len(ratios)
	median := (ratios[(n-1)/2] + ratios[n/2]) / 2
	ratio := float64(interp.Quantile(50)) / float64(hand.Quantile(50))
	t.Logf("WriteLat RC 8 B, %d blocks × %d round trips each, interleaved: p50 hand-written %d ns, program %d ns, ratio %.3f; median of the blocks' p50 ratios %.3f (range %.3f–%.3f)",
		n, iters, hand.Quantile(50), interp.Quantile(50), ratio, median, ratios[0], ratios[n-1])
	assert.InDelta(t, 1, ratio, 1, "the program's p50 within a factor of 2 of the hand-written loop's")
}

// measureBlock runs the requester a on cpu (one warm-up iteration, then
// its run) while resp serves, stops resp, requires iters operations
// done and returns the run's result and samples; a is closed.
func measureBlock(t *testing.T, a *verbs.Loop, resp *responder, cpu int, iters int64) (verbs.LoopResult, *hist.Recorder) {
	t.Helper()
	defer func() { assert.NoError(t, a.Close()) }()
	require.NoError(t, a.Warm(1))
	res, err := readyLoop(a, cpu).result()
	require.NoError(t, err)
	require.NoError(t, resp.Stop())
	require.Equal(t, iters, res.Ops)
	rec := hist.NewRecorder()
	require.NoError(t, importLoop(rec, a, res))
	return res, rec
}
