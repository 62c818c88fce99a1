package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/peer"
	"github.com/rdmabench/rdmabench/verbs"
)

// fakeDev stands in for the RDMA device: it has rxe's limits and makes
// passive sides that only count what happens to them.
type fakeDev struct {
	lim     peer.Limits
	panicOn string // "open", "start" or "stop": panic there
	// openHook, when set, runs first in open, outside f.mu (set it
	// before the server serves).
	openHook func(req *oob.Setup) error

	mu sync.Mutex
	// calls counts every open the server asked for, before the fake's
	// own check: a Setup refused by the server's checks never adds one.
	calls               int
	opened, live        int
	aborted, started    int
	lastOpened          *fakePassive
	startedCh, closedCh chan struct{}
}

func newFakeDev() *fakeDev {
	return &fakeDev{
		lim: peer.Limits{
			Device: "rxe0",
			Attr: verbs.DeviceAttr{Name: "rxe0", Provider: "rxe", MaxQPWR: 1048576, MaxQP: 1048560, MaxSGE: 32, MaxCQE: 32767,
				MaxSRQ: 917503, MaxSRQWR: 1048576, MaxMRSize: 1 << 40, MaxInline: 512, AtomicCap: verbs.AtomicHCA, PhysPortCnt: 1},
			Port:     1,
			PortAttr: verbs.PortAttr{Num: 1, State: verbs.PortActive, ActiveMTU: 1024, MaxMTU: 4096, MaxMsgSize: 8388608},
		},
		startedCh: make(chan struct{}, 100), closedCh: make(chan struct{}, 100),
	}
}

func (f *fakeDev) info() oob.HelloOK {
	return oob.HelloOK{Device: "rxe0", Provider: "rxe", FW: "1.0", MTU: 1024}
}

func (f *fakeDev) limits() peer.Limits { return f.lim }

func (f *fakeDev) open(req *oob.Setup) (passive, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	if f.openHook != nil {
		if err := f.openHook(req); err != nil {
			return nil, err
		}
	}
	if f.panicOn == "open" {
		var s []byte
		_ = s[req.Scenario.Size-1] // what serveWriteEcho did with size 0
	}
	// The real device checks again (NewPassive): so does the fake.
	if err := peer.CheckSetup(req, f.lim); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.opened++
	f.live++
	p := &fakePassive{f: f}
	for i := range req.Scenario.QPs {
		p.ok.Endpoints = append(p.ok.Endpoints, oob.Endpoint{QPN: uint32(0x200 + i), PSN: 7, GID: "::ffff:127.0.0.1"})
		p.ok.Targets = append(p.ok.Targets, oob.Target{Addr: 0x10000, RKey: 9})
	}
	p.ok.MTU = min(req.MTU, 1024)
	f.lastOpened = p
	return p, nil
}

func (f *fakeDev) state() (opened, live, aborted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opened, f.live, f.aborted
}

type fakePassive struct {
	f      *fakeDev
	ok     oob.SetupOK
	closed bool
}

func (p *fakePassive) SetupOK() *oob.SetupOK { return &p.ok }
func (p *fakePassive) CPU() int              { return -1 }

func (p *fakePassive) Interrupt() {}

func (p *fakePassive) Start() error {
	if p.f.panicOn == "start" {
		panic("fake: start")
	}
	p.f.mu.Lock()
	p.f.started++
	p.f.mu.Unlock()
	p.f.startedCh <- struct{}{}
	return nil
}

func (p *fakePassive) StopWith(oob.Stop) (*oob.Stopped, error) {
	if p.f.panicOn == "stop" {
		panic("fake: stop")
	}
	return &oob.Stopped{Received: 42}, nil
}

func (p *fakePassive) Abort() error {
	p.f.mu.Lock()
	p.f.aborted++
	p.f.mu.Unlock()
	return nil
}

func (p *fakePassive) Close() error {
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.f.live--
		p.f.closedCh <- struct{}{}
	}
	return nil
}

// hostLimits are small limits for the host tests.
func hostLimits() limits {
	l := defaultLimits
	l.hello, l.idle = 2*time.Second, 10*time.Second
	return l
}

// dial connects to addr with a deadline for the whole test exchange.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// handshake does the client's side of the handshake with token and
// returns the peer's answer, or why it refused.
func handshake(c net.Conn, token string) (*oob.HelloOK, error) {
	nonce, err := oob.NewNonce()
	if err != nil {
		return nil, err
	}
	if err := oob.WriteFrame(c, oob.MsgHello, &oob.Hello{Version: oob.Version, Client: "test", Nonce: nonce}); err != nil {
		return nil, err
	}
	var ch oob.Challenge
	if err := oob.Decode(c, oob.MsgChallenge, &ch); err != nil {
		return nil, err
	}
	if err := oob.WriteFrame(c, oob.MsgAuth, &oob.Auth{Proof: oob.ClientProof(token, ch.Nonce, nonce)}); err != nil {
		return nil, err
	}
	var ok oob.HelloOK
	if err := oob.Decode(c, oob.MsgHelloOK, &ok); err != nil {
		return nil, err
	}
	if ch.TokenRequired && !oob.ProofOK(ok.Proof, oob.PeerProof(token, nonce, ch.Nonce)) {
		return nil, errors.New("the peer's proof is wrong")
	}
	return &ok, nil
}

// dialAuth connects and authenticates; failing is a test failure.
func dialAuth(t *testing.T, addr, token string) net.Conn {
	t.Helper()
	c := dial(t, addr)
	_, err := handshake(c, token)
	require.NoError(t, err)
	return c
}

// targetSetup is a WRITE stream's Setup on qps QPs with slots of slot
// bytes.
func targetSetup(qps, slot int) *oob.Setup {
	req := &oob.Setup{Scenario: oob.Scenario{Op: "RDMA_WRITE", Transport: "RC", Role: "target", Size: 64, QPs: qps,
		SendDepth: 4, RecvDepth: 1, SlotSize: slot}, MTU: 1024, QKey: 0x4242}
	for i := range qps {
		req.Endpoints = append(req.Endpoints, oob.Endpoint{QPN: uint32(0x100 + i), GID: "::ffff:192.0.2.1"})
		req.Targets = append(req.Targets, oob.Target{Addr: 0x1000, RKey: 1})
	}
	return req
}

// writeEchoSetup is WriteLat's Setup.
func writeEchoSetup() *oob.Setup {
	req := targetSetup(1, 64)
	req.Scenario.Role, req.Scenario.Size, req.Scenario.SendDepth = "write-echo", 8, 64
	return req
}

// bidirSetup is a WRITE stream's bidir Setup (send depth 4) whose
// stream back is msgs messages, qd deep, batch a post.
func bidirSetup(msgs int64, qd, batch int) *oob.Setup {
	req := targetSetup(1, 64)
	req.Scenario.Role = "bidir"
	req.Scenario.Stream = &oob.Stream{Msgs: msgs, QD: qd, Batch: batch, Signal: 1}
	return req
}

// writeRPCSetup is EchoRPC's Setup over RDMA_WRITE (role write-rpc): a
// window of 4 requests of 64 bytes, 64 apart, and the client's UD
// response QP.
func writeRPCSetup() *oob.Setup {
	req := targetSetup(1, 256)
	req.Scenario.Role, req.Scenario.SendDepth = "write-rpc", 8
	req.Scenario.RPC = &oob.RPC{Window: 4, Stride: 64}
	req.Resp = &oob.Endpoint{QPN: 0x200, GID: "::ffff:192.0.2.1"}
	return req
}

// programSetup is a Setup of role program: side B of the commit example
// (await a message, answer it with 8 bytes).
func programSetup() *oob.Setup {
	req := targetSetup(1, 64)
	req.Scenario.Op, req.Scenario.Size, req.Scenario.Role, req.Scenario.SendDepth, req.Scenario.RecvDepth = "", 0, "program", 128, 128
	// As a client sends it (the program's type is rdmatest's own).
	const program = `{"recvs": true, "recv_bytes": 8, "steps": [{"kind": 2, "recvs": 1},
		{"kind": 1, "wrs": [{"op": 0, "local": {"qp": 0, "off": 0, "len": 8}, "remote": {"qp": 0, "off": 0}}], "every": 64}]}`
	if err := json.Unmarshal([]byte(program), &req.Program); err != nil {
		panic(err)
	}
	req.Access = []string{oob.AccessRemoteWrite}
	return req
}

// setup sends req on an authenticated connection and returns the answer.
func setup(c net.Conn, req *oob.Setup) error {
	if err := oob.WriteFrame(c, oob.MsgSetup, req); err != nil {
		return err
	}
	var ok oob.SetupOK
	return oob.Decode(c, oob.MsgSetupOK, &ok)
}

// fullSession runs a whole good session: the peer serves.
func fullSession(t *testing.T, addr string) {
	t.Helper()
	c := dialAuth(t, addr, testToken)
	require.NoError(t, setup(c, writeEchoSetup()))
	require.NoError(t, oob.WriteFrame(c, oob.MsgStart, &oob.Start{}))
	require.NoError(t, oob.Decode(c, oob.MsgStarted, &oob.Started{}))
	require.NoError(t, oob.WriteFrame(c, oob.MsgStop, &oob.Stop{}))
	var st oob.Stopped
	require.NoError(t, oob.Decode(c, oob.MsgStopped, &st))
	assert.Equal(t, uint64(42), st.Received)
}

// waitIdle waits until every session has ended and returned its
// resources and budget.
func waitIdle(t *testing.T, srv *server, f *fakeDev) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, live, _ := f.state()
		return live == 0 && srv.pool.inUse() == budget{} && len(srv.slots) == 0
	}, 5*time.Second, 10*time.Millisecond, "sessions did not release everything")
}

// atMem is a one-QP target Setup whose registered memory and queue rings
// come to mem bytes (a multiple of two pages), or just over when over > 0.
func atMem(f *fakeDev, mem int64, over int) *oob.Setup {
	r := targetSetup(1, 64)
	rings := ringBytes(r, peer.SetupCost(r, f.lim)) // the same for any slot size
	r.Scenario.SlotSize = int(mem-rings)/2 + over
	return r
}

// TestHostileClient drives the peer (with a fake device) as an attacker
// would: each request ends with a clear error on the client, nothing is
// left behind, and the peer serves the next client.
func TestHostileClient(t *testing.T) {
	f := newFakeDev()
	lim := hostLimits()
	lim.client = budget{QPs: 4, WRs: 1000, CQEs: 1000, Mem: 1 << 20}
	addr, srv := startServer(t, f, testToken, lim)
	withQPs := func(req *oob.Setup, n int) *oob.Setup {
		r := targetSetup(n, req.Scenario.SlotSize)
		r.Scenario = req.Scenario
		r.Scenario.QPs = n
		return r
	}
	for _, tc := range []struct {
		name string
		req  func() *oob.Setup
		want string // "" = accepted
	}{
		{"write-echo size 0", func() *oob.Setup { r := writeEchoSetup(); r.Scenario.Size = 0; return r }, "message size 0 must be at least 1 byte"},
		{"size larger than the slot", func() *oob.Setup { r := writeEchoSetup(); r.Scenario.Size = 65; return r }, "slot_size 64 is smaller than the message size 65"},
		{"negative size", func() *oob.Setup { r := writeEchoSetup(); r.Scenario.Size = -4; return r }, "size -4 out of range"},
		{"role for another verb", func() *oob.Setup { r := writeEchoSetup(); r.Scenario.Op = "SEND"; return r }, `role "write-echo" does not serve SEND`},
		{"unknown role", func() *oob.Setup { r := writeEchoSetup(); r.Scenario.Role = "shell"; return r }, `role "shell" is not one of`},
		{"READ over UD", func() *oob.Setup {
			r := targetSetup(1, 64)
			r.Scenario.Op, r.Scenario.Transport = "RDMA_READ", "UD"
			return r
		}, "UD supports SEND only, not RDMA_READ"},
		{"qps at the limit", func() *oob.Setup { return targetSetup(4, 64) }, ""},
		{"qps over the limit", func() *oob.Setup { return targetSetup(5, 64) }, "qps 5 exceeds this peer's limit 4 per client (-max-qps)"},
		{"work requests at the limit", func() *oob.Setup {
			r := targetSetup(2, 64)
			r.Scenario.SendDepth, r.Scenario.RecvDepth = 400, 100
			return r
		}, ""},
		{"work requests over the limit", func() *oob.Setup {
			r := targetSetup(2, 64)
			r.Scenario.SendDepth, r.Scenario.RecvDepth = 400, 101
			return r
		}, "work requests (queue depths × QPs) 1002 exceeds this peer's limit 1000 per client (-max-wrs)"},
		{"SRQ counted once", func() *oob.Setup {
			r := withQPs(&oob.Setup{Scenario: oob.Scenario{Op: "SEND", Transport: "RC", Role: "sink", Size: 64, SendDepth: 100, RecvDepth: 600, SlotSize: 64, SRQ: true}}, 4)
			return r
		}, "CQ entries 2800 exceeds this peer's limit 1000 per client (-max-cqe)"},
		{"memory at the limit", func() *oob.Setup { return atMem(f, 1<<20, 0) }, ""},
		{"memory over the limit", func() *oob.Setup { return atMem(f, 1<<20, 1) }, "exceeds this peer's limit 1048576 per client (-max-mem)"},
		{"send depth over the device's", func() *oob.Setup {
			r := targetSetup(1, 64)
			r.Scenario.SendDepth = oob.MaxDepth + 1
			return r
		}, "send_depth 65537 out of range 1..65536"},
		{"inline over the device's", func() *oob.Setup {
			r := writeEchoSetup()
			r.Scenario.Inline = 1024
			return r
		}, "inline 1024 exceeds rxe0's max_inline_data 512"},
		{"bidir without its stream", func() *oob.Setup {
			r := targetSetup(1, 64)
			r.Scenario.Role = "bidir"
			return r
		}, "role bidir needs its stream"},
		{"a stream for another role", func() *oob.Setup {
			r := targetSetup(1, 64)
			r.Scenario.Stream = &oob.Stream{Msgs: 10, QD: 2, Batch: 1, Signal: 1}
			return r
		}, "stream is for role bidir, not target"},
		{"bidir stream of no message", func() *oob.Setup { return bidirSetup(0, 2, 1) }, "stream.msgs 0 out of range 1..1073741824"},
		{"bidir stream beyond MaxIters", func() *oob.Setup { return bidirSetup(oob.MaxIters+1, 2, 1) }, "stream.msgs 1073741825 out of range"},
		{"bidir stream deeper than its queue", func() *oob.Setup { return bidirSetup(10, 4, 1) }, "stream.qd 4 needs a send_depth of at least 5, not 4"},
		{"bidir batch over its depth", func() *oob.Setup { return bidirSetup(10, 2, 3) }, "stream: batch 3 exceeds qd 2"},
		{"bidir signal of 0", func() *oob.Setup { r := bidirSetup(10, 2, 1); r.Scenario.Stream.Signal = 0; return r }, "stream.signal 0 out of range 1..65536"},
		{"bidir signal over its depth", func() *oob.Setup { r := bidirSetup(10, 2, 1); r.Scenario.Stream.Signal = 3; return r }, "stream: signal interval 3 exceeds qd 2"},
		{"bidir window that could stall", func() *oob.Setup { r := bidirSetup(10, 3, 2); r.Scenario.Stream.Signal = 3; return r }, "stream: qd 3, batch 2, signal interval 3: the stream could wait for room"},
		{"bidir accepted", func() *oob.Setup { return bidirSetup(10, 3, 1) }, ""},
		{"write-rpc accepted", writeRPCSetup, ""},
		{"write-rpc without its window", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.RPC = nil; return r }, "role write-rpc needs its window (rpc)"},
		{"write-rpc window on another role", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.Role = "target"; return r }, "rpc and resp are for role write-rpc, not target"},
		{"write-rpc window of 0", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.RPC.Window = 0; return r }, "rpc.window 0 out of range 1..256"},
		{"write-rpc window of 257", func() *oob.Setup {
			r := writeRPCSetup()
			r.Scenario.SlotSize, r.Scenario.RPC.Window = 257*64, 257
			return r
		}, "rpc.window 257 out of range 1..256"},
		{"write-rpc stride below the size", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.Size = 128; return r }, "rpc.stride 64 must be a multiple of 64 and at least the size 128"},
		{"write-rpc stride off a cache line", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.RPC.Stride = 100; return r }, "rpc.stride 100 must be a multiple of 64"},
		{"write-rpc window beyond the slot", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.RPC.Window = 5; return r }, "rpc: window 5 × stride 64 exceed slot_size 256"},
		{"write-rpc stride beyond the slot", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.RPC.Stride = 1 << 30; return r }, "exceed slot_size 256"},
		{"write-rpc without the client's response QP", func() *oob.Setup { r := writeRPCSetup(); r.Resp = nil; return r }, "role write-rpc needs the client's UD response endpoint (resp)"},
		{"write-rpc response QP with a bad GID", func() *oob.Setup { r := writeRPCSetup(); r.Resp.GID = "x"; return r }, `resp: gid "x" is not an IP address`},
		{"write-rpc response QP number 0", func() *oob.Setup { r := writeRPCSetup(); r.Resp.QPN = 0; return r }, "resp: qpn 0x0 out of range 0x1..0xffffff"},
		{"a response QP for another role", func() *oob.Setup { r := writeEchoSetup(); r.Resp = &oob.Endpoint{QPN: 1, GID: "::1"}; return r }, "rpc and resp are for role write-rpc, not write-echo"},
		{"write-rpc over UD", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.Transport = "UD"; return r }, "role write-rpc serves RDMA_WRITE over RC or UC on 1 QP, not RDMA_WRITE over UD"},
		{"write-rpc of SEND", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.Op = "SEND"; return r }, "role write-rpc serves RDMA_WRITE over RC or UC on 1 QP, not SEND"},
		{"write-rpc on 2 QPs", func() *oob.Setup { return withQPs(writeRPCSetup(), 2) }, "on 1 QP, not RDMA_WRITE over RC on 2"},
		{"write-rpc response beyond the path MTU", func() *oob.Setup {
			r := writeRPCSetup()
			r.Scenario.Size, r.Scenario.SlotSize, r.Scenario.RPC.Stride = 2048, 4*2048, 2048
			return r
		}, "echo RPC response size 2048 (a UD datagram) exceeds the path MTU 1024"},
		{"write-rpc send depth 1", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.SendDepth = 1; return r }, "send_depth 1: the write-rpc role answers every message and needs at least 2"},
		{"write-rpc signal_all", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.SignalAll = true; return r }, "signal_all needs role echo or write-echo, not write-rpc"},
		{"write-rpc with SRQ", func() *oob.Setup { r := writeRPCSetup(); r.Scenario.SRQ = true; return r }, "srq"},
		{"endpoints missing", func() *oob.Setup { r := targetSetup(2, 64); r.Endpoints = r.Endpoints[:1]; return r }, "1 endpoints for qps 2"},
		{"bad GID", func() *oob.Setup { r := targetSetup(1, 64); r.Endpoints[0].GID = "x"; return r }, `endpoint 0: gid "x" is not an IP address`},
		{"UC through rdma_cm", func() *oob.Setup {
			r := targetSetup(1, 64)
			r.Scenario.Transport, r.CM = "UC", true
			return r
		}, "cm: UC cannot be connected through rdma_cm"},
		{"a program", programSetup, ""},
		{"program: an unknown step kind", func() *oob.Setup {
			r := programSetup()
			r.Program.Steps[0].Kind = 99
			return r
		}, "program: verbs: program step 0 (step-kind(99)): unknown step kind 99"},
		{"program: a range out of the slot", func() *oob.Setup {
			r := programSetup()
			r.Program.Steps[1].WRs[0].Local.Off = 60
			return r
		}, "program: verbs: program step 1 (post): WR 0: bytes 60..68 of QP 0's out slot: out of range: a slot holds 64 bytes"},
		{"program: a remote place out of the slot", func() *oob.Setup {
			r := programSetup()
			r.Program.Steps[1].WRs[0].Op, r.Program.Steps[1].WRs[0].Remote.Off = verbs.OpWrite, 64
			return r
		}, "program step 1 (post): WR 0: the peer's bytes 64..72 of QP 0's in slot: out of range"},
		{"program: too long", func() *oob.Setup {
			r := programSetup()
			for len(r.Program.Steps) <= oob.MaxProgramSteps {
				r.Program.Steps = append(r.Program.Steps, r.Program.Steps[0])
			}
			return r
		}, "verbs: program: 65 steps: a program sent to a peer has at most 64"},
		{"program: too many QPs", func() *oob.Setup {
			r, n := programSetup(), oob.MaxProgramQPs+1
			t := targetSetup(n, 64)
			r.Scenario.QPs, r.Endpoints, r.Targets = n, t.Endpoints, t.Targets
			return r
		}, "role program: qps 17 exceeds 16"},
		{"role program without a program", func() *oob.Setup {
			r := programSetup()
			r.Program = nil
			return r
		}, "role program without a program"},
		{"a program with another role", func() *oob.Setup {
			r := programSetup()
			r.Scenario.Role, r.Scenario.Op = "target", "RDMA_WRITE"
			return r
		}, `program: role "target" runs no program (only role program does)`},
		{"role program with a verb", func() *oob.Setup {
			r := programSetup()
			r.Scenario.Op = "SEND"
			return r
		}, `role program: op "SEND" and size 0`},
		{"access for a built-in role", func() *oob.Setup {
			r := writeEchoSetup()
			r.Access = []string{oob.AccessRemoteRead}
			return r
		}, `access: role "write-echo" takes no access list`},
		{"an unknown access", func() *oob.Setup {
			r := programSetup()
			r.Access = []string{"remote-root"}
			return r
		}, `access "remote-root" is not one of`},
		{"a program beyond the device's send queue", func() *oob.Setup {
			r := programSetup()
			r.Scenario.SendDepth = 1
			return r
		}, "send_depth 1 out of range 2..1048576 (rxe0's max_qp_wr)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialAuth(t, addr, testToken)
			f.mu.Lock()
			calls := f.calls
			f.mu.Unlock()
			err := setup(c, tc.req())
			if tc.want == "" {
				require.NoError(t, err)
				c.Close()
			} else {
				var pe *oob.PeerError
				require.ErrorAs(t, err, &pe)
				assert.Contains(t, err.Error(), tc.want)
				f.mu.Lock()
				assert.Equal(t, calls, f.calls, "refused before the device was asked to build anything")
				f.mu.Unlock()
			}
			waitIdle(t, srv, f)
			fullSession(t, addr)
			waitIdle(t, srv, f)
		})
	}
	assert.Zero(t, srv.panics.Load())
}

// TestHostileHandshake: no hello, a wrong token, a replayed handshake,
// an old client, garbage — each refused with a clear error; the peer
// serves the next client.
func TestHostileHandshake(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, addr string) error
		want string
	}{
		{"no hello", func(t *testing.T, addr string) error {
			c := dial(t, addr)
			return oob.Decode(c, oob.MsgChallenge, &oob.Challenge{})
		}, "authentication failed: no handshake within 300ms (-hello-timeout)"},
		{"hello, then silence", func(t *testing.T, addr string) error {
			c := dial(t, addr)
			nonce, _ := oob.NewNonce()
			require.NoError(t, oob.WriteFrame(c, oob.MsgHello, &oob.Hello{Version: oob.Version, Nonce: nonce}))
			require.NoError(t, oob.Decode(c, oob.MsgChallenge, &oob.Challenge{}))
			return oob.Decode(c, oob.MsgHelloOK, &oob.HelloOK{})
		}, "no handshake within 300ms"},
		{"wrong token", func(t *testing.T, addr string) error {
			_, err := handshake(dial(t, addr), "0123456789abcdef-guess")
			return err
		}, "oob: peer refused: authentication failed"},
		{"no token", func(t *testing.T, addr string) error {
			_, err := handshake(dial(t, addr), "")
			return err
		}, "oob: peer refused: authentication failed"},
		{"replayed handshake", func(t *testing.T, addr string) error {
			// Record a good client's Hello and Auth, replay them on a
			// new connection: the peer's nonce differs.
			c := dial(t, addr)
			nonce, _ := oob.NewNonce()
			hello := &oob.Hello{Version: oob.Version, Client: "victim", Nonce: nonce}
			require.NoError(t, oob.WriteFrame(c, oob.MsgHello, hello))
			var ch oob.Challenge
			require.NoError(t, oob.Decode(c, oob.MsgChallenge, &ch))
			auth := &oob.Auth{Proof: oob.ClientProof(testToken, ch.Nonce, nonce)}
			require.NoError(t, oob.WriteFrame(c, oob.MsgAuth, auth))
			require.NoError(t, oob.Decode(c, oob.MsgHelloOK, &oob.HelloOK{}), "precondition: the recorded handshake worked")
			c.Close()
			r := dial(t, addr)
			require.NoError(t, oob.WriteFrame(r, oob.MsgHello, hello))
			require.NoError(t, oob.Decode(r, oob.MsgChallenge, &oob.Challenge{}))
			require.NoError(t, oob.WriteFrame(r, oob.MsgAuth, auth))
			return oob.Decode(r, oob.MsgHelloOK, &oob.HelloOK{})
		}, "oob: peer refused: authentication failed"},
		{"version 1 client (token in Hello)", func(t *testing.T, addr string) error {
			c := dial(t, addr)
			_, err := c.Write(append([]byte("RDBP\x01\x01\x00\x00\x00\x1b"), `{"version":1,"token":"abc"}`...))
			require.NoError(t, err)
			return oob.Decode(c, oob.MsgChallenge, &oob.Challenge{})
		}, "protocol version 1, this side speaks 2"},
		{"setup before hello", func(t *testing.T, addr string) error {
			c := dial(t, addr)
			require.NoError(t, oob.WriteFrame(c, oob.MsgSetup, writeEchoSetup()))
			return oob.Decode(c, oob.MsgChallenge, &oob.Challenge{})
		}, "got Setup, want Hello"},
		{"HTTP", func(t *testing.T, addr string) error {
			c := dial(t, addr)
			_, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			require.NoError(t, err)
			return oob.Decode(c, oob.MsgChallenge, &oob.Challenge{})
		}, "not an rdmabench peer?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeDev()
			lim := hostLimits()
			lim.hello = 300 * time.Millisecond
			addr, srv := startServer(t, f, testToken, lim)
			err := tc.run(t, addr)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			fullSession(t, addr)
			waitIdle(t, srv, f)
			opened, _, _ := f.state()
			assert.Equal(t, 1, opened, "only the good client reached the device")
		})
	}
}

// TestRateLimit: after maxFails failed handshakes an address is refused
// for a while, even with the right token, and the refusal says so.
func TestRateLimit(t *testing.T) {
	f := newFakeDev()
	lim := hostLimits()
	// Every port check below must reach a session: with the default 4
	// connections a host, one dialled while the server still holds 4
	// earlier ones (it closes them after counting them failed) is
	// refused, and never counted, so failed stayed short of 2·maxFails.
	// A fresh clone's make test hit that in the guest, where the server's
	// goroutines lag the client's dials.
	lim.perHost = 2 * maxFails
	addr, srv := startServer(t, f, testToken, lim)
	// Connections closed without a word (port checks) are not attempts.
	for range 2 * maxFails {
		dial(t, addr).Close()
	}
	// A session is counted as failed before its connection is released:
	// wait for both.
	conns := func() int {
		srv.hosts.mu.Lock()
		defer srv.hosts.mu.Unlock()
		if st := srv.hosts.m["127.0.0.1"]; st != nil { // kept for its log budget only
			return st.conns
		}
		return 0
	}
	require.Eventually(t, func() bool { return srv.failed.Load() == 2*maxFails && conns() == 0 }, 5*time.Second, 10*time.Millisecond)
	srv.hosts.mu.Lock()
	if st := srv.hosts.m["127.0.0.1"]; st != nil {
		assert.Empty(t, st.fails, "the port checks were counted")
	}
	srv.hosts.mu.Unlock()
	for range maxFails {
		_, err := handshake(dial(t, addr), "0123456789abcdef-guess")
		require.ErrorContains(t, err, "authentication failed")
	}
	_, err := handshake(dial(t, addr), testToken)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused: 5 failed handshakes from 127.0.0.1 within 1m0s; try again in 1m0s")

	// Later, the address is served again.
	srv.hosts.mu.Lock()
	srv.hosts.now = func() time.Time { return time.Now().Add(blockFor + failWindow) }
	srv.hosts.mu.Unlock()
	fullSession(t, addr)
}

// TestSlots: a client slot is taken only after authentication, so silent
// connections lock nobody out; when every slot is taken, an
// authenticated client is told the peer is busy.
func TestSlots(t *testing.T) {
	f := newFakeDev()
	lim := hostLimits()
	lim.clients, lim.perHost = 1, 10
	addr, srv := startServer(t, f, testToken, lim)
	for range 3 {
		dial(t, addr) // silent
	}
	fullSession(t, addr)
	waitIdle(t, srv, f) // the slot is returned after the client has its answer

	holder := dialAuth(t, addr, testToken)
	require.NoError(t, setup(holder, writeEchoSetup()))
	_, err := handshake(dial(t, addr), testToken)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "oob: peer refused: busy: 1 clients already (-max-clients)")
	holder.Close()
	waitIdle(t, srv, f)
	fullSession(t, addr)
}

// TestConnsTotal: connections from all addresses together, handshakes
// included, are bounded: beyond -max-conns one is closed unanswered, and
// a slot frees when a connection ends.
func TestConnsTotal(t *testing.T) {
	f := newFakeDev()
	lim := hostLimits()
	lim.perHost, lim.conns = 10, 2
	addr, _ := startServer(t, f, testToken, lim)
	silent := dial(t, addr)
	dial(t, addr)
	extra := dial(t, addr) // accepted third: the listen queue is FIFO
	start := time.Now()
	extra.SetReadDeadline(start.Add(5 * time.Second))
	_, err := extra.Read(make([]byte, 1))
	require.Error(t, err)
	assert.NotErrorIs(t, err, os.ErrDeadlineExceeded)
	assert.Less(t, time.Since(start), lim.hello/2, "closed at once, not at the handshake timeout (%v)", lim.hello)
	silent.Close()
	require.Eventually(t, func() bool {
		_, err := handshake(dial(t, addr), testToken)
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "a slot frees when a connection ends")
}

// TestConnsPerHost: connections from one address, handshakes included,
// are bounded.
func TestConnsPerHost(t *testing.T) {
	f := newFakeDev()
	lim := hostLimits()
	lim.perHost = 2
	addr, srv := startServer(t, f, testToken, lim)
	silent := dial(t, addr)
	dial(t, addr)
	require.Eventually(t, func() bool {
		srv.hosts.mu.Lock()
		defer srv.hosts.mu.Unlock()
		return srv.hosts.m["127.0.0.1"] != nil && srv.hosts.m["127.0.0.1"].conns == 2
	}, 5*time.Second, 10*time.Millisecond, "precondition: both silent connections admitted")
	_, err := handshake(dial(t, addr), testToken)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused: 2 connections from 127.0.0.1 already (-max-conns-per-host 2)")
	silent.Close()
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		_, err = handshake(c, testToken)
		return err == nil
	}, 5*time.Second, 20*time.Millisecond)
	waitIdle(t, srv, f)
}

// TestTotalLimits: what all clients hold together is bounded; a client
// that would pass it is refused naming what the others hold.
func TestTotalLimits(t *testing.T) {
	f := newFakeDev()
	lim := hostLimits()
	lim.total.QPs = 6
	addr, srv := startServer(t, f, testToken, lim)
	a := dialAuth(t, addr, testToken)
	require.NoError(t, setup(a, targetSetup(4, 64)))
	b := dialAuth(t, addr, testToken)
	err := setup(b, targetSetup(3, 64))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "qps: 4 in use by other clients + 3 asked exceeds this peer's total 6 (-total-qps)")
	c := dialAuth(t, addr, testToken)
	require.NoError(t, setup(c, targetSetup(2, 64)), "at the total")
	a.Close()
	c.Close()
	waitIdle(t, srv, f)
	fullSession(t, addr)
}

// TestPanicEndsOneSession: a panic while serving a client ends that
// session with an error on the client; the daemon serves on.
func TestPanicEndsOneSession(t *testing.T) {
	for _, where := range []string{"open", "start", "stop"} {
		t.Run(where, func(t *testing.T) {
			f := newFakeDev()
			addr, srv := startServer(t, f, testToken, hostLimits())
			f.panicOn = where
			c := dialAuth(t, addr, testToken)
			err := setup(c, writeEchoSetup())
			if err == nil {
				require.NoError(t, oob.WriteFrame(c, oob.MsgStart, &oob.Start{}))
				err = oob.Decode(c, oob.MsgStarted, &oob.Started{})
			}
			if err == nil {
				require.NoError(t, oob.WriteFrame(c, oob.MsgStop, &oob.Stop{}))
				err = oob.Decode(c, oob.MsgStopped, &oob.Stopped{})
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "internal error in the peer (panic:")
			waitIdle(t, srv, f)
			assert.Equal(t, int64(1), srv.panics.Load())
			f.panicOn = ""
			fullSession(t, addr)
		})
	}
}

// TestShutdownMidSession: the peer's shutdown (SIGTERM) ends running
// sessions at once: QPs to error, resources released, clients told; serve
// returns within seconds.
func TestShutdownMidSession(t *testing.T) {
	f := newFakeDev()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newServer(f, testToken, hostLimits())
	srv.logf = t.Logf
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, srv) }()
	addr := ln.Addr().String()

	running := dialAuth(t, addr, testToken)
	require.NoError(t, setup(running, writeEchoSetup()))
	require.NoError(t, oob.WriteFrame(running, oob.MsgStart, &oob.Start{}))
	require.NoError(t, oob.Decode(running, oob.MsgStarted, &oob.Started{}))
	settingUp := dialAuth(t, addr, testToken) // authenticated, no Setup yet
	silent := dial(t, addr)                   // no Hello yet

	t0 := time.Now()
	cancel()
	for name, c := range map[string]net.Conn{"running": running, "setting up": settingUp} {
		err := oob.Decode(c, oob.MsgStopped, &oob.Stopped{})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "oob: peer refused: the peer is shutting down", name)
	}
	_, err = handshake(silent, testToken)
	assert.Error(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return within 5 s of the shutdown")
	}
	assert.Less(t, time.Since(t0), 2*time.Second)
	opened, live, aborted := f.state()
	assert.Equal(t, 1, opened)
	assert.Zero(t, live, "the running session's resources were released")
	assert.Equal(t, 1, aborted, "its QPs went to the error state first")
	_, err = net.Dial("tcp", addr)
	assert.Error(t, err, "the listener is closed")
}

// TestSecondSignalExits: the first signal ends the sessions, the second
// exits at once.
func TestSecondSignalExits(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go onSignals(sigs, cancel, func(code int) { exited <- code })
	sigs <- syscall.SIGTERM
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first SIGTERM did not end the sessions")
	}
	assert.Empty(t, exited, "one signal does not exit")
	sigs <- syscall.SIGTERM
	select {
	case code := <-exited:
		assert.Equal(t, 1, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the second SIGTERM did not exit")
	}
}

// flakyListener fails its first n Accepts with EMFILE.
type flakyListener struct {
	net.Listener
	n int
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.n > 0 {
		l.n--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	return l.Listener.Accept()
}

// TestAcceptBackoff: running out of file descriptors does not end the
// daemon: it backs off and serves on.
func TestAcceptBackoff(t *testing.T) {
	f := newFakeDev()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newServer(f, testToken, hostLimits())
	var logged []string
	var mu sync.Mutex
	srv.logf = func(format string, v ...any) {
		mu.Lock()
		logged = append(logged, fmt.Sprintf(format, v...))
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, &flakyListener{Listener: ln, n: 5}, srv) }()
	fullSession(t, ln.Addr().String())
	cancel()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, logged)
	assert.Contains(t, logged[0], "too many open files; retrying in 5ms")
}

// TestCommandLineDeviceFlags: a bad device flag is a usage error before
// the device is opened. (The device flags' values are the process's:
// the cleanup sets the port back.)
func TestCommandLineDeviceFlags(t *testing.T) {
	t.Cleanup(func() {
		_, err := parseFlags(flag.NewFlagSet("reset", flag.ContinueOnError), []string{"-rdma.port", "1"})
		require.NoError(t, err)
	})
	_, err := parseFlags(flag.NewFlagSet("test", flag.ContinueOnError), []string{"-rdma.port", "0"})
	var ue usageError
	require.ErrorAs(t, err, &ue)
	assert.Contains(t, err.Error(), "-rdma.port 0 is out of range 1..255")
}

// TestClientSettingsNotRead: the daemon reads only the device settings; a
// client's -rdma.peer or token file (here set through the shared values,
// as RDMA_PEER and RDMA_PEER_TOKEN_FILE in its environment would) neither
// stops it nor is used.
func TestClientSettingsNotRead(t *testing.T) {
	client := flag.NewFlagSet("client", flag.ContinueOnError)
	rdmatest.RegisterFlags(client)
	for _, name := range []string{"rdma.peer", "rdma.peer-token-file"} {
		before := client.Lookup(name).DefValue // the shared value as the environment set it
		t.Cleanup(func() { require.NoError(t, client.Set(name, before)) })
	}
	require.NoError(t, client.Parse([]string{"-rdma.peer", "nohost", "-rdma.peer-token-file", filepath.Join(t.TempDir(), "missing")}))
	_, err := rdmatest.Opts()
	require.Error(t, err, "precondition: a client would refuse these")

	_, err = parseFlags(flag.NewFlagSet("test", flag.ContinueOnError), nil)
	assert.NoError(t, err)
	o, err := rdmatest.DeviceOpts()
	require.NoError(t, err)
	assert.Empty(t, o.Peer)
	assert.Empty(t, o.PeerToken)
}

// TestCommandLine: bad settings are usage errors naming the value; the
// token never comes from the command line; a non-loopback address needs
// a token or -trusted-network.
func TestCommandLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-max-clients", "0"}, "-max-clients 0 must be at least 1"},
		{[]string{"-max-clients", "-3"}, "-max-clients -3 must be at least 1"},
		{[]string{"-max-qps", "0"}, "-max-qps 0 must be at least 1"},
		{[]string{"-total-mem", "0"}, "-total-mem 0 must be at least 1"},
		{[]string{"-max-conns-per-host", "0"}, "-max-conns-per-host 0 must be at least 1"},
		{[]string{"-max-conns", "0"}, "-max-conns 0 must be at least 1"},
		{[]string{"-max-hosts", "0"}, "-max-hosts 0 must be at least 1"},
		{[]string{"-max-mem", "1000", "-total-mem", "999"}, "-max-mem 1000 exceeds -total-mem 999: no client could use it"},
		{[]string{"-listen", "nohost"}, `-listen "nohost" is not host:port`},
		{[]string{"-listen", "127.0.0.1:70000"}, `port "70000" is not 0..65535`},
		{[]string{"-hello-timeout", "0s"}, "-hello-timeout 0s and -idle 10m0s must be positive"},
		{[]string{"-token", "s3cret"}, "never the command line"},
		{[]string{"s3cret"}, "unexpected arguments"},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			_, err := parseFlags(flag.NewFlagSet("test", flag.ContinueOnError), tc.args)
			var ue usageError
			require.ErrorAs(t, err, &ue)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	o, err := parseFlags(flag.NewFlagSet("test", flag.ContinueOnError), nil)
	require.NoError(t, err)
	assert.Equal(t, defaultLimits, o.lim)
	assert.Equal(t, ":18515", o.listen)

	for _, tc := range []struct {
		listen, token string
		trusted       bool
		want          string // "" = allowed
	}{
		{":18515", "", false, `refusing to serve the RDMA device on every interface (-listen ":18515") without a token`},
		{"0.0.0.0:18515", "", false, "refusing to serve the RDMA device on 0.0.0.0"},
		{"192.0.2.1:18515", "", false, "refusing to serve the RDMA device on 192.0.2.1"},
		{"[::]:18515", "", false, "refusing"},
		{"127.0.0.1:18515", "", false, ""},
		{"[::1]:18515", "", false, ""},
		{"localhost:18515", "", false, ""},
		{":18515", testToken, false, ""},
		{":18515", "", true, ""},
		{"18515", "", false, "missing port"},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			err := checkExposure(tc.listen, tc.token, tc.trusted)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestToken: the token comes from a file or the environment, and must
// not be trivially short.
func TestToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte(testToken+"\n"), 0o600))
	env := func(v string) func(string) string { return func(string) string { return v } }

	tok, err := loadToken(file, env("ignored-because-of-the-file"))
	require.NoError(t, err)
	assert.Equal(t, testToken, tok, "the file wins, its newline trimmed")
	tok, err = loadToken("", env(testToken))
	require.NoError(t, err)
	assert.Equal(t, testToken, tok)
	tok, err = loadToken("", env(""))
	require.NoError(t, err)
	assert.Empty(t, tok)
	_, err = loadToken("", env("short"))
	assert.ErrorContains(t, err, "the token is 5 bytes; use at least 16")
	_, err = loadToken(filepath.Join(dir, "missing"), env(""))
	assert.ErrorContains(t, err, "-token-file")
}

// TestOpenPeer: a peer without a token (loopback) lets any client in,
// and proves nothing.
func TestOpenPeer(t *testing.T) {
	f := newFakeDev()
	addr, _ := startServer(t, f, "", hostLimits())
	c := dial(t, addr)
	ok, err := handshake(c, "")
	require.NoError(t, err)
	assert.Empty(t, ok.Proof)
	assert.Equal(t, "rxe0", ok.Device)
}

// TestHosts: the per-address table forgets an address once nothing of
// it is left, so it cannot grow without bound.
func TestHosts(t *testing.T) {
	h := newHosts(2, defaultMaxHosts, 32, 128)
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	require.NoError(t, h.admit("a"))
	require.NoError(t, h.admit("a"))
	assert.ErrorContains(t, h.admit("a"), "refused: 2 connections from a already (-max-conns-per-host 2)")
	h.release("a")
	h.release("a")
	assert.Empty(t, h.m)
	for i := 1; i < maxFails; i++ {
		n, blocked := h.fail("b")
		assert.Equal(t, i, n)
		assert.Empty(t, blocked)
	}
	_, blocked := h.fail("b")
	assert.Equal(t, "b", blocked)
	assert.ErrorContains(t, h.admit("b"), "failed handshakes from b")
	now = now.Add(blockFor + failWindow + time.Second)
	require.NoError(t, h.admit("b"))
	h.release("b")
	assert.Empty(t, h.m)
}

// TestHostsPerPrefix: a client that rotates its source address within
// one prefix is locked out as a prefix, and its log lines are held to
// the prefix's budget; another prefix is untouched. Before the prefix
// rules, 127.64.1.31 was served right after 127.64.1.30 was locked out,
// and rotating addresses logged 250–280 lines a second.
func TestHostsPerPrefix(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, tc := range []struct {
		name, prefix string
		addr         func(i int) string
	}{
		{"IPv4 /24", "127.64.1.0/24", func(i int) string { return fmt.Sprintf("127.64.1.%d", i%256) }},
		{"IPv6 /64", "2001:db8:0:7::/64", func(i int) string {
			return fmt.Sprintf("2001:db8:0:7:%x:%x::%x", rng.Uint32()&0xffff, i, rng.Uint32()&0xffff)
		}},
		{"v4-mapped", "192.0.2.0/24", func(i int) string { return fmt.Sprintf("::ffff:192.0.2.%d", i%256) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHosts(2, defaultMaxHosts, defaultPrefixV4, defaultPrefixV6)
			now := time.Unix(1000, 0)
			h.now = func() time.Time { return now }
			start := rng.IntN(200)
			blockedAt := -1
			for i := 0; i < prefixMaxFails+maxFails; i++ {
				a := tc.addr(start + i/(maxFails-1)) // each address stops one failure short of its own block
				if err := h.admit(a); err != nil {
					require.Contains(t, err.Error(), "failed handshakes from "+tc.prefix, "refused as the prefix")
					blockedAt = i
					break
				}
				_, blocked := h.fail(a)
				h.release(a)
				if blocked != "" {
					assert.Equal(t, tc.prefix, blocked, "the block names the prefix")
				}
			}
			assert.Equal(t, prefixMaxFails, blockedAt, "the prefix is locked out after %d failures from its addresses", prefixMaxFails)
			require.NoError(t, h.admit("198.51.100.7"), "another prefix is served")
			h.release("198.51.100.7")

			// Log lines: many fresh addresses of the prefix, frozen
			// clock, get the prefix's burst and no more.
			h = newHosts(1<<20, defaultMaxHosts, defaultPrefixV4, defaultPrefixV6)
			h.now = func() time.Time { return now }
			logged := 0
			for i := range 1000 {
				a := tc.addr(i)
				require.NoError(t, h.admit(a))
				if h.logLine(a) {
					logged++
				}
			}
			assert.Equal(t, logBurst, logged, "the prefix's burst, no more")
			lines := h.sweep(true)
			assert.Contains(t, lines, fmt.Sprintf("%d lines from %s suppressed (more than %d at once or one per %v)", 1000-logBurst, tc.prefix, logBurst, logEvery))
		})
	}
}

// TestBudget: every resource is compared with its own limit, and the
// message names the flag.
func TestBudget(t *testing.T) {
	limit := budget{QPs: 4, WRs: 100, CQEs: 100, Mem: 1 << 20}
	c := budget{QPs: 4, WRs: 100, CQEs: 100, Mem: 1 << 20}
	require.NoError(t, c.within(limit), "at every limit")
	c = budget{QPs: 5, WRs: 101, CQEs: 101, Mem: 1<<20 + 1}
	err := c.within(limit)
	require.ErrorIs(t, err, ErrOverLimit)
	for _, want := range []string{"qps 5 exceeds this peer's limit 4 per client (-max-qps)", "(-max-wrs)", "(-max-cqe)",
		"memory bytes (registered + queue rings) 1048577 exceeds this peer's limit 1048576 per client (-max-mem)"} {
		assert.Contains(t, err.Error(), want)
	}
	p := pool{total: limit}
	require.NoError(t, p.take(budget{QPs: 3}))
	require.ErrorIs(t, p.take(budget{QPs: 2}), ErrOverLimit)
	require.NoError(t, p.take(budget{QPs: 1}))
	p.give(budget{QPs: 3})
	p.give(budget{QPs: 1})
	assert.Equal(t, budget{}, p.inUse())
}

// TestRunRefusesBeforeTheDevice: bad command lines exit 2 before any
// device is opened.
func TestRunRefusesBeforeTheDevice(t *testing.T) {
	t.Setenv(tokenEnv, "")
	for _, args := range [][]string{
		{"-max-clients", "0"},
		{"-listen", "0.0.0.0:0"},
		{"-listen", ":0"},
		{"-token-file", filepath.Join(t.TempDir(), "missing")},
		{"-token", "0123456789abcdef-s3cret"},
	} {
		assert.Equal(t, 2, run(args), "%q", args)
	}
}

// dialFrom connects to addr from the loopback address src (Linux routes
// all of 127/8 to lo), with a deadline for the whole test exchange; the
// test is skipped where such an address cannot be bound.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Skipf("cannot connect from %s on this host: %v", src, err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// TestHostsBounded: the per-address table does not grow with the number
// of addresses seen, whatever each did (every path that makes an entry
// lets it go), is empty once the windows have passed, and is capped: a
// new address beyond -max-hosts is refused naming the limit, while a
// blocked address is never dropped early to make room.
func TestHostsBounded(t *testing.T) {
	const addrs = 2500
	const step = 100 * time.Millisecond // between two addresses' arrivals
	host := func(i int) string { return fmt.Sprintf("2001:db8::%x", i) }
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, h *hosts, host string)
	}{
		{"port check", func(t *testing.T, h *hosts, host string) {
			require.NoError(t, h.admit(host))
			assert.True(t, h.logLine(host))
			h.release(host)
		}},
		{"failed handshake", func(t *testing.T, h *hosts, host string) {
			require.NoError(t, h.admit(host))
			n, blocked := h.fail(host)
			require.Equal(t, 1, n)
			require.Empty(t, blocked)
			h.logLine(host)
			h.release(host)
		}},
		{"blocked, then refused", func(t *testing.T, h *hosts, host string) {
			for range maxFails {
				require.NoError(t, h.admit(host))
				h.fail(host)
				h.release(host)
			}
			assert.ErrorContains(t, h.admit(host), "failed handshakes from "+host)
			h.logLine(host)
		}},
		{"refused over -max-conns-per-host", func(t *testing.T, h *hosts, host string) {
			require.NoError(t, h.admit(host))
			require.NoError(t, h.admit(host))
			assert.ErrorContains(t, h.admit(host), "(-max-conns-per-host 2)")
			h.logLine(host)
			h.release(host)
			h.release(host)
		}},
		{"session with many lines", func(t *testing.T, h *hosts, host string) {
			require.NoError(t, h.admit(host))
			for range 2 * logBurst {
				h.logLine(host)
			}
			h.release(host)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHosts(2, defaultMaxHosts, 32, 128)
			now := time.Unix(1000, 0)
			h.now = func() time.Time { return now }
			var lastSweep time.Time
			biggest := 0
			for i := range addrs {
				tc.run(t, h, host(i))
				biggest = max(biggest, h.size())
				now = now.Add(step)
				if now.Sub(lastSweep) >= sweepEvery { // as serve does
					h.sweep(false)
					lastSweep = now
				}
			}
			// What one address leaves lasts about failWindow (or
			// logSummaryEvery, or blockFor), plus a sweep.
			bound := int((max(failWindow, blockFor, logSummaryEvery)+2*sweepEvery)/step) + 1
			assert.LessOrEqual(t, biggest, bound, "entries of %d addresses, one every %v", addrs, step)
			assert.Less(t, bound, addrs, "precondition: the bound is below the addresses seen")
			now = now.Add(failWindow + blockFor + logSummaryEvery)
			h.sweep(false)
			assert.Zero(t, h.size(), "the windows have passed")
		})
	}

	t.Run("cap", func(t *testing.T) {
		const limit = 100
		h := newHosts(2, limit, 32, 128)
		now := time.Unix(1000, 0)
		h.now = func() time.Time { return now }
		for i := range limit {
			for range maxFails {
				h.fail(host(i))
			}
		}
		require.Equal(t, limit, h.size())
		err := h.admit("192.0.2.1")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "refused: the peer tracks 100 addresses already")
		assert.Contains(t, err.Error(), "(connections, failed handshakes, blocks; -max-hosts 100)")
		assert.Equal(t, limit, h.size(), "no entry for the refused address")
		h.logLine("192.0.2.1") // counted in the shared bucket, no entry made
		assert.Equal(t, limit, h.size())
		// However many addresses knock, every block holds to its end.
		for i := range 3 * limit {
			require.Error(t, h.admit(fmt.Sprintf("192.0.2.%d", i)))
		}
		now = now.Add(blockFor - time.Second)
		assert.ErrorContains(t, h.admit(host(0)), "failed handshakes from "+host(0), "still blocked")
		assert.ErrorContains(t, h.admit("192.0.2.1"), "-max-hosts 100")
		// Once the blocks and failures are over, the table has room.
		now = now.Add(2 * time.Second)
		require.NoError(t, h.admit("192.0.2.1"))
		assert.Equal(t, 1, h.size(), "the expired entries were dropped to make room")
		h.release("192.0.2.1")
		assert.Zero(t, h.size())
	})

	t.Run("over TCP", func(t *testing.T) {
		f := newFakeDev()
		lim := hostLimits()
		lim.hosts = 1
		addr, srv := startServer(t, f, testToken, lim)
		holder := dialFrom(t, "127.0.0.1", addr)
		require.Eventually(t, func() bool {
			srv.hosts.mu.Lock()
			defer srv.hosts.mu.Unlock()
			return srv.hosts.m["127.0.0.1"] != nil && srv.hosts.m["127.0.0.1"].conns == 1
		}, 5*time.Second, 10*time.Millisecond, "precondition: the first address admitted")
		_, err := handshake(dialFrom(t, "127.0.0.2", addr), testToken)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "oob: peer refused: refused: the peer tracks 1 addresses already")
		assert.Contains(t, err.Error(), "-max-hosts 1)")
		holder.Close()
		require.Eventually(t, func() bool {
			c := dialFrom(t, "127.0.0.2", addr)
			defer c.Close()
			_, err := handshake(c, testToken)
			return err == nil
		}, 5*time.Second, 50*time.Millisecond, "room once the first address's entry expires")
		waitIdle(t, srv, f)
	})
}

// logLines collects a server's log lines.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logf(format string, v ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
	l.mu.Unlock()
}

// count is the number of lines containing s.
func (l *logLines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// TestLogThrottle: a flood of failed handshakes from one address logs a
// burst of lines, then one summary of the rest; another address is still
// logged, and the flooding one again once its bucket has refilled.
func TestLogThrottle(t *testing.T) {
	const attempts = 1000
	f := newFakeDev()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := newServer(f, testToken, hostLimits())
	var logged logLines
	srv.logf = logged.logf
	now := time.Unix(1000, 0) // frozen: no token comes back during the flood
	var clock sync.Mutex
	srv.hosts.now = func() time.Time { clock.Lock(); defer clock.Unlock(); return now }
	srv.hosts.maxFails = attempts + 10 // every attempt reaches the handshake
	srv.hosts.prefixMaxFails = attempts + 10
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, srv) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("serve did not return within 10 s of its end")
		}
	})
	addr := ln.Addr().String()

	for range attempts {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		_, err = handshake(c, "0123456789abcdef-guess")
		c.Close()
		require.ErrorContains(t, err, "oob: peer refused") // authentication failed, or too many connections at once
	}
	// Each attempt's one line was written before its client heard the
	// refusal: all are counted.
	assert.Equal(t, logBurst, logged.count("127.0.0.1:"), "the burst, no more")
	srv.hosts.mu.Lock()
	require.NotNil(t, srv.hosts.m["127.0.0.1"])
	assert.Equal(t, attempts-logBurst, srv.hosts.m["127.0.0.1"].log.suppressed)
	srv.hosts.mu.Unlock()

	_, err = handshake(dialFrom(t, "127.0.1.2", addr), "0123456789abcdef-guess")
	require.ErrorContains(t, err, "authentication failed")
	assert.Equal(t, 1, logged.count("127.0.1.2:"), "an address of another prefix is logged")

	clock.Lock()
	now = now.Add(logSummaryEvery)
	clock.Unlock()
	summary := fmt.Sprintf("%d lines from 127.0.0.1 suppressed", attempts-logBurst)
	require.Eventually(t, func() bool { return logged.count(summary) == 1 }, 5*time.Second, 20*time.Millisecond,
		"the summary is logged at the next sweep")
	_, err = handshake(dial(t, addr), "0123456789abcdef-guess")
	require.ErrorContains(t, err, "authentication failed")
	assert.Equal(t, logBurst+1, logged.count("127.0.0.1:"), "logged again once the bucket refilled")
	assert.Equal(t, 1, logged.count("127.0.0.1 suppressed"), "one summary")
}

// TestSetupConcurrent: one client's Setup that is slow on the device (its
// open blocks) does not hold another client's.
func TestSetupConcurrent(t *testing.T) {
	f := newFakeDev()
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	f.openHook = func(req *oob.Setup) error {
		if req.Scenario.Role != "target" {
			return nil
		}
		entered <- struct{}{}
		select {
		case <-release:
			return nil
		case <-time.After(10 * time.Second):
			return errors.New("fake: the slow open was never released")
		}
	}
	addr, srv := startServer(t, f, testToken, hostLimits())
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock) // before the server's cleanup, on any failure

	slow := dialAuth(t, addr, testToken)
	slowDone := make(chan error, 1)
	go func() { slowDone <- setup(slow, targetSetup(1, 64)) }()
	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("precondition: the slow Setup did not reach the device")
	}
	fast := dialAuth(t, addr, testToken)
	fastDone := make(chan error, 1)
	go func() { fastDone <- setup(fast, writeEchoSetup()) }()
	select {
	case err := <-fastDone:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the second client's Setup waited for the first one's device work")
	}
	select {
	case err := <-slowDone:
		t.Fatalf("precondition: the slow Setup ended before it was released: %v", err)
	default:
	}
	unblock()
	select {
	case err := <-slowDone:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the slow Setup did not end once released")
	}
	opened, _, _ := f.state()
	assert.Equal(t, 2, opened)
	slow.Close()
	fast.Close()
	waitIdle(t, srv, f)
}

// TestWriteRPCCost: role write-rpc's second side (the responses' UD QP)
// counts against every budget: a QP, its queues, its CQ and its slots.
func TestWriteRPCCost(t *testing.T) {
	f := newFakeDev()
	req := writeRPCSetup()
	one := *req
	one.Scenario.Role, one.Scenario.RPC, one.Resp = "target", nil, nil
	c, c1 := peer.SetupCost(req, f.lim), peer.SetupCost(&one, f.lim)
	assert.Equal(t, 2, c.Sides)
	assert.Equal(t, 2, c.QPs)
	assert.Equal(t, 2*c1.WRs, c.WRs)
	assert.Equal(t, 2*c1.CQEs, c.CQEs)
	assert.Greater(t, c.Registered, c1.Registered, "the response side's slots (UD: a GRH more)")
	assert.Greater(t, costOf(req, f.lim).Mem, costOf(&one, f.lim).Mem)
}

// TestRingMemory: -max-mem and -total-mem count the queue rings (send and
// receive queues or SRQ, CQ) as estimated by ringBytes; a Setup whose
// buffers fit but whose rings do not is refused naming the value and the
// limit.
func TestRingMemory(t *testing.T) {
	f := newFakeDev()
	inline := func() *oob.Setup { r := writeEchoSetup(); r.Scenario.Inline = 512; return r }
	t.Run("estimate", func(t *testing.T) {
		if os.Getpagesize() != 4096 {
			t.Skipf("the values below are for 4 KiB pages, not %d", os.Getpagesize())
		}
		for _, tc := range []struct {
			name  string
			req   *oob.Setup
			rings int64
		}{
			// send ring: 8 slots × 256 B; receive: 2 × 64 B; CQ (5 CQEs): 8 × 128 B; a page each
			{"target, 1 QP, depths 4 and 1", targetSetup(1, 64), 3 * 4096},
			// send: 128 × 256 B; receive: a page; CQ (65): 128 × 128 B
			{"write-echo, send depth 64", writeEchoSetup(), 32768 + 4096 + 16384},
			// send: 128 × 1024 B (208 + 512 rounded up)
			{"write-echo, inline 512", inline(), 131072 + 4096 + 16384},
			// send: 4 × 128 × 256 B; one SRQ: 1024 × 64 B; CQ (2800): 4096 × 128 B
			{"sink, 4 QPs, SRQ", &oob.Setup{Scenario: oob.Scenario{Op: "SEND", Transport: "RC", Role: "sink", Size: 64, QPs: 4,
				SendDepth: 100, RecvDepth: 600, SlotSize: 64, SRQ: true}}, 131072 + 65536 + 524288},
			// two sides (requests RC, responses UD), each: send 16 × 256 B, receive 2 × 64 B, CQ (9) 16 × 128 B
			{"write-rpc, send depth 8", writeRPCSetup(), 2 * 3 * 4096},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := peer.SetupCost(tc.req, f.lim)
				assert.Equal(t, tc.rings, ringBytes(tc.req, c))
				assert.GreaterOrEqual(t, ringBytes(tc.req, c), c.Inline, "the rings hold the inline space")
				assert.Equal(t, c.Registered+tc.rings, costOf(tc.req, f.lim).Mem)
			})
		}
	})

	req := inline() // its buffers are small, its send ring is not
	c := peer.SetupCost(req, f.lim)
	need := c.Registered + ringBytes(req, c)
	require.Less(t, c.Registered+c.Inline, need-1, "precondition: the buffers and inline space fit below the limit")
	for _, tc := range []struct {
		name          string
		client, total int64
		want          string // "" = accepted
	}{
		{"rings over -max-mem", need - 1, 1 << 30,
			fmt.Sprintf("memory bytes (registered + queue rings) %d exceeds this peer's limit %d per client (-max-mem)", need, need-1)},
		{"rings at -max-mem", need, 1 << 30, ""},
		{"rings over -total-mem", need, need - 1,
			fmt.Sprintf("memory bytes (registered + queue rings): 0 in use by other clients + %d asked exceeds this peer's total %d (-total-mem)", need, need-1)},
		{"rings at -total-mem", need, need, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := hostLimits()
			lim.client.Mem, lim.total.Mem = tc.client, tc.total
			addr, srv := startServer(t, f, testToken, lim)
			c := dialAuth(t, addr, testToken)
			err := setup(c, inline())
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, need, srv.pool.inUse().Mem)
			} else {
				var pe *oob.PeerError
				require.ErrorAs(t, err, &pe)
				assert.Contains(t, err.Error(), tc.want)
			}
			c.Close()
			waitIdle(t, srv, f)
		})
	}
}

// TestHostileStop: a Stop whose fields are of the wrong type or beyond
// their range (times not a boolean, a field the peer does not know,
// expect beyond any count) ends that session with an error or, for a
// huge expect, is served within the sink's bounded settle; the daemon
// serves the next client and every session releases everything.
func TestHostileStop(t *testing.T) {
	f := newFakeDev()
	addr, srv := startServer(t, f, testToken, hostLimits())
	for _, tc := range []struct {
		name, stop string
		want       string // "" = answered with Stopped
	}{
		{"times not a boolean", `{"times":"yes"}`, "payload"},
		{"unknown field", `{"times":true,"shell":"rm"}`, "unknown field"},
		{"expect beyond any count", `{"expect":18446744073709551615,"times":true}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialAuth(t, addr, testToken)
			require.NoError(t, setup(c, writeEchoSetup()))
			require.NoError(t, oob.WriteFrame(c, oob.MsgStart, &oob.Start{}))
			require.NoError(t, oob.Decode(c, oob.MsgStarted, &oob.Started{}))
			require.NoError(t, oob.WriteFrame(c, oob.MsgStop, json.RawMessage(tc.stop)))
			err := oob.Decode(c, oob.MsgStopped, &oob.Stopped{})
			if tc.want == "" {
				require.NoError(t, err)
			} else {
				var pe *oob.PeerError
				require.ErrorAs(t, err, &pe)
				assert.Contains(t, pe.Msg, tc.want)
			}
			fullSession(t, addr)
			waitIdle(t, srv, f)
		})
	}
}
