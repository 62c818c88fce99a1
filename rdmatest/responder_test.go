package rdmatest

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestResponderStopTwice: the loops stop the passive side on their error
// path and again, deferred; the second call must not wait out the
// timeout (it once added 10 s to every benchmark run).
func TestResponderStopTwice(t *testing.T) {
	boom := errors.New("boom")
	r := startResponder(5*time.Second, func(stop *atomic.Bool) error {
		for !stop.Load() {
			time.Sleep(time.Millisecond)
		}
		return boom
	})
	start := time.Now()
	assert.ErrorIs(t, r.Stop(), boom)
	assert.ErrorIs(t, r.Stop(), boom, "the same result again")
	assert.Less(t, time.Since(start), time.Second, "the second Stop returns at once")

	calls := 0
	remote := &responder{stopFn: func() error { calls++; return nil }}
	assert.NoError(t, remote.Stop())
	assert.NoError(t, remote.Stop())
	assert.Equal(t, 1, calls, "a remote role is stopped once")
}
