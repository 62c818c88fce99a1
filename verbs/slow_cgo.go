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
// compiled with RB_SLOW (loop.c, rb_slow_pay). A ping answers every round
// trip later, inside its sample; a stream drains its queues every 8·qd
// messages per QP and pauses, so it takes at least the fraction longer
// (each drain adds a pipeline bubble). Other loops are not slowed.
func (l *Loop) SetSlowdown(frac float64) error {
	if !(frac >= 0 && frac <= 10) {
		return fmt.Errorf("verbs: slowdown %g: want a fraction in [0, 10]", frac)
	}
	l.ctl.slow_ppm = C.int64_t(frac * 1e6)
	return nil
}
