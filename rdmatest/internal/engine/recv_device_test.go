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

// TestBidirDelivery: a UC or UD bidir stream of SEND counts what each
// side received of the other's messages, after the last arrivals
// settle: delivered-msgs/s and lost-msgs/op over the 2n sent, on the
// run's own time, so that delivered ÷ msgs/s is exactly 1 − lost. A
// WRITE stream (no receives) reports neither.
func TestBidirDelivery(t *testing.T) {
	d := Device(t)
	for _, tc := range []struct {
		name string
		s    Spec
		recv bool
	}{
		{"UC SEND", Spec{Op: verbs.OpSend, Transport: verbs.TransportUC, Size: 1024, QD: 32, Signal: 4, Bidir: true}, true},
		{"UD SEND", Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 1024, QD: 32, Signal: 4, Bidir: true}, true},
		{"UC WRITE", Spec{Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 4096, QD: 16, Signal: 4, Bidir: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := testing.Benchmark(func(b *testing.B) { Stream(b, d, tc.s) })
			require.Positive(t, res.N, "the stream ran")
			del, lost, rate := res.Extra["delivered-msgs/s"], res.Extra["lost-msgs/op"], res.Extra["msgs/s"]
			t.Logf("N=%d msgs/s %.0f delivered-msgs/s %.0f lost-msgs/op %.4f", res.N, rate, del, lost)
			if !tc.recv {
				assert.NotContains(t, res.Extra, "delivered-msgs/s")
				return
			}
			require.Contains(t, res.Extra, "lost-msgs/op")
			assert.Positive(t, del)
			assert.True(t, lost >= 0 && lost <= 1, "lost-msgs/op %v", lost)
			assert.InDelta(t, 1-lost, del/rate, 1e-9, "both over the 2n sent and the run's time")
		})
	}
}
