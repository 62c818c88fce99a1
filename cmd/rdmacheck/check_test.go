package main

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// syncBuffer is a bytes.Buffer safe for the far end's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testConfig() config {
	return config{port: 0, ibPort: 1, gidIndex: -1, timeout: 300 * time.Millisecond, n: 20, size: 64}
}

// startFar runs a far end on 127.0.0.1 (an OS-chosen port) until the
// test ends; it returns the port, its output and a function that stops
// it and returns runFar's error.
func startFar(t *testing.T, h Host, c config) (int, *syncBuffer, func() error) {
	t.Helper()
	out := &syncBuffer{}
	stop := make(chan struct{})
	addrs := make(chan net.Addr, 1)
	done := make(chan error, 1)
	c.listen = true
	go func() { done <- runFar(h, c, out, stop, func(a net.Addr) { addrs <- a }) }()
	var port int
	select {
	case a := <-addrs:
		port = a.(*net.TCPAddr).Port
	case err := <-done:
		t.Fatalf("the far end did not start: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the far end did not start within 5 s")
	}
	var once sync.Once
	var ferr error
	halt := func() error {
		once.Do(func() {
			close(stop)
			select {
			case ferr = <-done:
			case <-time.After(10 * time.Second):
				ferr = errors.New("the far end did not stop within 10 s")
			}
		})
		return ferr
	}
	t.Cleanup(func() { _ = halt() })
	return port, out, halt
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestSteps(t *testing.T) {
	allOK := []string{
		"ok   device and port: rxe0 port 1 ACTIVE (physical state LinkUp), Ethernet on netdev eth0, MTU 1024, 2.5 Gb/s x1",
		"ok   gid: index 3 ::ffff:192.0.2.1 RoCE v2 on netdev eth0 (the best, as the benchmarks pick it; -x to choose)",
		"ok   control channel: TCP to 127.0.0.1:",
		"far end rxe0 port 1, GID index 3 ::ffff:192.0.2.2 RoCE v2",
		"ok   udp 4791: a RoCE v2 datagram (UD SEND, 64 B, 1 sent) reached the far end's UD QP",
		"ok   rdma_cm connect: RC QP 0x", "connected to the far end's QP 0x", "through rdma_cm at 127.0.0.1:1 in",
		"ok   ping-pong: 20 × 64 B SEND/RECV round trips, every payload checked on both ends; round trip min",
		"(a bring-up figure, not a benchmark)",
		"ok   disconnect: disconnected; every verbs object released here (verbs.Live: 0 open) and at the far end (0 open)",
	}
	tests := []struct {
		name  string
		setup func(fab *fakeFabric, near, far *fakeHost, nc, fc *config)
		step  string   // the failed step; "" = every step ok
		want  []string // substrings of the near end's output
		far   []string // substrings of the far end's output
	}{
		{
			name: "all good",
			want: allOK,
			far:  []string{"ok   control channel: hello from", "ok   udp 4791: a RoCE v2 datagram from", "ok   ping-pong: 20 × 64 B pings checked and answered", "ok   disconnect:", "session done"},
		},
		{
			name: "port down",
			setup: func(_ *fakeFabric, near, _ *fakeHost, _, _ *config) {
				near.port.State, near.port.PhysState, near.port.NetdevState = verbs.PortDown, "Disabled", "down"
			},
			step: stepPort,
			want: []string{"FAIL device and port: rxe0 port 1 is DOWN (physical state Disabled) — the link under it is down: netdev eth0 is down (ip link set eth0 up), or its cable or switch port"},
		},
		{
			name: "port polling: no link partner",
			setup: func(_ *fakeFabric, near, _ *fakeHost, _, _ *config) {
				near.port.State, near.port.PhysState = verbs.PortDown, "Polling"
			},
			step: stepPort,
			want: []string{"FAIL device and port: rxe0 port 1 is DOWN (physical state Polling) — no link partner: netdev eth0 is up; a cable unplugged or the switch port down"},
		},
		{
			name: "InfiniBand port without a subnet manager",
			setup: func(_ *fakeFabric, near, _ *fakeHost, _, _ *config) {
				near.port.State, near.port.PhysState, near.port.LinkLayer, near.port.Netdev = verbs.PortInit, "LinkUp", verbs.LinkLayerInfiniBand, ""
			},
			step: stepPort,
			want: []string{"FAIL device and port: rxe0 port 1 is INIT (physical state LinkUp) — the link is up but no subnet manager configured the port: start opensm"},
		},
		{
			name: "no device",
			setup: func(_ *fakeFabric, near, _ *fakeHost, _, _ *config) {
				near.devs = nil
			},
			step: stepPort,
			want: []string{"FAIL device and port: no RDMA device — no driver loaded"},
		},
		{
			name: "two devices, none chosen",
			setup: func(_ *fakeFabric, near, _ *fakeHost, _, _ *config) {
				near.devs = []string{"mlx5_0", "mlx5_1"}
			},
			step: stepPort,
			want: []string{"FAIL device and port: 2 RDMA devices (mlx5_0, mlx5_1) — choose one with -d or RDMA_DEVICE"},
		},
		{
			name: "unknown device",
			setup: func(_ *fakeFabric, _, _ *fakeHost, nc, _ *config) {
				nc.dev = "mlx5_9"
			},
			step: stepPort,
			want: []string{`FAIL device and port: no RDMA device "mlx5_9"; there is rxe0 — a wrong -d or RDMA_DEVICE`},
		},
		{
			name: "port number beyond the device",
			setup: func(_ *fakeFabric, _, _ *fakeHost, nc, _ *config) {
				nc.ibPort = 2
			},
			step: stepPort,
			want: []string{"FAIL device and port: port 2 requested (-i) but rxe0 has 1 port(s) — a wrong -i"},
		},
		{
			name: "wrong GID index",
			setup: func(_ *fakeFabric, _, _ *fakeHost, nc, _ *config) {
				nc.gidIndex = 7
			},
			step: stepGID,
			want: []string{"FAIL gid: GID index 7 of rxe0 port 1 is empty; set entries: 0 (fe80::5054:ff:fe00:201, RoCE v1), 1 (fe80::5054:ff:fe00:201, RoCE v2), 2 (::ffff:192.0.2.1, RoCE v1), 3 (::ffff:192.0.2.1, RoCE v2) — a wrong GID index"},
		},
		{
			name: "GID index beyond the table",
			setup: func(_ *fakeFabric, near, _ *fakeHost, nc, _ *config) {
				near.port.GIDTableLen, nc.gidIndex = 16, 200
			},
			step: stepGID,
			want: []string{"FAIL gid: GID index 200 is beyond the 16 entries of rxe0 port 1's GID table; set entries: 0 (fe80::5054:ff:fe00:201, RoCE v1)"},
		},
		{
			name: "no GID at all",
			setup: func(_ *fakeFabric, near, _ *fakeHost, _, _ *config) {
				near.gids = nil
			},
			step: stepGID,
			want: []string{"FAIL gid: rxe0 port 1 has no set GID entries — the port has no GID: on RoCE the netdev under it has no address (ip addr add … dev eth0)"},
		},
		{
			name: "nothing listens",
			setup: func(_ *fakeFabric, _, _ *fakeHost, nc, _ *config) {
				nc.port = closedPort(t)
			},
			step: stepControl,
			want: []string{"FAIL control channel: TCP to 127.0.0.1:", " was refused — nothing listens there: start rdmacheck -listen on the far end, or a wrong -port"},
		},
		{
			name: "far end's port down",
			setup: func(_ *fakeFabric, _, far *fakeHost, _, _ *config) {
				far.port.State, far.port.PhysState, far.port.NetdevState = verbs.PortDown, "Disabled", "down"
			},
			step: stepControl,
			want: []string{"FAIL control channel: TCP reached 127.0.0.1:", ", but the far end failed its own check: device and port: rxe0 port 1 is DOWN (physical state Disabled) — the link under it is down: netdev eth0 is down"},
			far:  []string{"FAIL device and port: rxe0 port 1 is DOWN"},
		},
		{
			name: "UDP 4791 blocked",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.dropUDP = true
			},
			step: stepUDP,
			want: []string{"FAIL udp 4791: TCP reached 127.0.0.1:", " but no RoCE v2 datagram (UDP port 4791) arrived there in 300ms — a firewall passing TCP but dropping UDP, a switch port without RoCE, or a wrong GID index/type"},
			far:  []string{"FAIL udp 4791: no RoCE v2 datagram (UDP port 4791) from 127.0.0.1:"},
		},
		{
			name: "RoCE v1 GID: UDP does not apply",
			setup: func(_ *fakeFabric, _, _ *fakeHost, nc, fc *config) {
				nc.gidIndex, fc.gidIndex = 2, 2
			},
			want: []string{"ok   gid: index 2 ::ffff:192.0.2.1 RoCE v1 on netdev eth0 (given by -x)",
				"ok   udp 4791: does not apply: GID index 2 is RoCE v1: Ethernet frames of ethertype 0x8915, not UDP datagrams", "ok   disconnect:"},
		},
		{
			name: "InfiniBand: UDP does not apply",
			setup: func(_ *fakeFabric, near, far *fakeHost, _, _ *config) {
				for _, h := range []*fakeHost{near, far} {
					h.port.LinkLayer, h.port.Netdev = verbs.LinkLayerInfiniBand, ""
					for i := range h.gids {
						h.gids[i].Type, h.gids[i].Netdev = verbs.GIDTypeIB, ""
					}
				}
			},
			want: []string{"ok   udp 4791: does not apply: rxe0 port 1 is InfiniBand: its packets are not carried in UDP", "ok   disconnect:"},
		},
		{
			name: "iWARP: UDP does not apply",
			setup: func(_ *fakeFabric, near, far *fakeHost, _, _ *config) {
				for _, h := range []*fakeHost{near, far} {
					h.devs, h.port.Transport = []string{"siw0"}, verbs.NodeTransportIWARP
				}
			},
			want: []string{"ok   udp 4791: does not apply: siw0 is iWARP: RDMA over TCP (the rdma_cm step's connection), no UDP port 4791", "ok   rdma_cm connect:", "ok   disconnect:"},
		},
		{
			name: "the far end takes no RoCE v2",
			setup: func(_ *fakeFabric, _, far *fakeHost, _, _ *config) {
				far.port.Transport = verbs.NodeTransportIWARP
			},
			step: stepUDP,
			want: []string{"FAIL udp 4791: the far end 127.0.0.1:", " has no UD QP for the datagram: its port takes no RoCE v2 (Ethernet, GID index 3 RoCE v2) — the two ends are not alike"},
		},
		{
			name: "RoCE versions differ",
			setup: func(_ *fakeFabric, _, _ *fakeHost, _, fc *config) {
				fc.gidIndex = 2
			},
			step: stepUDP,
			want: []string{"FAIL udp 4791: this end's GID index 3 is RoCE v2 but the far end's (index 2, ::ffff:192.0.2.2) is RoCE v1 — both ends must use the same RoCE version: a wrong GID index (-x) on one of them"},
		},
		{
			name: "rdma_cm rejected",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.dialErr = &verbs.CMError{Op: "connect", Addr: netip.MustParseAddrPort("192.0.2.2:18518"), Event: "RDMA_CM_EVENT_REJECTED", Status: 8, Kind: verbs.ErrCMRejected}
			},
			step: stepCM,
			want: []string{"FAIL rdma_cm connect: to 127.0.0.1:1: verbs: rdma_cm connect to 192.0.2.2:18518: RDMA_CM_EVENT_REJECTED (status 8",
				" — the far end's connection manager refused it: nothing listens on that port (a wrong -port, or the far end is not rdmacheck -listen), or the far end refused the QP"},
		},
		{
			name: "rdma_cm: no RDMA path",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.dialErr = &verbs.CMError{Op: "resolve address", Addr: netip.MustParseAddrPort("192.0.2.2:18518"), Event: "RDMA_CM_EVENT_ADDR_ERROR", Status: -113, Kind: verbs.ErrCMUnreachable}
			},
			step: stepCM,
			want: []string{"FAIL rdma_cm connect: to 127.0.0.1:1: verbs: rdma_cm resolve address", "RDMA_CM_EVENT_ADDR_ERROR",
				" — no RDMA path to the far end: its address does not resolve to an RDMA device here"},
		},
		{
			name: "rdma_cm: another device",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.dialErr = &verbs.CMError{Op: "resolve address", Addr: netip.MustParseAddrPort("192.0.2.2:18518"), Kind: verbs.ErrCMWrongDevice, Detail: "the address is on mlx5_1, the QP on rxe0"}
			},
			step: stepCM,
			want: []string{"the address is on mlx5_1, the QP on rxe0", " — the address is on another RDMA device than the one checked: give -d the device"},
		},
		{
			name: "rdma_cm unreachable",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.noAccept = true
			},
			step: stepCM,
			want: []string{"FAIL rdma_cm connect: to 127.0.0.1:1: no answer to the connection request: i/o timeout",
				"— no answer from the far end's connection manager in time: RoCE packets (UDP 4791) dropped on the path (firewall, switch port without RoCE), a wrong GID/RoCE version, or the far end did not accept"},
			far: []string{"FAIL rdma_cm connect: no rdma_cm connection accepted on 127.0.0.1:1"},
		},
		{
			name: "payload changed on the way to the far end",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.corrupt = func(dir byte, iter int, p []byte) {
					if dir == 'a' && iter == 17 {
						p[3] ^= 0x40
					}
				}
			},
			step: stepPing,
			want: []string{"FAIL ping-pong: payload mismatch at iteration 17 byte 3 (0x", ", seen by the far end 127.0.0.1:", "— the data was changed between the two memories"},
			far:  []string{"FAIL ping-pong: payload mismatch at iteration 17 byte 3"},
		},
		{
			name: "payload changed on the way back",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.corrupt = func(dir byte, iter int, p []byte) {
					if dir == 'b' && iter == 5 {
						p[60] = ^p[60]
					}
				}
			},
			step: stepPing,
			want: []string{"FAIL ping-pong: payload mismatch at iteration 5 byte 60 (0x", ", seen by this end — the data was changed between the two memories"},
		},
		{
			name: "an answer lost",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.lose = func(dir byte, iter int) bool { return dir == 'b' && iter == 9 }
			},
			step: stepPing,
			want: []string{"FAIL ping-pong: no answer to ping 9 of 20 within 300ms — the far end stopped answering (see its output) or the RC connection broke"},
			far:  []string{"FAIL ping-pong: ping 10 of 20 did not arrive"},
		},
		{
			name: "retries exceeded",
			setup: func(fab *fakeFabric, _, _ *fakeHost, _, _ *config) {
				fab.sendErr = func(dir byte, iter int) error {
					if dir == 'a' && iter == 4 {
						return &verbs.WCError{Status: verbs.WCRetryExcErr, WRID: 1 << 32, QPN: 0x13}
					}
					return nil
				}
			},
			step: stepPing,
			want: []string{"FAIL ping-pong: ping 4 of 20: the send failed: verbs: work completion", "transport retry counter exceeded",
				"— the far end stopped acknowledging: the link or RoCE path broke mid-run, or the far end's QP is gone"},
		},
		{
			name: "a leak at the far end",
			setup: func(_ *fakeFabric, _, far *fakeHost, _, _ *config) {
				far.leak = true
			},
			step: stepClose,
			want: []string{"FAIL disconnect: objects left open: 0 here (none), 1 at the far end (rc qp #1 created at fake) — a leak in rdmacheck"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fab := newFabric()
			near, far := newFakeHost(fab, "192.0.2.1"), newFakeHost(fab, "192.0.2.2")
			nc, fc := testConfig(), testConfig()
			if tt.setup != nil {
				tt.setup(fab, near, far, &nc, &fc)
			}
			port := nc.port
			fc.addr = mustAddr("127.0.0.1")
			fport, farOut, halt := startFar(t, far, fc)
			nc.connect = "127.0.0.1"
			if port == 0 {
				nc.port = fport
			}
			var buf bytes.Buffer
			err := runNear(near, nc, &buf)
			ferr := halt()
			out := buf.String()
			if tt.step == "" {
				require.NoError(t, err, "output:\n%s\nfar end:\n%s", out, farOut)
			} else {
				var serr *StepError
				require.ErrorAs(t, err, &serr, "output:\n%s", out)
				assert.Equal(t, tt.step, serr.Step)
				// run prints the failure; here the test does.
				out += "FAIL " + serr.Error() + "\n"
			}
			for _, w := range tt.want {
				assert.Contains(t, out, w, "far end:\n%s", farOut)
			}
			for _, w := range tt.far {
				assert.Contains(t, farOut.String(), w)
			}
			assert.Empty(t, near.Live(), "the near end releases everything, also on failure")
			if tt.name != "a leak at the far end" {
				require.NoError(t, ferr)
				assert.Empty(t, far.Live())
			} else {
				assert.ErrorContains(t, ferr, "stopped with 1 objects open")
			}
			if tt.step != "" {
				assert.Equal(t, 1, strings.Count(out, "FAIL "), "one failure line, later steps not attempted:\n%s", out)
			}
		})
	}
}

func TestRunExitStatus(t *testing.T) {
	fab := newFabric()
	near, far := newFakeHost(fab, "192.0.2.1"), newFakeHost(fab, "192.0.2.2")
	fc := testConfig()
	fc.addr = mustAddr("127.0.0.1")
	port, _, _ := startFar(t, far, fc)
	var out, errOut bytes.Buffer
	args := []string{"-connect", "127.0.0.1", "-port", strconv.Itoa(port), "-timeout", "1s", "-n", "5"}
	require.Equal(t, 0, run(args, "", near, &out, &errOut), "%s%s", out.String(), errOut.String())
	assert.Equal(t, 7, strings.Count(out.String(), "\nok   ")+1, out.String())

	out.Reset()
	args = append(args, "-x", "7")
	assert.Equal(t, 1, run(args, "", near, &out, &errOut))
	assert.Contains(t, out.String(), "FAIL gid: GID index 7 of rxe0 port 1 is empty")
}

func closedPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// TestControlChannelFailures: a far end that is not rdmacheck, or is
// busy, is named as such in step 3.
func TestControlChannelFailures(t *testing.T) {
	tests := []struct {
		name  string
		serve func(c net.Conn) // what the "far end" does with the connection
		want  []string
	}{
		{
			name:  "silent: busy with another client, or not rdmacheck",
			serve: func(c net.Conn) { time.Sleep(time.Second) },
			want:  []string{"control channel: the far end 127.0.0.1:", "did not send its hello within 300ms — the far end is stuck or serving another client (one at a time), or it is not rdmacheck -listen"},
		},
		{
			name:  "another protocol",
			serve: func(c net.Conn) { _, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n")) },
			want:  []string{"control channel: the control channel to 127.0.0.1:", "an unreadable control message", "— the far end is not a compatible rdmacheck -listen"},
		},
		{
			name:  "closes at once",
			serve: func(c net.Conn) {},
			want:  []string{"control channel: the far end 127.0.0.1:", "closed the control channel — it failed or stopped: see its output"},
		},
		{
			name: "a newer protocol",
			serve: func(c net.Conn) {
				_, _ = c.Write([]byte(`{"type":"hello","version":2,"gid":"::1","gid_type":"RoCE v2","qpn":5}` + "\n"))
				time.Sleep(100 * time.Millisecond)
			},
			want: []string{"sent a bad hello: protocol version 2 (this end speaks 1) — the far end is not a compatible rdmacheck -listen"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tt.serve(c)
				c.Close()
			}()
			near := newFakeHost(newFabric(), "192.0.2.1")
			c := testConfig()
			c.connect, c.port = "127.0.0.1", ln.Addr().(*net.TCPAddr).Port
			err = runNear(near, c, io.Discard)
			var serr *StepError
			require.ErrorAs(t, err, &serr)
			assert.Equal(t, stepControl, serr.Step)
			for _, w := range tt.want {
				assert.Contains(t, serr.Error(), w)
			}
			assert.Empty(t, near.Live())
		})
	}
}
