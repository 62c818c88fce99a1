//go:build linux && cgo

package verbs

/*
#include "loop.h"

// rb_clock_cost is the mean time of one rb_clock_ns over n reads, on the
// clock itself.
static int64_t rb_clock_cost(int n) {
	volatile int64_t sink = 0;
	int64_t t0 = rb_clock_ns();
	for (int i = 0; i < n; i++)
		sink += rb_clock_ns();
	(void)sink;
	return (rb_clock_ns() - t0) / n;
}
*/
import "C"

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// calibrateSpan is how long the counter is calibrated against
// CLOCK_MONOTONIC_RAW when the process first builds a loop.
const calibrateSpan = 50 * time.Millisecond

// runCheckSpan is the shortest Run whose counter is measured again over
// the run itself (shorter ones leave the pair reads' uncertainty too
// large a share).
const runCheckSpan = 10 * time.Millisecond

// maxDrift is how far (relative) a run's own counter frequency may lie
// from the calibration, beyond the pair reads' uncertainty: the HDR
// histogram's resolution at 3 significant figures.
const maxDrift = 1e-3

var clockState struct {
	mu      sync.Mutex
	chosen  bool
	kind    ClockKind // as asked
	clock   Clock
	hz      float64 // ticks per second (counter)
	running int     // loops inside a C call
}

// SetClock chooses the loops' clock for the whole process and returns
// it: a counter is calibrated now. Asked again for the kind in use, it
// returns the clock as it is; for another kind, it fails while a loop
// runs.
func SetClock(k ClockKind) (Clock, error) {
	clockState.mu.Lock()
	defer clockState.mu.Unlock()
	if clockState.chosen && clockState.kind == k {
		return clockState.clock, nil
	}
	if clockState.running > 0 {
		return Clock{}, fmt.Errorf("verbs: clock %v: %d loops are running; set the clock before any runs", k, clockState.running)
	}
	return setClockLocked(k)
}

// LoopClock returns the loops' clock, choosing ClockAuto if none was
// set yet.
func LoopClock() (Clock, error) {
	clockState.mu.Lock()
	defer clockState.mu.Unlock()
	if clockState.chosen {
		return clockState.clock, nil
	}
	return setClockLocked(ClockAuto)
}

func setClockLocked(k ClockKind) (Clock, error) {
	name, why, err := chooseClock(readClockHost(), k)
	if err != nil {
		return Clock{}, err
	}
	c := Clock{Name: name, Why: why}
	hz := 0.0
	if c.Counter() {
		hz = float64(C.rb_clock_use_counter(C.int64_t(calibrateSpan)))
		if hz == 0 {
			return Clock{}, fmt.Errorf("verbs: clock %s: no CPU counter in this build, or its rate against CLOCK_MONOTONIC_RAW over %v is not a clock's (choose monotonic)", name, calibrateSpan)
		}
		c.MHz = hz / 1e6
	} else {
		C.rb_clock_use_monotonic()
	}
	clockState.chosen, clockState.kind, clockState.clock, clockState.hz = true, k, c, hz
	return c, nil
}

// pairRate is the counter's rate between two pair reads, and the
// relative uncertainty the reads' widths leave.
func pairRate(a, b C.rb_clock_pair) (hz, uncertain float64) {
	ns := float64(b.raw_ns - a.raw_ns)
	if ns <= 0 {
		return 0, math.Inf(1)
	}
	return float64(b.ticks-a.ticks) / ns * 1e9, float64(a.width_ns+b.width_ns) / 2 / ns
}

// clockEnter chooses the clock on a loop's first C call and counts the
// call as running (SetClock waits for none).
func clockEnter() error {
	clockState.mu.Lock()
	defer clockState.mu.Unlock()
	if !clockState.chosen {
		if _, err := setClockLocked(ClockAuto); err != nil {
			return err
		}
	}
	clockState.running++
	return nil
}

func clockLeave() {
	clockState.mu.Lock()
	clockState.running--
	clockState.mu.Unlock()
}

// runClock measures the counter over one Run: start before it, check
// after.
type runClock struct {
	hz    float64
	start C.rb_clock_pair
}

func startRunClock() runClock {
	clockState.mu.Lock()
	r := runClock{hz: clockState.hz}
	clockState.mu.Unlock()
	if r.hz > 0 {
		C.rb_clock_read_pair(&r.start)
	}
	return r
}

// check returns the counter's frequency over the run (0 for a
// monotonic clock or a run shorter than runCheckSpan), and an error
// wrapping ErrClockDrift if it moved off the calibration.
func (r runClock) check() (float64, error) {
	if r.hz == 0 {
		return 0, nil
	}
	var end C.rb_clock_pair
	C.rb_clock_read_pair(&end)
	if time.Duration(end.raw_ns-r.start.raw_ns) < runCheckSpan {
		return 0, nil
	}
	hz, uncertain := pairRate(r.start, end)
	if d := math.Abs(hz/r.hz - 1); d > maxDrift+uncertain {
		return hz, fmt.Errorf("%w: %.3f MHz over %v against %.3f MHz calibrated (%.2f%%, the limit %.2f%%): set the clock to monotonic (-rdma.clock)",
			ErrClockDrift, hz/1e6, time.Duration(end.raw_ns-r.start.raw_ns), r.hz/1e6, 100*d, 100*(maxDrift+uncertain))
	}
	return hz, nil
}

// ClockCost measures what one read of the loops' clock costs: the mean
// over n reads in C (n ≥ 1), timed on the clock itself.
func ClockCost(n int) (time.Duration, error) {
	if n < 1 || n > 1e9 {
		return 0, fmt.Errorf("verbs: ClockCost(%d): want 1 … 1e9 reads", n)
	}
	if _, err := LoopClock(); err != nil {
		return 0, err
	}
	return time.Duration(C.rb_clock_cost(C.int(n))), nil
}

// clockNs reads the loops' clock from Go (tests).
func clockNs() int64 { return int64(C.rb_clock_ns()) }
