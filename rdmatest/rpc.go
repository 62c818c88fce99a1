package rdmatest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

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
// a posted receive for its response (RecvDepth 512, reposted 64 at a
// time) and room in the send queues.
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
	if err := s.CheckLimits(d, false); err != nil {
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
// requests and responses). An iteration is one RPC completed: the client
// waits for a response and sends the next request in the freed slot.
// Reported: p50-ns … max-ns of the full round trip (not halved) from
// just before the request's post call until the poll that returned its
// response; msgs/s = RPCs completed per second; MB/s = request payload
// bytes per second. It runs with both sides in this process only.
func EchoRPC(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	s.defaults()
	if d.Opts.Peer != "" {
		b.Skip(unsupported("the echo RPC server runs in this process, not in a remote peer (-rdma.peer)"))
	}
	if err := s.CheckRPC(d.Limits()); err != nil {
		skipOrFail(b, err)
	}
	if err := checkProcs(2); err != nil { // client and server
		b.Skip(err)
	}
	timeout := d.Opts.Timeout
	stride := (s.Size + 63) &^ 63
	cfg := PairConfig{Transport: s.Transport, SlotSize: s.QD * stride, SendDepth: 2 * s.QD}
	if s.Inline {
		cfg.Inline = s.Size
	}
	req := NewPair(b, d, cfg)
	c := &rpcClient{s: &s, window: s.QD, stride: stride, gen: make([]uint8, s.QD), sentAt: make([]time.Time, s.QD)}
	var resp *responder
	var err error
	if s.Op == verbs.OpWrite {
		cfg.Transport = verbs.TransportUD
		rp := NewPair(b, d, cfg)
		c.rx = newReceiver(rp.A, s.Size+grhBytes)
		c.respPoll = NewPoller(rp.A, 16, timeout)
		c.reqPoll = NewPoller(req.A, 16, timeout)
		resp = serveWriteRPC(req.B, rp.B, &s, stride, timeout)
	} else {
		c.rx = newReceiver(req.A, recvBytes(&s))
		c.respPoll = NewPoller(req.A, 16, timeout)
		c.reqPoll = c.respPoll
		cfg, _ := serveConfig(req.B, &s, "echo", req.Cfg.RecvDepth, timeout)
		resp, err = startServe(cfg, d.loopCPUs(2)[1])
	}
	if err == nil {
		err = c.rx.fill(req.Cfg.RecvDepth)
	}
	if err != nil {
		resp.Stop()
		b.Fatal(err)
	}
	defer resp.Stop()
	c.sq = newSendQueue(req.A.QPs[0], sendWR(&s, req.A, 0), cfg.SendDepth)
	c.out, c.outAddr, c.base = req.A.OutBytes(0), req.A.Out(0, 1).Addr, req.A.Peer[0].Addr
	c.pend = make([]rpcResponse, 0, s.QD)
	c.onResp = func(wc *verbs.WC) { c.pend = append(c.pend, rpcResponse{tag: wc.Imm, at: time.Now()}) }

	// Fill the window, then complete one round (untimed, unrecorded): the
	// first pass pays one-time costs that are not the RPC's.
	for k := range c.window {
		if err := c.send(k); err != nil {
			resp.fatal(b, err)
		}
	}
	if _, err := c.complete(); err != nil {
		resp.fatal(b, err)
	}
	before := beforeRun(b, d)
	rec := NewRecorder()
	b.SetBytes(int64(s.Size))
	b.ReportAllocs()
	for b.Loop() {
		ns, err := c.complete()
		if err != nil {
			resp.fatal(b, err)
		}
		rec.Record(ns)
	}
	before.end() // b.Loop has stopped the timer
	// The window's last requests: wait for their responses (untimed), so
	// that every request of the run was answered.
	if err := c.drain(); err != nil {
		resp.fatal(b, err)
	}
	if err := resp.Stop(); err != nil {
		b.Fatal(err)
	}
	ReportLatency(b, rec)
	ReportRate(b, b.N)
	before.report(b, d, int64(b.N))
}

// rpcResponse is a response seen by the client: its tag and when the poll
// that returned it came back.
type rpcResponse struct {
	tag uint32
	at  time.Time
}

// rpcClient is the client of an echo RPC run.
type rpcClient struct {
	s                 *Spec
	window, stride    int
	sq                *sendQueue // requests
	reqPoll, respPoll *Poller    // the same poller when requests and responses share the CQ
	rx                *receiver  // the responses' receives
	out               []byte     // the client's request slots
	outAddr           uint64     // their address
	base              uint64     // the server's request region (RDMA WRITE)
	gen               []uint8    // per slot: the generation of its outstanding request (0: none)
	sentAt            []time.Time
	pend              []rpcResponse // responses polled, not yet taken
	onResp            func(*verbs.WC)
}

// send posts the next request of slot k (first making room in the send
// queue, if it is full, from the requests' completions).
func (c *rpcClient) send(k int) error {
	if err := c.sq.makeRoom(c.reqPoll, c.onResp); err != nil {
		return err
	}
	c.gen[k] = max(c.gen[k]+1, 1) // 1 … 255, then 1 again
	tag := uint32(k) | uint32(c.gen[k])<<16
	off := k * c.stride
	wr := &c.sq.wr[0]
	wr.SGE[0].Addr = c.outAddr + uint64(off)
	if c.s.Op == verbs.OpWrite {
		wr.RemoteAddr = c.base + uint64(off)
		c.out[off+c.s.Size-1] = c.gen[k]
	} else {
		wr.Imm = tag
	}
	c.sentAt[k] = time.Now()
	return c.sq.post()
}

// take returns the next response's slot and round trip, waiting for one
// if none is pending, and checks its tag.
func (c *rpcClient) take() (int, int64, error) {
	for len(c.pend) == 0 {
		wcs, err := c.respPoll.Wait("the response of an echo RPC (a receive completion on the client)", c.window)
		if err != nil {
			return 0, 0, err
		}
		c.sq.handle(wcs, c.onResp)
	}
	r := c.pend[0]
	c.pend = append(c.pend[:0], c.pend[1:]...)
	k := int(r.tag & 0xffff)
	if k >= c.window || c.gen[k] == 0 || r.tag>>16 != uint32(c.gen[k]) {
		return 0, 0, fmt.Errorf("rdmatest: an echo RPC response carries tag %#x, which no outstanding request has", r.tag)
	}
	if err := c.rx.consumed(0); err != nil {
		return 0, 0, err
	}
	return k, r.at.Sub(c.sentAt[k]).Nanoseconds(), nil
}

// complete waits for one response and sends the next request in its slot;
// it returns the response's round trip.
func (c *rpcClient) complete() (int64, error) {
	k, ns, err := c.take()
	if err != nil {
		return 0, err
	}
	return ns, c.send(k)
}

// drain waits for the responses of the whole window.
func (c *rpcClient) drain() error {
	for range c.window {
		k, _, err := c.take()
		if err != nil {
			return err
		}
		c.gen[k] = 0
	}
	return nil
}

// serveWriteRPC is the server of an echo RPC over RDMA WRITE: it sweeps
// the request slots of reqSide's "in" region for a nonzero last byte,
// copies the request into respSide's response slot, clears that byte and
// answers with a UD SEND_WITH_IMM from respSide carrying the tag.
func serveWriteRPC(reqSide, respSide *Side, s *Spec, stride int, timeout time.Duration) *responder {
	in, out := reqSide.InBytes(0), respSide.OutBytes(0)
	wr := verbs.SendWR{Op: verbs.OpSendImm, NumSGE: 1, UD: respSide.Peer[0].Dest}
	wr.SGE[0] = respSide.Out(0, s.Size)
	if s.Inline {
		wr.Flags |= verbs.FlagInline
	}
	base := wr.SGE[0].Addr
	sq := newSendQueue(respSide.QPs[0], wr, respSide.depth)
	poll := NewPoller(respSide, 16, timeout)
	return startResponder(timeout, func(stop *atomic.Bool) error {
		var sp spinner
		for !stop.Load() {
			sp.spin()
			for k := range s.QD {
				off := k * stride
				last := off + s.Size - 1
				gen := loadByte(in, last)
				if gen == 0 {
					continue
				}
				copy(out[off:off+s.Size], in[off:off+s.Size])
				in[last] = 0
				tag := uint32(k) | uint32(gen)<<16
				if err := sq.makeRoom(poll, nil); err != nil {
					return fmt.Errorf("rdmatest: echo RPC server: %w", err)
				}
				sq.wr[0].SGE[0].Addr = base + uint64(off)
				sq.wr[0].Imm = tag
				if err := sq.post(); err != nil {
					return fmt.Errorf("rdmatest: echo RPC server answering: %w", err)
				}
			}
		}
		return nil
	})
}

// loadByte reads b[i] with an atomic load, so that a spin on memory the
// NIC writes sees every update (b is mmap'd, 64-byte aligned; little
// endian assumed, as on amd64 and arm64).
func loadByte(b []byte, i int) byte {
	w := (*uint32)(unsafe.Pointer(&b[i&^3]))
	return byte(atomic.LoadUint32(w) >> (8 * (i & 3)))
}
