package engine

// Faults over a real wire: these tests need a remote peer (-rdma.peer) on
// another host and, to change the wire, RDMA_WIRE_FAULTS=1 and
// RDMA_NETDEV (they put netem on that interface or take it down, as
// root). make test runs them in its two-host pass (ci/twohost.sh), where
// the "hosts" are two qemu guests.

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/counters"
	"github.com/rdmabench/rdmabench/verbs"
)

// peerDevice opens the device for a test that needs a remote peer.
func peerDevice(t *testing.T) *Dev {
	t.Helper()
	d := Device(t)
	if d.Opts.Peer == "" {
		t.Skip("needs a remote peer (-rdma.peer host:port); make test runs it in its two-host pass")
	}
	return d
}

// wire returns the interface the tests may break, or skips.
func wire(t *testing.T) string {
	t.Helper()
	dev := os.Getenv("RDMA_NETDEV")
	if os.Getenv("RDMA_WIRE_FAULTS") != "1" || dev == "" {
		t.Skip("changes the network: set RDMA_WIRE_FAULTS=1 and RDMA_NETDEV (make test's two-host pass does, inside its guests)")
	}
	return dev
}

func run(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
}

// netem puts a netem qdisc with the given parameters on the wire's egress
// until the test ends.
func netem(t *testing.T, params ...string) {
	t.Helper()
	dev := wire(t)
	run(t, append([]string{"tc", "qdisc", "replace", "dev", dev, "root", "netem"}, params...)...)
	t.Cleanup(func() { exec.Command("tc", "qdisc", "del", "dev", dev, "root").Run() })
}

// echoPair connects a SEND echo with the peer: every message comes back
// with the bytes the peer received.
func echoPair(t *testing.T, d *Dev, size int) (*Pair, *Spec) {
	t.Helper()
	s := Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: size}
	s.defaults()
	s.Kind = KindLatency
	require.NoError(t, s.Check(d))
	p := NewPair(t, d, s.pairConfig())
	require.NotNil(t, p.remote, "the pair must use the remote peer")
	return p, &s
}

// pingVerified sends n messages through the echo, each with its own
// pattern, and checks every answer byte for byte. It returns the half
// round trips. It is a functional check over a faulty wire, not a
// measurement: one signaled SEND and one receive at a time, through the
// Go verbs API.
func pingVerified(t *testing.T, p *Pair, s *Spec, n int) []time.Duration {
	t.Helper()
	require.NoError(t, p.remote.Start())
	a := p.A
	out, in := a.OutBytes(0)[:s.Size], a.InBytes(0)[:s.Size]
	wr := sendWR(s, a, 0)
	recv := verbs.RecvWR{NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{a.In(0, recvBytes(s))}}
	poll := NewPoller(a, 4, p.Dev.Opts.Timeout)
	var rtts []time.Duration
	for k := range n {
		for i := range out {
			out[i] = byte(k*131 + i*7)
		}
		require.NoError(t, a.QPs[0].PostRecv([]verbs.RecvWR{recv}), "message %d", k)
		t0 := time.Now()
		require.NoError(t, a.QPs[0].PostSend([]verbs.SendWR{wr}), "message %d", k)
		for got := 0; got < 2; {
			wcs, err := poll.Wait("the echo of message "+fmt.Sprint(k), 2-got)
			require.NoError(t, err, "message %d", k)
			got += len(wcs)
		}
		rtts = append(rtts, time.Since(t0)/2)
		if !bytes.Equal(in, out) {
			t.Fatalf("message %d: the echo differs from what was sent (first bytes %x, want %x)", k, in[:8], out[:8])
		}
	}
	require.NoError(t, p.remote.Stop())
	return rtts
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// retransmissions sums the counters that count the requester's retries
// and the sequence errors that trigger them.
func retransmissions(c counters.Values) (uint64, string) {
	var sum uint64
	var parts []string
	for name, v := range c {
		if strings.Contains(name, "retry") || strings.Contains(name, "seq_err") || strings.Contains(name, "out_of_seq") || strings.Contains(name, "duplicate") {
			sum += v
			parts = append(parts, fmt.Sprintf("%s=%d", name, v))
		}
	}
	sort.Strings(parts)
	return sum, strings.Join(parts, " ")
}

// TestWireLossVerified: with packets lost on the wire, RC still delivers
// every payload intact (the requester retransmits), and the port counters
// show the retransmissions.
func TestWireLossVerified(t *testing.T) {
	d := peerDevice(t)
	for _, loss := range []string{"1%", "10%"} {
		t.Run("loss="+loss, func(t *testing.T) {
			netem(t, "loss", loss)
			p, s := echoPair(t, d, 4096) // 4 packets a message at MTU 1024
			before, err := counters.Read(d.Name(), d.PortNum)
			require.NoError(t, err)
			pingVerified(t, p, s, 200)
			after, err := counters.Read(d.Name(), d.PortNum)
			require.NoError(t, err)
			delta, err := counters.Delta(before, after)
			require.NoError(t, err)
			n, which := retransmissions(delta)
			t.Logf("loss %s: 200 messages of 4096 B verified; retransmission counters: %s", loss, which)
			if loss == "10%" {
				assert.Positive(t, n, "10%% loss must cause retransmissions: %v", delta)
			}
		})
	}
}

// TestWireDelay measures how an added one-way delay shifts the reported
// latency (half the round trip): netem on this side's egress delays only
// the requests, so the round trip grows by the delay and the reported
// half round trip by half of it, plus whatever the delay does to the
// transport (see the README's "Latency and an added delay"). Between two
// TCG guests the median half round trip moves by about a millisecond from
// run to run, so the 1 ms case is only reported; the 20 ms case must show.
func TestWireDelay(t *testing.T) {
	d := peerDevice(t)
	dev := wire(t)
	measure := func(delay string) time.Duration {
		if delay != "" {
			run(t, "tc", "qdisc", "replace", "dev", dev, "root", "netem", "delay", delay)
			defer exec.Command("tc", "qdisc", "del", "dev", dev, "root").Run()
		}
		p, s := echoPair(t, d, 8)
		return median(pingVerified(t, p, s, 100))
	}
	base := measure("")
	one := measure("1ms")
	twenty := measure("20ms")
	t.Logf("median half round trip: %v without delay; with netem delay on the requester's egress: 1 ms → %v (%+v), 20 ms → %v (%+v); a plain delay would add half of it",
		base, one, one-base, twenty, twenty-base)
	assert.GreaterOrEqual(t, twenty-base, 8*time.Millisecond, "a 20 ms one-way delay must add about 10 ms to the half round trip")
}

// TestWireLinkDown: the wire goes down in the middle of a run; the
// requester gets a clear error within the deadline, and nothing leaks
// (Device's leak check).
func TestWireLinkDown(t *testing.T) {
	d := peerDevice(t)
	dev := wire(t)
	p, ping := runningEcho(t, d)
	run(t, "ip", "link", "set", "dev", dev, "down")
	t.Cleanup(func() {
		run(t, "ip", "link", "set", "dev", dev, "up")
		waitPortActive(t, d)
	})
	err := pingUntilError(t, p, ping, "the wire is down")
	// rxe fails the QP at once when its netdev goes down (seen: "local QP
	// operation error"); a NIC whose link drops on the far side exhausts
	// its retries instead (RETRY_EXC_ERR). Either is a completion error;
	// otherwise the deadline must have fired.
	var wc *verbs.WCError
	if errors.As(err, &wc) {
		assert.NotEqual(t, verbs.WCSuccess, wc.Status)
	} else {
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "without a completion error, the deadline must have fired")
	}
}

// TestWirePeerKilled: the peer process dies in the middle of a run
// (ci/twohost.sh kills it when asked through the shared directory); the
// requester gets a clear error within the deadline, and nothing leaks.
func TestWirePeerKilled(t *testing.T) {
	d := peerDevice(t)
	wire(t)
	flag := os.Getenv("RDMA_PEER_KILL_FILE")
	if flag == "" {
		t.Skip("needs RDMA_PEER_KILL_FILE: a file whose creation makes the peer's host kill the peer (ci/twohost.sh)")
	}
	p, ping := runningEcho(t, d)
	require.NoError(t, os.WriteFile(flag, nil, 0o644))
	pingUntilError(t, p, ping, "the peer is dead")
	p.remote.Close() // the peer is gone: nothing to stop
}

// runningEcho starts a SEND echo with the peer and checks that 20 round
// trips go through (the C ping loop's untimed warm-up); the test then
// breaks something and runs the loop, which pings on.
func runningEcho(t *testing.T, d *Dev) (*Pair, *verbs.Loop) {
	t.Helper()
	p, s := echoPair(t, d, 64)
	require.NoError(t, p.remote.Start())
	ping, err := newPing(p, s, 1<<40, p.Dev.Opts.Timeout)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, ping.Close()) })
	require.NoError(t, ping.Warm(20))
	return p, ping
}

// pingUntilError runs the ping loop after a fault (why names it),
// requires that it fails within the deadline, and returns the error.
func pingUntilError(t *testing.T, p *Pair, ping *verbs.Loop, why string) error {
	t.Helper()
	start := time.Now()
	_, err := readyLoop(ping, -1).result()
	took := time.Since(start)
	require.Error(t, err, "%s: the run must fail", why)
	t.Logf("after %v: %v", took.Round(time.Millisecond), err)
	assert.Less(t, took, p.Dev.Opts.Timeout+5*time.Second, "the error must come within the deadline")
	return err
}

// waitPortActive waits until the device's port is ACTIVE again.
func waitPortActive(t *testing.T, d *Dev) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pa, err := d.Device.Port(d.PortNum)
		if err == nil && pa.State == verbs.PortActive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("port %d of %s did not come back: %v %v", d.PortNum, d.Name(), pa.State, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
