//go:build linux && cgo

package verbs

import (
	"errors"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func monotonicNs(t *testing.T) int64 {
	var ts unix.Timespec
	require.NoError(t, unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts))
	return ts.Nano()
}

// readBoth reads the loops' clock between two reads of CLOCK_MONOTONIC,
// the tightest of 7 tries (a guest's vCPU can stall between two reads),
// and returns it with the two's midpoint.
func readBoth(t *testing.T) (clk, mono int64) {
	width := int64(math.MaxInt64)
	for range 7 {
		m0 := monotonicNs(t)
		c := clockNs()
		m1 := monotonicNs(t)
		if m1-m0 < width {
			clk, mono, width = c, m0+(m1-m0)/2, m1-m0
		}
	}
	return clk, mono
}

// TestClockMatchesMonotonic holds each clock against clock_gettime over
// a sleep: the counter's ns (its calibrated frequency) must run at
// CLOCK_MONOTONIC's rate within 0.1% and sit on its scale.
func TestClockMatchesMonotonic(t *testing.T) {
	kinds := []ClockKind{ClockMonotonic}
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64" {
		kinds = append(kinds, ClockCounter)
	}
	t.Cleanup(func() { _, _ = SetClock(ClockAuto) })
	for _, k := range kinds {
		t.Run(k.String(), func(t *testing.T) {
			c, err := SetClock(k)
			require.NoError(t, err)
			t.Logf("clock %s, %.3f MHz: %s", c.Name, c.MHz, c.Why)
			assert.Equal(t, k == ClockCounter, c.Counter())
			if c.Counter() {
				assert.Greater(t, c.MHz, 1.0)
			}
			a, m0 := readBoth(t)
			assert.InDelta(t, m0, a, float64(time.Millisecond), "on CLOCK_MONOTONIC's scale")
			time.Sleep(200 * time.Millisecond)
			b, m1 := readBoth(t)
			ratio := float64(b-a) / float64(m1-m0)
			t.Logf("over %v of CLOCK_MONOTONIC the clock counted %v (ratio %.6f)", time.Duration(m1-m0), time.Duration(b-a), ratio)
			assert.InDelta(t, 1, ratio, 1e-3)
		})
	}
}

// TestRunClockCheck: a run over which the counter kept its calibrated
// rate passes and reports it; one calibrated 1% off fails with
// ErrClockDrift.
func TestRunClockCheck(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("no CPU counter read on " + runtime.GOARCH)
	}
	t.Cleanup(func() { _, _ = SetClock(ClockAuto) })
	c, err := SetClock(ClockCounter)
	require.NoError(t, err)
	hz := c.MHz * 1e6

	short := startRunClock()
	got, err := short.check()
	require.NoError(t, err)
	assert.Zero(t, got, "a run under 10 ms is not measured")

	for _, tt := range []struct {
		off  float64
		fail bool
	}{{1, false}, {1.0005, false}, {1.01, true}, {0.99, true}} {
		r := startRunClock()
		r.hz = hz * tt.off
		time.Sleep(30 * time.Millisecond)
		got, err := r.check()
		assert.InDelta(t, 1, got/hz, 1e-3, "the run's own frequency")
		if tt.fail {
			assert.True(t, errors.Is(err, ErrClockDrift), "calibration ×%v: %v", tt.off, err)
		} else {
			assert.NoError(t, err, "calibration ×%v", tt.off)
		}
	}
}

// TestSetClockWhileRunning: the clock does not change under a loop.
func TestSetClockWhileRunning(t *testing.T) {
	c, err := SetClock(ClockAuto)
	require.NoError(t, err)
	require.NoError(t, clockEnter())
	again, err := SetClock(ClockAuto)
	assert.NoError(t, err, "the kind in use: the clock as it is")
	assert.Equal(t, c, again)
	_, err = SetClock(ClockMonotonic)
	clockLeave()
	assert.ErrorContains(t, err, "1 loops are running")
}

func TestClockCost(t *testing.T) {
	_, err := ClockCost(0)
	assert.ErrorContains(t, err, "ClockCost(0): want 1 … 1e9 reads")
	t.Cleanup(func() { _, _ = SetClock(ClockAuto) })
	for _, k := range []ClockKind{ClockMonotonic, ClockCounter} {
		if k == ClockCounter && runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
			continue
		}
		_, err := SetClock(k)
		require.NoError(t, err)
		c, err := ClockCost(100000)
		require.NoError(t, err)
		t.Logf("%v: %v a read", k, c)
		assert.Greater(t, c, time.Duration(0))
		assert.Less(t, c, 100*time.Microsecond)
	}
}
