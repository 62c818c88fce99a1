package verbs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The self-check build's dilation stretches the loop's own elapsed time
// by the factor, so that msgs/s and MB/s move by exactly it; times of
// "none" (0) stay none.
func TestDilateResult(t *testing.T) {
	r := LoopResult{Ops: 1000, First: 1_000_000, Last: 3_000_000, RecvFirst: 1_500_000, RecvLast: 2_500_000, Samples: 1000}
	d := DilateResult(r, 1.25)
	assert.Equal(t, 1.25*float64(r.Elapsed()), float64(d.Elapsed()))
	assert.Equal(t, int64(1_625_000), d.RecvFirst)
	assert.Equal(t, int64(2_875_000), d.RecvLast)
	assert.Equal(t, r.Ops, d.Ops)
	assert.Equal(t, r.Samples, d.Samples)
	none := DilateResult(LoopResult{First: 5, Last: 10}, 2)
	assert.Zero(t, none.RecvFirst)
	assert.Zero(t, none.RecvLast)
	assert.Equal(t, int64(15), none.Last)
}
