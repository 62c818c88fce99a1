package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestSettleRecvs: a sink's count is awaited until it reaches want; one
// that stops short ends the wait after 20 ms of quiet on UC and UD, and
// on RC only within slack of want, else at the timeout.
func TestSettleRecvs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		stopAt      int64 // the count stops moving here
		want, slack int64
		rc          bool
		fast        bool // returns well before the timeout
	}{
		{"all arrive", 100, 100, 1, true, true},
		{"UD loses some", 90, 100, 1, false, true},
		{"RC within slack", 99, 100, 1, true, true},
		{"RC short", 90, 100, 1, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The count moves by 10 at each look until it stops: driven by
			// the looks themselves, so no scheduler's delay can pass for
			// the 20 ms of quiet.
			var n int64
			recvs := func() int64 {
				v := n
				n = min(n+10, tc.stopAt)
				return v
			}
			const timeout = 500 * time.Millisecond
			start := time.Now()
			got := settleRecvs(recvs, tc.want, tc.rc, tc.slack, timeout)
			took := time.Since(start)
			assert.Equal(t, tc.stopAt, got)
			if tc.fast {
				assert.Less(t, took, timeout/2)
			} else {
				assert.GreaterOrEqual(t, took, timeout)
			}
		})
	}
}
