//go:build rdmaslow && linux && cgo

package verbs

import (
	"fmt"
	"time"
)

// SetSlowdown makes a loop's results the fraction frac worse (0.25: 25%
// more time per operation), for the gate's self-check: it exists only in
// a build with the tag rdmaslow. The C loop runs unchanged; what it
// measured is dilated when Run returns, so that every unit the gate reads
// moves by exactly the factor 1+frac, whatever the device's noise:
//   - Run's LoopResult: Last, RecvFirst and RecvLast are moved away from
//     First by the factor (the loop's own elapsed time, hence msgs/s and
//     MB/s);
//   - the histograms (Counts, CycleCounts) are read with every sample
//     times the factor (see Slowdown: the importer scales them), so
//     every percentile moves by it;
//   - Run then spins, on its own thread, for frac of the loop's elapsed
//     time before it returns, inside the benchmark's timer: ns/op and
//     cpu-ns/op move by about the factor too.
//
// An earlier design spun inside the loop, per round trip or at a
// stream's end: on rxe under TCG that changed the system it measured
// (a spinning vCPU does not idle), and a 25% spin moved SendLat event's
// p50 by 8% and ReadBW 64 B's MB/s by nothing (issue #41).
func (l *Loop) SetSlowdown(frac float64) error {
	if !(frac >= 0 && frac <= 10) {
		return fmt.Errorf("verbs: slowdown %g: want a fraction in [0, 10]", frac)
	}
	l.slow = frac
	return nil
}

// Slowdown is the fraction SetSlowdown set (0: none).
func (l *Loop) Slowdown() float64 { return l.slow }

// slowResult dilates r by the loop's slowdown and spins for the time
// added (see SetSlowdown).
func (l *Loop) slowResult(r LoopResult) LoopResult {
	if l.slow <= 0 || r.Last <= r.First {
		return r
	}
	r = DilateResult(r, 1+l.slow)
	until := time.Now().Add(time.Duration(float64(r.Last-r.First) * l.slow / (1 + l.slow)))
	for time.Now().Before(until) {
	}
	return r
}
