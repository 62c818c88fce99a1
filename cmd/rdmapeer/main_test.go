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
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
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
		spec      scenario.Spec
		rpc       bool // EchoRPC
	}{
		{"SendLat RC (echo)", false, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 64}, false},
		{"SendLat UD (echo)", false, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64}, false},
		{"WriteLat RC (write-echo)", false, scenario.Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 8}, false},
		{"ReadLat RC (target)", false, scenario.Spec{Op: verbs.OpRead, Transport: verbs.TransportRC, Size: 8}, false},
		{"AtomicLat RC (target)", false, scenario.Spec{Op: verbs.OpFetchAdd, Transport: verbs.TransportRC}, false},
		{"SendBW RC (sink)", true, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024, QD: 32, Signal: 4}, false},
		{"SendBW UD (sink)", true, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 1024, QD: 32, Signal: 4}, false},
		{"WriteBW RC bidir (stream back)", true, scenario.Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 4096, QD: 16, Signal: 4, Bidir: true}, false},
		{"SendBW RC bidir (stream back)", true, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024, QD: 32, Signal: 4, Bidir: true}, false},
		{"WriteBW UC bidir (stream back)", true, scenario.Spec{Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 4096, QD: 16, Signal: 4, Bidir: true}, false},
		{"SendBW UD bidir (stream back)", true, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 1024, QD: 32, Signal: 4, Bidir: true}, false},
		{"InboundSend RC side=responder (sink)", true, scenario.Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 64, QD: 32, Signal: 4, Inbound: true}, false},
		{"WriteBW UC 2 QPs (target)", true, scenario.Spec{Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 4096, QD: 16, QPs: 2, Signal: 4}, false},
		{"ReadBW RC (target)", true, scenario.Spec{Op: verbs.OpRead, Transport: verbs.TransportRC, Size: 4096, QD: 8, Signal: 4}, false},
		{"AtomicBW RC (target)", true, scenario.Spec{Op: verbs.OpCmpSwap, Transport: verbs.TransportRC, QD: 8, Signal: 4}, false},
		{"EchoRPC RC write (write-rpc)", false, scenario.Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 32, QD: 4}, true},
		{"EchoRPC UC write inline (write-rpc)", false, scenario.Spec{Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 100, QD: 8, Inline: true}, true},
		{"EchoRPC UD send (echo)", false, scenario.Spec{Op: verbs.OpSendImm, Transport: verbs.TransportUD, Size: 32, QD: 4}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			measure := scenario.Latency
			switch {
			case tc.streaming:
				measure = scenario.Stream
			case tc.rpc:
				measure = scenario.EchoRPC
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
			// The timed region's wall-clock span, as a fabric agent sends
			// it: around the testing timer's, and not much more.
			start, end, ok := client.LastRegion()
			require.True(t, ok, "no timed region recorded")
			assert.GreaterOrEqual(t, end.Sub(start), r.T, "the region holds the timed run")
			assert.Less(t, end.Sub(start), r.T+time.Second, "the region is the timed run, not the setup")
			assert.Positive(t, r.Extra["msgs/s"])
			assert.Positive(t, r.Extra["p50-ns"])
			if tc.spec.Bidir {
				assert.Positive(t, r.Extra["start-skew-ns"], "the start skew's bound is reported")
				assert.Positive(t, r.Extra["MB/s"])
			}
			if tc.streaming && tc.spec.Transport == verbs.TransportUD {
				// The peer's sink counts what arrived (Stop's Received), as
				// a local sink does: delivered and lost are reported.
				assert.Positive(t, r.Extra["delivered-msgs/s"], "delivered-msgs/s against a peer")
				assert.Contains(t, r.Extra, "lost-msgs/op")
				assert.LessOrEqual(t, r.Extra["lost-msgs/op"], 1.0)
			}
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
		req := onDevice(d, targetSetup(qps, slot))
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

// onDevice gives req's endpoints the device's own GID, so that its QPs
// connect on any device (the QPNs stay made up: nothing is sent).
func onDevice(d *rdmatest.Dev, req *oob.Setup) *oob.Setup {
	for i := range req.Endpoints {
		req.Endpoints[i].GID = net.IP(d.GIDEntry.GID[:]).String()
	}
	return req
}

// TestPeerHostileOnDevice: the hostile Setups of issue #15 against the
// real device are refused before anything is created, and a good session
// follows.
func TestPeerHostileOnDevice(t *testing.T) {
	d := rdmatest.Device(t)
	addr, srv := startPeer(t, d, testToken, testLimits)
	for _, tc := range []struct {
		name string
		mod  func(*oob.Setup)
		want string
	}{
		{"write-echo size 0", func(r *oob.Setup) { r.Scenario.Size = 0 }, "message size 0 must be at least 1 byte"},
		{"size larger than the slot", func(r *oob.Setup) { r.Scenario.Size = 65 }, "slot_size 64 is smaller than the message size 65"},
		{"role for another verb", func(r *oob.Setup) { r.Scenario.Op = "SEND" }, `role "write-echo" does not serve SEND`},
		{"inline over the device's", func(r *oob.Setup) { r.Scenario.Inline = 1 << 12 }, "max_inline_data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := onDevice(d, writeEchoSetup())
			tc.mod(req)
			err := setup(dialAuth(t, addr, testToken), req)
			var pe *oob.PeerError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, err.Error(), tc.want)
			waitReleased(t, d)
		})
	}
	c := dialAuth(t, addr, testToken)
	require.NoError(t, setup(c, onDevice(d, writeEchoSetup())))
	require.NoError(t, oob.WriteFrame(c, oob.MsgStart, &oob.Start{}))
	require.NoError(t, oob.Decode(c, oob.MsgStarted, &oob.Started{}))
	require.NoError(t, oob.WriteFrame(c, oob.MsgStop, &oob.Stop{}))
	require.NoError(t, oob.Decode(c, oob.MsgStopped, &oob.Stopped{}))
	c.Close()
	waitReleased(t, d)
	assert.Zero(t, srv.panics.Load())
}

// TestPeerShutdownOnDevice: the peer's shutdown (SIGTERM) with a session
// running on the device: its QPs go to the error state, the client is
// told, and everything is released within seconds.
func TestPeerShutdownOnDevice(t *testing.T) {
	d := rdmatest.Device(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newServer(&rdmaDevice{d: d, timeout: testLimits.idle}, testToken, testLimits)
	srv.logf = t.Logf
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, srv) }()
	c := dialAuth(t, ln.Addr().String(), testToken)
	require.NoError(t, setup(c, onDevice(d, writeEchoSetup())))
	require.NoError(t, oob.WriteFrame(c, oob.MsgStart, &oob.Start{}))
	require.NoError(t, oob.Decode(c, oob.MsgStarted, &oob.Started{}))

	t0 := time.Now()
	cancel()
	err = oob.Decode(c, oob.MsgStopped, &oob.Stopped{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the peer is shutting down")
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not return within 30 s of the shutdown")
	}
	t.Logf("shutdown took %v", time.Since(t0))
	assert.Less(t, time.Since(t0), 10*time.Second)
	waitReleased(t, d)
}

// TestAgentRunEndsOnDevice: an agent's Run is ended inside its loop —
// the stop flag, raised through the run's context — by each of the three
// things that end it early, each timed: -run-timeout, the client leaving
// and the agent's shutdown (SIGTERM). The scenario, WriteLatGap with a
// 1 s gap and 100000 iterations, would otherwise run for a day (before
// the context reached the loops, a 5 s -run-timeout Run of it ended
// after 16.3 s, a dropped client held the agent busy 15.7 s more, and a
// SIGTERM took 25.3 s). The agent and the peer it sends to are one
// server in this process, on one device (the destination is
// "localhost", in the agent's node list).
func TestAgentRunEndsOnDevice(t *testing.T) {
	d := rdmatest.Device(t)
	run := &oob.Run{Dst: "localhost", Scenario: "WriteLatGap/size=8/gap=1s", Runs: 1, Iters: 100000}
	for _, tc := range []struct {
		name    string
		timeout time.Duration // -run-timeout
		end     func(c net.Conn, shutdown context.CancelFunc)
		within  time.Duration // of the end (without one: of the Run's start)
	}{
		{"run-timeout", 3 * time.Second, nil, 5 * time.Second},
		{"client leaves", time.Minute, func(c net.Conn, _ context.CancelFunc) { c.Close() }, time.Second},
		{"shutdown", time.Minute, func(_ net.Conn, shutdown context.CancelFunc) { shutdown() }, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, srv, cancel, done := serveAgentOnDevice(t, d, tc.timeout)
			defer cancel()
			c := dialAuth(t, addr, testToken)
			defer c.Close()
			require.NoError(t, oob.WriteFrame(c, oob.MsgRun, run))
			t0 := time.Now()
			if tc.end != nil {
				time.Sleep(2 * time.Second) // inside the loop by then: the set-up takes well under a second
				t0 = time.Now()
				tc.end(c, cancel)
			}
			// The end of the Run: the agent is free again (or, at a
			// shutdown, the server has returned).
			served := tc.name == "shutdown"
			if served {
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(30 * time.Second):
					t.Fatal("serve did not return within 30 s of the shutdown")
				}
			} else {
				if tc.end == nil {
					err := oob.Decode(c, oob.MsgRunDone, &oob.RunDone{})
					var pe *oob.PeerError
					require.ErrorAs(t, err, &pe)
					assert.Contains(t, pe.Msg, "not done within -run-timeout")
				}
				for !srv.agent.busy.TryLock() {
					require.Less(t, time.Since(t0), 30*time.Second, "the agent is still busy")
					time.Sleep(10 * time.Millisecond)
				}
				srv.agent.busy.Unlock()
			}
			took := time.Since(t0)
			t.Logf("%s: the Run ended %v after %s", tc.name, took, map[bool]string{true: "it began", false: "its end"}[tc.end == nil])
			assert.Less(t, took, tc.within)
			cancel()
			if !served {
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("serve did not return within 30 s of its end")
				}
			}
			waitReleased(t, d)
		})
	}
}

// serveAgentOnDevice serves d in this process, on a loopback port, as a
// peer that is also node1's agent, runs bounded by runTimeout; its node
// list names "localhost", the same server, as the destination. It
// returns the address, the server, the cancel that shuts it down and
// the channel serve's result arrives on.
func serveAgentOnDevice(t *testing.T, d *rdmatest.Dev, runTimeout time.Duration) (string, *server, context.CancelFunc, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newServer(&rdmaDevice{d: d, timeout: testLimits.idle}, testToken, testLimits)
	srv.logf = t.Logf
	port := ln.Addr().(*net.TCPAddr).Port
	srv.agent = newAgent("node1", []string{"node1", "localhost"}, port, runTimeout, testLimits.client.Mem,
		&rdmaMeasurer{d: d, opts: d.Opts, token: testToken})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, srv) }()
	return ln.Addr().String(), srv, cancel, done
}

// TestAgentRunsBidirOnDevice: a fabric agent runs bidir scenarios
// against a peer (issue #46: bidir as a fabric scenario), and each
// result carries its timed region on the agent's clock, inside the
// Run's wall time (issue #47: the coordinator places runs by it). The
// agent and the peer are one server in this process, on one device.
func TestAgentRunsBidirOnDevice(t *testing.T) {
	d := rdmatest.Device(t)
	addr, _, cancel, done := serveAgentOnDevice(t, d, time.Minute)
	defer func() {
		cancel()
		<-done
	}()
	for _, tc := range []struct {
		scenario string
		udp      bool // UD: delivered counts
	}{
		{"WriteBW/transport=RC/size=4096/qd=16/bidir=true", false},
		{"SendBW/transport=UD/size=1024/qd=32/bidir=true", true},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t1 := time.Now()
			res, _, err := agentCall(t, addr, oob.MsgRun, &oob.Run{Dst: "localhost", Scenario: tc.scenario, Runs: 2, Iters: 2000})
			t3 := time.Now()
			require.NoError(t, err)
			require.Len(t, res, 2)
			for i, r := range res {
				assert.Positive(t, r.Values["MB/s"], "run %d", i)
				assert.Positive(t, r.Values["start-skew-ns"], "run %d: the peer's stream back was started", i)
				if tc.udp {
					assert.Contains(t, r.Values, "lost-msgs/op", "run %d", i)
				}
				require.NotZero(t, r.Start, "run %d: no timed region", i)
				assert.GreaterOrEqual(t, r.Start, t1.UnixNano(), "run %d", i)
				assert.LessOrEqual(t, r.End, t3.UnixNano(), "run %d", i)
				assert.GreaterOrEqual(t, float64(r.End-r.Start), r.Values["ns/op"]*float64(r.Iters), "run %d: the region holds the timed run", i)
			}
			assert.Greater(t, res[1].Start, res[0].End, "the runs one after the other")
			waitReleased(t, d)
		})
	}
}

// TestPeerCMClientLeavesOnDevice: an rdma_cm session whose client leaves
// before it connects — after SetupOK, or after Start while the peer
// waits for its connections — is released within seconds, its slot and
// budget given back, instead of holding them for -idle (a minute here)
// while the accept waits out its deadline without reading the
// connection (issue #46).
func TestPeerCMClientLeavesOnDevice(t *testing.T) {
	d := rdmatest.Device(t)
	for _, tc := range []struct {
		name  string
		start bool
	}{
		{"before Start", false},
		{"during Start", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, srv := startPeer(t, d, testToken, testLimits)
			c := dialAuth(t, addr, testToken)
			req := onDevice(d, writeEchoSetup())
			req.CM = true
			require.NoError(t, setup(c, req))
			if tc.start {
				require.NoError(t, oob.WriteFrame(c, oob.MsgStart, &oob.Start{}))
				time.Sleep(500 * time.Millisecond) // the peer waits in the accept by then
			}
			t0 := time.Now()
			require.NoError(t, c.Close())
			for srv.pool.inUse() != (budget{}) || srv.failed.Load() == 0 {
				require.Less(t, time.Since(t0), 30*time.Second, "the session still holds its budget")
				time.Sleep(10 * time.Millisecond)
			}
			took := time.Since(t0)
			t.Logf("released %v after the client left", took)
			assert.Less(t, took, 2*time.Second)
			waitReleased(t, d)
		})
	}
}
