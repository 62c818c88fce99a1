package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// Echo RPCs in the style of HERD (Kalia et al., SIGCOMM'14; rdma_bench
// ws-echo and ss-echo, ATC'16 §4): the client keeps a window of requests
// outstanding, the server answers each with a UD SEND.
//
// Every request has a tag, k | gen<<16, where k is its window slot and
// gen counts the slot's requests (1 … 255, then 1 again). With Op =
// RDMA_WRITE (over UC, as HERD, or RC) the client writes the request's
// Size bytes into slot k of the server's request region, the last byte
// being gen; the server sweeps the slots' last bytes, as HERD's server
// does (like HERD, this relies on the payload landing in address order,
// so that a nonzero last byte means the whole request is there; the
// server clears it before answering). With Op = SEND_WITH_IMM over UD the
// request travels as a datagram whose immediate is the tag. The server
// answers with a UD SEND_WITH_IMM of Size bytes back to the client, the
// tag in the immediate: over WRITE the request's bytes, copied by the
// server CPU into its response buffer; over UD SEND the bytes of its
// receive buffer. The client checks that every response's tag is the one
// of an outstanding request.

// maxWindow bounds an echo RPC's window: every outstanding request needs
// a posted receive for its response (RecvDepth 512 ≥ window + 64, the
// receives waiting to be reposted) and room in the send queues.
const maxWindow = 256

// CheckRPC validates an echo RPC spec against a device's limits (see
// EchoRPC): the verb checks of CheckLimits for the request, the window
// (QD, at most 256), a response that fits one UD datagram.
func (s Spec) CheckRPC(d Limits) error {
	s.defaults()
	switch {
	case s.Op == verbs.OpWrite && (s.Transport == verbs.TransportRC || s.Transport == verbs.TransportUC):
	case s.Op == verbs.OpSendImm && s.Transport == verbs.TransportUD:
	default:
		return unsupported("echo RPC requests go over RDMA_WRITE (RC or UC) or SEND_WITH_IMM (UD), not %s over %s", s.Op, s.Transport)
	}
	if s.Batch != 1 || s.Signal != 1 || s.Event || s.SRQ || s.Bidir || s.Inbound || s.Threads != 0 || s.HeaderOnly || s.QPs != 1 {
		return fmt.Errorf("rdmatest: echo RPCs take a verb, transport, size, window (qd) and inline only: batch %d, signal %d, qps %d, event, srq, bidir, inbound, threads and header-only do not apply",
			s.Batch, s.Signal, s.QPs)
	}
	s.Kind = KindRPC
	if err := s.CheckLimits(d); err != nil {
		return err
	}
	if s.QD > maxWindow {
		return fmt.Errorf("rdmatest: echo RPC window (qd) %d exceeds %d", s.QD, maxWindow)
	}
	if 2*s.QD > d.Attr.MaxQPWR {
		return fmt.Errorf("rdmatest: echo RPC window (qd) %d needs send queues of 2 × %d WRs, above %s's max_qp_wr %d", s.QD, s.QD, d.Device, d.Attr.MaxQPWR)
	}
	if mtu := d.PortAttr.ActiveMTU; s.Size > mtu {
		return unsupported("echo RPC response size %d (a UD datagram) exceeds the path MTU %d", s.Size, mtu)
	}
	return nil
}

// EchoRPC measures HERD-style echo RPCs (see above): spec s gives the
// request verb and transport (RDMA_WRITE over UC or RC, SEND_WITH_IMM
// over UD), Size, the window QD (requests outstanding) and Inline (for
// requests and responses). Client and server are C loops (verbs.NewRPC,
// and ServeRecvEcho or ServeWriteRPC), each on a thread pinned to its own
// CPU. The client fills the window, completes one window of RPCs and
// takes their responses (untimed, nothing left outstanding); in the timed
// region it fills the window again and completes b.N RPCs — each: wait
// for a response, check its tag, send the next request in the freed
// slot — so that every sample is of a request posted in the timed
// region; then it takes the window's last responses (untimed), so that
// every request was answered. Reported: p50-ns … max-ns of the full
// round trip (not halved) from just before the request's post call
// until the poll that returned its response; msgs/s = RPCs completed per
// second of the loop's own clock. Against a remote peer (-rdma.peer)
// the peer runs the same server loops: its echo role over UD (each
// request's bytes and immediate sent back), its write-rpc role over
// RDMA_WRITE (the requests swept from its memory, the responses sent
// from a UD QP of its own to the client's, whose endpoints the session's
// Setup and SetupOK carry).
func EchoRPC(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	takeTurn(b)
	// Every check that can skip runs before the probe: testing reports
	// only the first call's skip (probe.go).
	skipCM(b, d, &s)
	s.Kind = KindRPC
	s.defaults()
	if err := s.CheckRPC(d.Limits()); err != nil {
		skipOrFail(b, err)
	}
	busy := 2 // client and server
	if d.Opts.Peer != "" {
		busy = 1 // the server is the peer's
	}
	if err := checkProcs(busy); err != nil {
		b.Skip(err)
	}
	if probeCall(b) {
		return // testing discards this call (probe.go)
	}
	b.ReportAllocs()
	cpus := d.cpus.ForLoops(2)
	c, resp, release := newEchoRPC(b, d, &s, int64(b.N), cpus[1])
	defer release()
	// Fill the window, complete one window of RPCs and take their
	// responses (untimed, unrecorded): the first pass pays one-time costs
	// that are not the RPC's.
	if err := c.Warm(int64(s.QD)); err != nil {
		resp.fatal(b, err)
	}
	res, rec, before := measure(b, d, c, cpus[0], resp, c.Drain)
	hist.ReportLatencyHeld(b, rec)
	reportLoopRate(b, "msgs/s", res.Ops, res.Elapsed())
	before.report(b, d, int64(b.N))
}

// newEchoRPC builds an echo RPC run of n RPCs of s (checked): its pairs,
// the server started on cpu and the client loop, not yet warmed.
// release stops and frees them all, the loop first.
func newEchoRPC(tb testing.TB, d *Dev, s *Spec, n int64, cpu int) (client *verbs.Loop, resp *responder, release func()) {
	tb.Helper()
	var undo []func()
	release = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	timeout := d.Opts.Timeout
	stride := rpcStride(s)
	cfg := rpcPairConfig(s)
	req := NewPair(tb, d, cfg)
	undo = append(undo, func() { req.close() })
	cc := verbs.RPCConfig{QP: req.A.QPs[0], ReqCQ: req.A.CQ, RespCQ: req.A.CQ, WR: sendWR(s, req.A, 0),
		Out: req.A.outByte(0, 0), Window: s.QD, Stride: stride, Size: s.Size, RecvQP: req.A.QPs[0],
		Recv: req.A.In(0, recvBytes(s)), RecvDepth: req.Cfg.RecvDepth, SendDepth: cfg.SendDepth,
		RPCs: n, Timeout: timeout, Hist: histGeometry}
	var server verbs.ServeConfig
	switch {
	case req.remote != nil && s.Op == verbs.OpWrite: // the peer's write-rpc role answers on its UD QP
		rp := req.rpcResp
		cc.RespCQ, cc.RecvQP, cc.Recv = rp.CQ, rp.QPs[0], rp.In(0, s.Size+grhBytes)
	case s.Op == verbs.OpWrite:
		// Responses come back over UD, on a pair of their own.
		cfg.Transport = verbs.TransportUD
		rp := NewPair(tb, d, cfg)
		undo = append(undo, func() { rp.close() })
		cc.RespCQ, cc.RecvQP, cc.Recv = rp.A.CQ, rp.A.QPs[0], rp.A.In(0, s.Size+grhBytes)
		server = writeRPCServe(req.B, rp.B, s, stride, timeout)
	case req.remote == nil:
		server, _ = serveConfig(req.B, s, roleEcho, req.Cfg.RecvDepth, timeout)
	}
	var err error
	if req.remote != nil { // the peer's echo or write-rpc role
		resp, err = req.startPassive(s, cpu)
	} else {
		resp, err = startServe(server, cpu)
	}
	if err != nil {
		release()
		tb.Fatal(err)
	}
	undo = append(undo, func() { resp.Stop() })
	client, err = verbs.NewRPC(cc)
	if err != nil {
		release()
		fatal(tb, err)
	}
	undo = append(undo, func() { client.Close() })
	return client, resp, release
}

// rpcPairConfig is the request pair of an echo RPC run of s (the
// response pair, over UD, has the same sizes): a slot holds the window's
// requests, the send queue two windows.
func rpcPairConfig(s *Spec) PairConfig {
	cfg := PairConfig{Transport: s.Transport, SlotSize: s.QD * rpcStride(s), SendDepth: 2 * s.QD, Spec: s}
	if s.Inline {
		cfg.Inline = s.Size
	}
	return cfg
}

// rpcStride is the bytes between an echo RPC's request slots: the size
// rounded up to 64 (a cache line).
func rpcStride(s *Spec) int { return (s.Size + 63) &^ 63 }

// writeRPCServe is the echo RPC server over RDMA_WRITE: it sweeps s.QD
// request slots of stride bytes in req's "in" slot and answers each from
// resp's "out" slot over resp's UD QP, to resp's peer (see EchoRPC).
// The local server and a peer's write-rpc role are this one loop.
func writeRPCServe(req, resp *Side, s *Spec, stride int, timeout time.Duration) verbs.ServeConfig {
	wr := verbs.SendWR{Op: verbs.OpSendImm, NumSGE: 1, UD: resp.Peer[0].Dest}
	wr.SGE[0] = resp.Out(0, s.Size)
	if s.Inline {
		wr.Flags |= verbs.FlagInline
	}
	return verbs.ServeConfig{Mode: verbs.ServeWriteRPC, CQ: resp.CQ, QPs: resp.QPs, WR: wr, SendDepth: resp.depth,
		Req: req.inByte(0, 0), Resp: resp.outByte(0, 0), Window: s.QD, Stride: stride, Size: s.Size,
		Timeout: timeout, Idle: timeout}
}
