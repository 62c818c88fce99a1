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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := &server{dev: d, token: token, lim: lim}
	go func() { done <- serve(ctx, ln, s) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return ln.Addr().String(), s
}

var testLimits = limits{clients: 4, qps: 16, mem: 64 << 20, idle: time.Minute}

// TestPeerServesEveryRole runs benchmarks against a peer in this process,
// on the same device: the client's QPs and the peer's talk over the
// device exactly as they would across hosts, and the peer releases
// everything after each client.
func TestPeerServesEveryRole(t *testing.T) {
	d := rdmatest.Device(t)
	addr, srv := startPeer(t, d, "s3cret", testLimits)
	client := *d
	client.Opts.Peer, client.Opts.PeerToken = addr, "s3cret"
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

// TestPeerRefuses: a wrong token, requests beyond the peer's limits and a
// client that vanishes mid-scenario get clear answers, and the peer goes
// on serving.
func TestPeerRefuses(t *testing.T) {
	d := rdmatest.Device(t)
	addr, srv := startPeer(t, d, "s3cret", limits{clients: 4, qps: 2, mem: 1 << 20, idle: time.Minute})
	hello := func(token string) (net.Conn, error) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(10 * time.Second))
		require.NoError(t, oob.WriteFrame(c, oob.MsgHello, &oob.Hello{Version: oob.Version, Token: token}))
		var ok oob.HelloOK
		return c, oob.Decode(c, oob.MsgHelloOK, &ok)
	}
	_, err := hello("guess")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "token mismatch")

	setup := func(qps, slot int) (net.Conn, error) {
		c, err := hello("s3cret")
		require.NoError(t, err)
		req := &oob.Setup{Scenario: oob.Scenario{Op: "RDMA_WRITE", Transport: "RC", Role: "target", Size: 64, QPs: qps, SendDepth: 4, RecvDepth: 1, SlotSize: slot}, MTU: 1024}
		for i := range qps {
			req.Endpoints = append(req.Endpoints, oob.Endpoint{QPN: uint32(0x100 + i), GID: "::ffff:192.0.2.1"})
			req.Targets = append(req.Targets, oob.Target{Addr: 0x1000, RKey: 1})
		}
		require.NoError(t, oob.WriteFrame(c, oob.MsgSetup, req))
		var ok oob.SetupOK
		return c, oob.Decode(c, oob.MsgSetupOK, &ok)
	}
	_, err = setup(3, 64)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "qps 3 exceeds this peer's limit 2 (-max-qps)")
	_, err = setup(2, 1<<20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds this peer's limit 1048576 (-max-mem)")

	// A client that sets up and vanishes: the peer releases its side.
	c, err := setup(1, 64)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	waitReleased(t, d)

	waitSessions(t, srv, 4)
	assert.Equal(t, int64(4), srv.failed.Load(), "token, qps, memory and the vanished client")

	// Still serving.
	_, err = hello("s3cret")
	assert.NoError(t, err)
}
