package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// startPeer serves d on a loopback TCP port in this process and returns
// its address; it stops when the test ends.
func startPeer(t *testing.T, d *rdmatest.Dev, token string, lim limits) (string, *server) {
	t.Helper()
	return startServer(t, &rdmaDevice{d: d, timeout: lim.idle}, token, lim)
}

// startServer serves dev on a loopback TCP port in this process and
// returns its address; it stops when the test ends.
func startServer(t *testing.T, dev device, token string, lim limits) (string, *server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := newServer(dev, token, lim)
	s.logf = t.Logf
	go func() { done <- serve(ctx, ln, s) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("serve did not return within 10 s of its end")
		}
	})
	return ln.Addr().String(), s
}

// testToken is the token of the tests' peers.
const testToken = "0123456789abcdef-s3cret"

var testLimits = func() limits {
	l := defaultLimits
	l.idle = time.Minute
	return l
}()

// TestPeerServesEveryRole runs benchmarks against a peer in this process,
// on the same device: the client's QPs and the peer's talk over the
// device exactly as they would across hosts, and the peer releases
// everything after each client.
func TestPeerServesEveryRole(t *testing.T) {
	d := rdmatest.Device(t)
	addr, srv := startPeer(t, d, testToken, testLimits)
	client := *d
	client.Opts.Peer, client.Opts.PeerToken = addr, testToken
	for i, tc := range []struct {
		name      string
		streaming bool
		spec      rdmatest.Spec
	}{
		{"SendLat RC (echo)", false, rdmatest.Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 64}},
		{"SendLat UD (echo)", false, rdmatest.Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64}},
		{"WriteLat RC (write-echo)", false, rdmatest.Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 8}},
		{"ReadLat RC (target)", false, rdmatest.Spec{Op: verbs.OpRead, Transport: verbs.TransportRC, Size: 8}},
		{"AtomicLat RC (target)", false, rdmatest.Spec{Op: verbs.OpFetchAdd, Transport: verbs.TransportRC}},
		{"SendBW RC (sink)", true, rdmatest.Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024, QD: 32, Signal: 4}},
		{"WriteBW UC 2 QPs (target)", true, rdmatest.Spec{Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 4096, QD: 16, QPs: 2, Signal: 4}},
		{"ReadBW RC (target)", true, rdmatest.Spec{Op: verbs.OpRead, Transport: verbs.TransportRC, Size: 4096, QD: 8, Signal: 4}},
		{"AtomicBW RC (target)", true, rdmatest.Spec{Op: verbs.OpCmpSwap, Transport: verbs.TransportRC, QD: 8, Signal: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measure := rdmatest.Latency
			if tc.streaming {
				measure = rdmatest.Stream
			}
			var failed string
			r := testing.Benchmark(func(b *testing.B) {
				defer func() {
					if b.Failed() {
						failed = "the benchmark failed (see its log)"
					}
				}()
				measure(b, &client, tc.spec)
			})
			require.Empty(t, failed)
			require.Positive(t, r.N, "the benchmark ran no iteration")
			assert.Positive(t, r.Extra["msgs/s"])
			assert.Positive(t, r.Extra["p50-ns"])
			t.Logf("%s: %d iterations, %.0f msgs/s, p50 %.0f ns", tc.name, r.N, r.Extra["msgs/s"], r.Extra["p50-ns"])
			waitReleased(t, d)
			waitSessions(t, srv, int64(i+1))
			assert.Zero(t, srv.failed.Load(), "a session ended with an error (see the peer's log)")
		})
	}
}

// waitReleased waits until the peer has closed every object it made for
// its clients: only the device context itself is left.
func waitReleased(t *testing.T, d *rdmatest.Dev) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		for _, o := range verbs.Live() {
			if o.Kind != verbs.KindDevice {
				left = append(left, o.String())
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("objects still open after the client left: %s", strings.Join(left, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSessions waits until n sessions have ended.
func waitSessions(t *testing.T, srv *server, n int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for srv.ok.Load()+srv.failed.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions ended, want %d", srv.ok.Load()+srv.failed.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPeerRefuses: on a device, a request beyond the peer's limits and a
// client that vanishes mid-scenario get clear answers, and the peer goes
// on serving (the hostile-client tests without a device are in
// hostile_test.go).
func TestPeerRefuses(t *testing.T) {
	d := rdmatest.Device(t)
	lim := testLimits
	lim.client.QPs, lim.client.Mem = 2, 1<<20
	addr, srv := startPeer(t, d, testToken, lim)
	setup := func(qps, slot int) (net.Conn, error) {
		c := dialAuth(t, addr, testToken)
		req := targetSetup(qps, slot)
		require.NoError(t, oob.WriteFrame(c, oob.MsgSetup, req))
		var ok oob.SetupOK
		return c, oob.Decode(c, oob.MsgSetupOK, &ok)
	}
	_, err := setup(3, 64)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "qps 3 exceeds this peer's limit 2 per client (-max-qps)")
	_, err = setup(2, 1<<20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds this peer's limit 1048576 per client (-max-mem)")

	// A client that sets up and vanishes: the peer releases its side.
	c, err := setup(1, 64)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	waitReleased(t, d)

	waitSessions(t, srv, 3)
	assert.Equal(t, int64(3), srv.failed.Load(), "qps, memory and the vanished client")

	// Still serving.
	c, err = setup(1, 64)
	require.NoError(t, err)
	c.Close()
}
