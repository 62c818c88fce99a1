package verbs

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// stalls plays rb_stream_post's send-queue accounting for one QP: n
// messages posted in batches of batch (the last one shorter), WR k (from
// 1) signaled when signal divides k; waiting for room completes every
// signaled WR posted (the most a wait can bring) and stalls when that
// leaves no room.
func stalls(qd, batch, signal, n int) bool {
	posted, done := 0, 0
	for left := n; left > 0; {
		k := min(left, batch)
		if posted-done+k > qd {
			done = posted / signal * signal // every signaled WR completed
			if posted-done+k > qd {
				return true
			}
		}
		posted += k
		left -= k
	}
	return false
}

// TestCheckStreamWindow: on random windows (seeded, printed), the check
// accepts exactly those whose stream never waits for room with no
// signaled WR outstanding, over enough messages to reach every place
// the loop can be in.
func TestCheckStreamWindow(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	accepted, refused := 0, 0
	for range 20000 {
		qd := 1 + r.IntN(64)
		batch, signal := 1+r.IntN(qd), 1+r.IntN(qd)
		n := 4*qd*signal + r.IntN(3*batch)
		err := CheckStreamWindow(qd, batch, signal)
		if assert.Equal(t, stalls(qd, batch, signal, n), err != nil, "qd %d, batch %d, signal %d, %d messages: %v", qd, batch, signal, n, err) {
			if err == nil {
				accepted++
			} else {
				refused++
			}
		}
	}
	t.Logf("%d windows accepted, %d refused", accepted, refused)
	assert.Positive(t, refused)
	for _, bad := range [][3]int{{0, 1, 1}, {4, 5, 1}, {4, 1, 5}, {4, 1, 0}} {
		assert.Error(t, CheckStreamWindow(bad[0], bad[1], bad[2]), "%v", bad)
	}
}
