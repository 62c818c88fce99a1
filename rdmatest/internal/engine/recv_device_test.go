package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestRecvBandwidth: a SEND stream reports recv-MB/s, the receiver's
// bandwidth over the passive loop's own interval, on every transport. A
// closed-loop stream's receiver interval lies inside the sender's (the
// first receive follows the first post, the last precedes the last send
// completion on RC), so its figure is near MB/s; at an offered load its
// interval starts at the measured stream's first receive, not at the
// peak run's before it (the mark), so it is near the offered rate, far
// above what the peak run's receives would make of it.
func TestRecvBandwidth(t *testing.T) {
	d := Device(t)
	for _, tc := range []struct {
		name string
		s    Spec
	}{
		{"RC", Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024, QD: 64}},
		{"UC", Spec{Op: verbs.OpSend, Transport: verbs.TransportUC, Size: 1024, QD: 64}},
		{"UD", Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 1024, QD: 64}},
		{"RC at half the peak rate", Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024, QD: 64, Load: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := testing.Benchmark(func(b *testing.B) { Stream(b, d, tc.s) })
			require.Positive(t, res.N, "the stream ran")
			recv, sent := res.Extra["recv-MB/s"], res.Extra["MB/s"]
			t.Logf("N=%d recv-MB/s %.2f MB/s %.2f offered-msgs/s %.0f", res.N, recv, sent, res.Extra["offered-msgs/s"])
			require.Positive(t, recv, "recv-MB/s reported")
			if tc.s.Load == 0 {
				assert.InDelta(t, 1, recv/sent, 0.25, "the receiver's interval lies inside the sender's")
				return
			}
			offered := res.Extra["offered-msgs/s"] * float64(tc.s.Size) / 1e6
			assert.InDelta(t, 1, recv/offered, 0.25, "received at the offered rate, timed from this stream's first receive")
		})
	}
}
