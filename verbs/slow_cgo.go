//go:build rdmaslow && linux && cgo

package verbs

/*
#cgo CFLAGS: -DRB_SLOW
#include "loop.h"
*/
import "C"

import "fmt"

// SetSlowdown makes a ping or stream loop take the fraction frac longer
// (0.25: 25% more time per operation), for the gate's self-check: it
// exists only in a build with the tag rdmaslow, whose C loops are
// compiled with RB_SLOW (loop.c, rb_slow_pay). A ping takes every round
// trip the fraction longer, inside its sample (ns/op, msgs/s and every
// percentile move); a stream holds its last completion back until its
// run, first post to last completion, took the fraction longer (ns/op,
// msgs/s and MB/s move; its per-message latencies do not). Other loops
// are not slowed.
func (l *Loop) SetSlowdown(frac float64) error {
	if !(frac >= 0 && frac <= 10) {
		return fmt.Errorf("verbs: slowdown %g: want a fraction in [0, 10]", frac)
	}
	l.ctl.slow_ppm = C.int64_t(frac * 1e6)
	return nil
}
