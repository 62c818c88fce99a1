//go:build linux && cgo

package verbs

/*
#cgo CFLAGS: -O2 -Wall -Wextra -Werror
#include <stdlib.h>
#include "loop.h"

static void rb_ping_set_wr(rb_ping *p, const rb_send_wr *w) { rb_fill_send_wr(&p->wr, &p->sge, w); }
static void rb_serve_set_wr(rb_serve *s, const rb_send_wr *w) { rb_fill_send_wr(&s->wr, &s->sge, w); }
static void rb_sq_set_wr(rb_sq *q, int i, const rb_send_wr *w) { rb_fill_send_wr(&q->wrs[i], &q->sges[4 * i], w); }
static void rb_sq_set_marker(rb_sq *q, const rb_send_wr *w) { rb_fill_send_wr(&q->marker, &q->marker_sge, w); }
static void rb_rpc_set_wr(rb_rpc *r, const rb_send_wr *w) { rb_fill_send_wr(&r->wr, &r->sge, w); }
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// recvBatch (loop.go) is loop.h's RB_RBATCH: this builds only when they
// are equal.
var _ = [1]struct{}{}[recvBatch-C.RB_RBATCH]

// Loop is a timed loop built in C memory (see NewPing, NewServe,
// NewStream). Run runs it once; Stop may be called from any goroutine;
// Close frees it, after Run has returned.
type Loop struct {
	dev     *Device // the device of its QPs (StopLoops)
	kind    string
	id      uint64
	timeout time.Duration

	ctl    *C.rb_ctl
	hist   *C.rb_hist // nil for a passive side
	ping   *C.rb_ping
	serve  *C.rb_serve
	stream *C.rb_stream
	rpc    *C.rb_rpc
	prog   *C.rb_prog
	steps  []Step           // a program's steps (naming a failing one)
	slow   float64          // the self-check build's slowdown (slow_cgo.go); 0 otherwise
	frees  []unsafe.Pointer // C allocations, freed by Close

	mu      sync.Mutex
	running bool
	ran     bool
	done    chan struct{} // closed when the running C call (Run, Warm, Drain) returns
	// runPrev and runNext link the loop into its device's running set
	// (loopSet) while a C call runs.
	runPrev, runNext *Loop
}

// alloc returns n zeroed elements of size bytes in C memory, every page
// faulted in, freed by Close.
func (l *Loop) alloc(n, size int) unsafe.Pointer {
	p := C.calloc(C.size_t(n), C.size_t(size))
	if p == nil {
		panic("verbs: out of C memory")
	}
	// Touch every page now: fresh pages of a large calloc would fault in
	// on first use, inside the timed loop (the histogram's 200 KB).
	mem := unsafe.Slice((*byte)(p), n*size)
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 0
	}
	l.frees = append(l.frees, p)
	return p
}

func (l *Loop) setHist(h *C.rb_hist, g HistGeometry) {
	setHist(h, g, l.alloc(g.countsLen, 8))
	l.hist = h
}

// setHist gives h the geometry g and the counts array counts (CountsLen
// zeroed entries, in C memory).
func setHist(h *C.rb_hist, g HistGeometry, counts unsafe.Pointer) {
	h.counts = (*C.int64_t)(counts)
	h.len = C.int64_t(g.countsLen)
	h.sub_bucket_mask = C.int64_t(g.subBucketMask)
	h.unit_magnitude = C.int32_t(g.unitMagnitude)
	h.half_count_magnitude = C.int32_t(g.halfCountMagnitude)
	h.half_count = C.int64_t(g.halfCount)
	h.lowest, h.highest = C.int64_t(g.Lowest), C.int64_t(g.Highest)
}

func cSendWR(w *SendWR) *C.rb_send_wr { return (*C.rb_send_wr)(unsafe.Pointer(w)) }

// newRQ builds one receive ring per QP (or one for the SRQ) and posts
// depth receives on each.
func (l *Loop) newRQ(qps []*QP, srq *SRQ, sges []SGE, depth int) (*C.rb_rq, C.int32_t, error) {
	n := len(qps)
	if srq != nil {
		n = 1
	}
	rqs := (*C.rb_rq)(l.alloc(n, int(C.sizeof_rb_rq)))
	for i := range n {
		r := (*C.rb_rq)(unsafe.Add(unsafe.Pointer(rqs), i*int(C.sizeof_rb_rq)))
		var csrq *C.struct_ibv_srq
		if srq != nil {
			csrq = srq.c.srq
		}
		sge := sges[i]
		C.rb_rq_init(r, qps[i].c.qp, csrq, C.uint64_t(sge.Addr), C.uint32_t(sge.Length), C.uint32_t(sge.LKey), C.uint64_t(i))
		if C.rb_rq_fill(l.ctl, r, C.int(depth)) != 0 {
			return nil, 0, l.err()
		}
	}
	return rqs, C.int32_t(n), nil
}

// start finishes a built loop on dev (whose StopLoops ends it): uses are
// the objects its C code touches (0s are skipped), the first two its
// owners (the QP and CQ it was created from); none of them closes while
// the loop is open.
func (l *Loop) start(dev *Device, kind string, timeout time.Duration, uses ...uint64) {
	l.dev, l.kind, l.timeout = dev, kind, timeout
	l.ctl.timeout_ns = C.int64_t(timeout.Nanoseconds())
	l.id = trackUses(KindLoop, uses, uses[:min(2, len(uses))]...)
}

// bufID is the ID of the buffer b points into (0: none).
func (b ByteAt) bufID() uint64 {
	if b.Buf == nil {
		return 0
	}
	return b.Buf.id
}

// NewPing builds the requester of a latency loop (see PingConfig). For
// PingRecv it posts the receives now.
func NewPing(cfg PingConfig) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := &Loop{}
	p := (*C.rb_ping)(l.alloc(1, int(C.sizeof_rb_ping)))
	l.ping, l.ctl = p, &p.ctl
	l.setHist(&p.hist, cfg.Hist)
	setHist(&p.cycle, cfg.Hist, l.alloc(cfg.Hist.countsLen, 8))
	if cfg.SignalAll {
		p.signal_all = 1
	}
	p.cq, p.qp = cfg.CQ.c.cq, cfg.QP.c.qp
	if cfg.CQ.ch != nil {
		p.ch = cfg.CQ.ch.c.ch
	}
	wr := cfg.WR
	C.rb_ping_set_wr(p, cSendWR(&wr))
	p.mode, p.send_depth = C.int32_t(cfg.Mode), C.int32_t(cfg.SendDepth)
	if cfg.Halve {
		p.halve = 1
	}
	p.iters, p.warmup, p.gap_ns = C.int64_t(cfg.Iters), C.int64_t(cfg.Warmup), C.int64_t(cfg.Gap.Nanoseconds())
	var err error
	switch cfg.Mode {
	case PingWrite:
		var in, out unsafe.Pointer
		if in, err = cfg.InLast.addr("ping loop's InLast", 1); err == nil {
			out, err = cfg.OutLast.addr("ping loop's OutLast", 1)
		}
		p.in_last, p.out_last = (*C.uint8_t)(in), (*C.uint8_t)(out)
	case PingRecv:
		p.rq, _, err = l.newRQ([]*QP{cfg.QP}, nil, []SGE{cfg.Recv}, cfg.RecvDepth)
	}
	if err == nil && (cfg.WR.Op == OpFetchAdd || cfg.WR.Op == OpCmpSwap) {
		var res unsafe.Pointer
		res, err = cfg.Result.addr("ping loop's Result", 8)
		p.result = (*C.uint64_t)(res)
		p.atomic = C.RB_ATOMIC_FADD
		if cfg.WR.Op == OpCmpSwap {
			p.atomic = C.RB_ATOMIC_CSWAP
		}
	}
	if err != nil {
		l.free()
		return nil, err
	}
	l.start(cfg.QP.device(), "ping", cfg.Timeout, cfg.QP.id, cfg.CQ.id, cfg.InLast.bufID(), cfg.OutLast.bufID(), cfg.Result.bufID())
	return l, nil
}

// NewServe builds a passive side (see ServeConfig) and posts its receives.
func NewServe(cfg ServeConfig) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := &Loop{}
	s := (*C.rb_serve)(l.alloc(1, int(C.sizeof_rb_serve)))
	l.serve, l.ctl = s, &s.ctl
	s.cq, s.mode, s.qp = cfg.CQ.c.cq, C.int32_t(cfg.Mode), cfg.QPs[0].c.qp
	s.idle_ns = C.int64_t(cfg.Idle.Nanoseconds())
	var err error
	if cfg.Mode != ServeSink {
		wr := cfg.WR
		C.rb_serve_set_wr(s, cSendWR(&wr))
		s.send_depth = C.int32_t(cfg.SendDepth)
	}
	if cfg.SignalAll {
		s.signal_all = 1
	}
	switch cfg.Mode {
	case ServeWriteEcho:
		var in, out unsafe.Pointer
		if in, err = cfg.InLast.addr("serve loop's InLast", 1); err == nil {
			out, err = cfg.OutLast.addr("serve loop's OutLast", 1)
		}
		s.in_last, s.out_last = (*C.uint8_t)(in), (*C.uint8_t)(out)
	case ServeWriteRPC:
		span := (cfg.Window-1)*cfg.Stride + cfg.Size
		var req, resp unsafe.Pointer
		if req, err = cfg.Req.addr("serve loop's request slots", span); err == nil {
			resp, err = cfg.Resp.addr("serve loop's response slots", span)
		}
		s.req, s.resp, s.resp_addr = (*C.uint8_t)(req), (*C.uint8_t)(resp), C.uint64_t(cfg.WR.SGE[0].Addr)
		s.window, s.stride, s.size = C.int32_t(cfg.Window), C.int32_t(cfg.Stride), C.int32_t(cfg.Size)
	default:
		s.rq, s.nrq, err = l.newRQ(cfg.QPs, cfg.SRQ, cfg.Recv, cfg.RecvDepth)
		// Every posted receive may need an answer queued.
		s.imm_cap = C.int32_t(int(s.nrq) * cfg.RecvDepth)
		s.imms = (*C.uint32_t)(l.alloc(int(s.imm_cap), 4))
	}
	if err != nil {
		l.free()
		return nil, err
	}
	uses := []uint64{cfg.QPs[0].id, cfg.CQ.id, cfg.InLast.bufID(), cfg.OutLast.bufID(), cfg.Req.bufID(), cfg.Resp.bufID()}
	for _, qp := range cfg.QPs[1:] {
		uses = append(uses, qp.id)
	}
	if cfg.SRQ != nil {
		uses = append(uses, cfg.SRQ.id)
	}
	l.start(cfg.QPs[0].device(), "serve", cfg.Timeout, uses...)
	return l, nil
}

// NewStream builds the requester of a streaming loop (see StreamConfig).
func NewStream(cfg StreamConfig) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := &Loop{}
	s := (*C.rb_stream)(l.alloc(1, int(C.sizeof_rb_stream)))
	l.stream, l.ctl = s, &s.ctl
	l.setHist(&s.hist, cfg.Hist)
	s.cq = cfg.CQ.c.cq
	if cfg.CQ.ch != nil {
		s.ch = cfg.CQ.ch.c.ch
	}
	s.nqp, s.qd, s.batch, s.signal = C.int32_t(len(cfg.QPs)), C.int32_t(cfg.QD), C.int32_t(cfg.Batch), C.int32_t(cfg.Signal)
	s.counters, s.stride, s.send_depth = C.int32_t(max(cfg.Counters, 1)), C.int32_t(cfg.Stride), C.int32_t(cfg.SendDep)
	if cfg.CmpSwap {
		s.cswap = 1
	}
	s.n, s.expect_recvs = C.int64_t(cfg.Msgs), C.int64_t(cfg.ExpectRecvs)
	s.interval_ns = C.int64_t(cfg.Interval.Nanoseconds())
	ring := 1
	for ring < cfg.QD+2 {
		ring <<= 1
	}
	s.sq = (*C.rb_sq)(l.alloc(len(cfg.QPs), int(C.sizeof_rb_sq)))
	qps := make([]*QP, len(cfg.QPs))
	for i, sq := range cfg.QPs {
		qps[i] = sq.QP
		q := (*C.rb_sq)(unsafe.Add(unsafe.Pointer(s.sq), i*int(C.sizeof_rb_sq)))
		q.qp = sq.QP.c.qp
		q.wrs = (*C.struct_ibv_send_wr)(l.alloc(cfg.Batch, int(C.sizeof_struct_ibv_send_wr)))
		q.sges = (*C.struct_ibv_sge)(l.alloc(4*cfg.Batch, int(C.sizeof_struct_ibv_sge)))
		q.posted_at = (*C.int64_t)(l.alloc(ring, 8))
		q.mask = C.uint64_t(ring - 1)
		q.base = C.uint64_t(sq.WR.RemoteAddr)
		wr, m := sq.WR, sq.Marker
		for j := range cfg.Batch {
			C.rb_sq_set_wr(q, C.int(j), cSendWR(&wr))
		}
		C.rb_sq_set_marker(q, cSendWR(&m))
	}
	if cfg.RecvDepth > 0 {
		var err error
		if s.rq, s.nrq, err = l.newRQ(qps, nil, cfg.Recv, cfg.RecvDepth); err != nil {
			l.free()
			return nil, err
		}
	}
	owner := cfg.QPs[0].QP.id
	uses := []uint64{owner, cfg.CQ.id}
	for _, qp := range qps[1:] {
		uses = append(uses, qp.id)
	}
	l.start(cfg.QPs[0].QP.device(), "stream", cfg.Timeout, uses...)
	return l, nil
}

// NewRPC builds the client of an echo RPC loop (see RPCConfig) and posts
// its receives.
func NewRPC(cfg RPCConfig) (*Loop, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	l := &Loop{}
	r := (*C.rb_rpc)(l.alloc(1, int(C.sizeof_rb_rpc)))
	l.rpc, l.ctl = r, &r.ctl
	l.setHist(&r.hist, cfg.Hist)
	r.req_cq, r.resp_cq, r.qp = cfg.ReqCQ.c.cq, cfg.RespCQ.c.cq, cfg.QP.c.qp
	wr := cfg.WR
	C.rb_rpc_set_wr(r, cSendWR(&wr))
	r.window, r.stride, r.size, r.send_depth = C.int32_t(cfg.Window), C.int32_t(cfg.Stride), C.int32_t(cfg.Size), C.int32_t(cfg.SendDepth)
	if cfg.WR.Op == OpWrite {
		r.write = 1
	}
	out, err := cfg.Out.addr("rpc loop's request slots", (cfg.Window-1)*cfg.Stride+cfg.Size)
	if err == nil {
		r.out, r.out_addr, r.remote_base = (*C.uint8_t)(out), C.uint64_t(cfg.WR.SGE[0].Addr), C.uint64_t(cfg.WR.RemoteAddr)
		r.gen = (*C.uint8_t)(l.alloc(cfg.Window, 1))
		r.sent_at = (*C.int64_t)(l.alloc(cfg.Window, 8))
		r.pend_tag = (*C.uint32_t)(l.alloc(cfg.Window, 4))
		r.pend_at = (*C.int64_t)(l.alloc(cfg.Window, 8))
		r.rq, _, err = l.newRQ([]*QP{cfg.RecvQP}, nil, []SGE{cfg.Recv}, cfg.RecvDepth)
	}
	if err != nil {
		l.free()
		return nil, err
	}
	r.n = C.int64_t(cfg.RPCs)
	l.start(cfg.QP.device(), "rpc", cfg.Timeout, cfg.QP.id, cfg.RespCQ.id, cfg.ReqCQ.id, cfg.RecvQP.id, cfg.Out.bufID())
	return l, nil
}

// Follow makes stream l start only when leader starts: l's Run waits
// (within its timeout) until leader's Run posts its first message. Close
// l before leader.
func (l *Loop) Follow(leader *Loop) error {
	if l.stream == nil || leader.stream == nil || l == leader {
		return fmt.Errorf("verbs: Follow joins two different stream loops")
	}
	leader.stream.opens_gate = 1
	leader.stream.gate = &leader.stream.gate_word
	l.stream.gate = &leader.stream.gate_word
	return nil
}

// Run runs the loop once, on the calling thread, and returns what it
// measured; a loop that did not finish its work returns a *LoopError.
func (l *Loop) Run() (LoopResult, error) {
	if err := l.enter(func() error {
		if l.ran {
			return fmt.Errorf("verbs: %s loop: Run called twice", l.kind)
		}
		return nil
	}); err != nil {
		return LoopResult{}, err
	}
	defer l.leave(true)
	rc := startRunClock()
	switch {
	case l.ping != nil:
		C.rb_run_ping(l.ping)
	case l.serve != nil:
		C.rb_run_serve(l.serve)
	case l.rpc != nil:
		l.rpc.phase = C.RB_RPC_MEASURE
		C.rb_run_rpc(l.rpc)
	case l.prog != nil:
		C.rb_run_prog(l.prog)
	default:
		C.rb_run_stream(l.stream)
	}
	mhz, clockErr := rc.check()
	r := l.slowResult(l.result())
	r.ClockMHz = mhz / 1e6
	if err := l.err(); err != nil {
		return r, err
	}
	if clockErr != nil {
		return r, fmt.Errorf("verbs: %s loop: %w", l.kind, clockErr)
	}
	return r, nil
}

// enter marks the loop running for one C call (Run, Warm, Drain), if it
// is open, not running and may (the state check may refuse it): Close then
// waits for leave before it frees anything.
func (l *Loop) enter(may func() error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.ctl == nil:
		return fmt.Errorf("verbs: %s loop: %w", l.kind, ErrClosed)
	case l.running:
		return fmt.Errorf("verbs: %s loop: already running", l.kind)
	}
	if err := may(); err != nil {
		return err
	}
	if err := clockEnter(); err != nil {
		return fmt.Errorf("verbs: %s loop: %w", l.kind, err)
	}
	l.running, l.done = true, make(chan struct{})
	l.dev.loopEnter(l)
	return nil
}

// leave ends what enter began; ran marks the loop's Run done.
func (l *Loop) leave(ran bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.running = false
	l.dev.loopLeave(l)
	clockLeave()
	l.ran = l.ran || ran
	close(l.done)
}

// Warm runs n unrecorded round trips of a ping loop now (untimed), and
// the atomic loops' first read of the counter; the next Run does only the
// measured ones. An rpc loop fills its window, completes n RPCs and takes
// their responses, leaving none outstanding. A requester's program runs
// n unrecorded iterations.
func (l *Loop) Warm(n int64) error {
	if err := l.enter(func() error {
		if (l.ping == nil && l.rpc == nil && (l.prog == nil || l.prog.passive != 0)) || l.ran {
			return fmt.Errorf("verbs: Warm applies to a ping, rpc or requester's program loop before its Run")
		}
		return nil
	}); err != nil {
		return err
	}
	defer l.leave(false)
	p, r := l.ping, l.rpc
	if r != nil {
		return l.rpcPhase(C.RB_RPC_FILL, C.int64_t(n))
	}
	if g := l.prog; g != nil {
		iters := g.iters
		g.iters, g.warmup = 0, C.int64_t(n)
		C.rb_run_prog(g)
		err := l.err()
		g.iters, g.warmup = iters, 0
		c := l.ctl
		c.status, c.ops, c.t_first, c.t_last = 0, 0, 0, 0
		return err
	}
	iters := p.iters
	p.iters, p.warmup = 0, C.int64_t(n)
	C.rb_run_ping(p)
	err := l.err()
	p.iters, p.warmup = iters, 0
	c := l.ctl
	c.status, c.ops, c.t_first, c.t_last = 0, 0, 0, 0
	return err
}

// rpcPhase runs one phase of an rpc loop now (Warm, Drain) and resets
// the outcome.
func (l *Loop) rpcPhase(phase C.int32_t, n C.int64_t) error {
	r := l.rpc
	keep := r.n
	r.phase, r.n = phase, n
	C.rb_run_rpc(r)
	err := l.err()
	r.n = keep
	c := l.ctl
	c.status, c.ops, c.t_first, c.t_last = 0, 0, 0, 0
	return err
}

// Drain takes the last responses of an rpc loop's window, after its Run
// (untimed): every request of the run was answered.
func (l *Loop) Drain() error {
	if err := l.enter(func() error {
		if l.rpc == nil || !l.ran {
			return fmt.Errorf("verbs: Drain applies to an rpc loop after its Run")
		}
		return nil
	}); err != nil {
		return err
	}
	defer l.leave(false)
	return l.rpcPhase(C.RB_RPC_DRAIN, 0)
}

// SettleRecvs takes, after a stream loop's Run (untimed), the receives
// still arriving: the other side's last messages of a bidir run, which
// on UC and UD the Run does not wait for. It returns when the loop has
// seen want receives in all, or none arrived for quiet (messages may be
// lost), or the loop's timeout passed; receives are reposted as they are
// taken. It returns the receives seen in all.
func (l *Loop) SettleRecvs(want int64, quiet time.Duration) (int64, error) {
	if err := l.enter(func() error {
		if l.stream == nil || !l.ran {
			return fmt.Errorf("verbs: SettleRecvs applies to a stream loop after its Run")
		}
		return nil
	}); err != nil {
		return 0, err
	}
	defer l.leave(false)
	C.rb_stream_settle(l.stream, C.int64_t(want), C.int64_t(quiet.Nanoseconds()))
	err := l.err()
	c := l.ctl
	c.status = 0
	return int64(c.recvs), err
}

// Recvs is how many receive completions a running loop has seen so far
// (safe from any goroutine while the loop runs).
func (l *Loop) Recvs() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctl == nil {
		return 0
	}
	return atomic.LoadInt64((*int64)(unsafe.Pointer(&l.ctl.recvs)))
}

// MarkRecvs makes a running sink time its receiver interval
// (LoopResult.RecvFirst) from the first receive past n: the count of
// receives it has seen before the stream to be timed (safe from any
// goroutine while the loop runs).
func (l *Loop) MarkRecvs(n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctl != nil {
		atomic.StoreInt64((*int64)(unsafe.Pointer(&l.ctl.recv_mark)), n)
	}
}

// Stop asks a running loop to end; a loop that has not started ends at
// once when it does. Safe from any goroutine, any number of times.
func (l *Loop) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctl != nil {
		l.raiseStop()
	}
}

// raiseStop sets the C loop's stop flag. The caller holds l.mu, or
// knows l is running (in its device's running set: not freed before it
// leaves).
func (l *Loop) raiseStop() {
	atomic.StoreInt32((*int32)(unsafe.Pointer(&l.ctl.stop)), 1)
}

// StopLoops ends every loop running on d's objects now (its Run, Warm or
// Drain returns with LoopStopped), and every later call of one at once:
// a caller's deadline, a client that left, a shutdown (rdmapeer's agent
// binds a run's context to it). It cannot be undone; safe from any
// goroutine, any number of times.
func (d *Device) StopLoops() {
	s := &d.loops
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for l := s.head; l != nil; l = l.runNext {
		l.raiseStop()
	}
}

// loopEnter adds l, entering a C call, to d's running set (a nil d:
// none); on a stopped device its stop flag is raised first. Called with
// l.mu held (the order is always l.mu, then the set's).
func (d *Device) loopEnter(l *Loop) {
	if d == nil {
		return
	}
	s := &d.loops
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		l.raiseStop()
	}
	l.runPrev, l.runNext = nil, s.head
	if s.head != nil {
		s.head.runPrev = l
	}
	s.head = l
}

// loopLeave removes l, whose C call returned, from d's running set.
func (d *Device) loopLeave(l *Loop) {
	if d == nil {
		return
	}
	s := &d.loops
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.runPrev != nil {
		l.runPrev.runNext = l.runNext
	} else {
		s.head = l.runNext
	}
	if l.runNext != nil {
		l.runNext.runPrev = l.runPrev
	}
	l.runPrev, l.runNext = nil, nil
}

func (l *Loop) result() LoopResult {
	c := l.ctl
	r := LoopResult{Ops: int64(c.ops), First: int64(c.t_first), Last: int64(c.t_last), Recvs: int64(c.recvs),
		RecvFirst: int64(c.t_recv_first), RecvLast: int64(c.t_recv_last)}
	if l.hist != nil {
		r.Samples, r.Overflow = int64(l.hist.total), int64(l.hist.overflow)
	}
	if l.ping != nil {
		r.CycleSamples, r.CycleOverflow = int64(l.ping.cycle.total), int64(l.ping.cycle.overflow)
	}
	return r
}

func (l *Loop) err() error {
	c := l.ctl
	st := LoopStatus(c.status)
	if st == LoopOK {
		return nil
	}
	e := &LoopError{Loop: l.kind, Status: st, Timeout: l.timeout, Outstanding: int64(c.outstanding),
		Want: uint64(c.want), Got: uint64(c.got), At: uint64(c.at)}
	if w := int(c.waiting); w < len(waitNames) {
		e.Waiting = waitNames[w]
	}
	switch st {
	case LoopPostSend:
		e.Errno = postError(opPostSend, errnoOf(c.err), int(c.err_index))
	case LoopPostRecv:
		e.Errno = postError(opPostRecv, errnoOf(c.err), int(c.err_index))
	case LoopEvent:
		e.Errno = newError("ibv_req_notify_cq", errnoOf(c.err))
	case LoopWC, LoopUnexpected:
		e.WC = *(*WC)(unsafe.Pointer(&c.bad))
	}
	return l.progErr(e)
}

// Counts copies the histogram's counts (hdrhistogram-go's layout for the
// loop's HistGeometry) into dst, which must be CountsLen long.
func (l *Loop) Counts(dst []int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.copyCounts("counts", l.hist, dst)
}

// CycleCounts copies a ping loop's cycle histogram into dst (CountsLen
// long): perftest's latency sample, from one measured post to the next
// (the whole iteration: post, the WR's completion with SignalAll, the
// answer, reposts, any stall between), halved like the samples; a run of
// n operations records n-1 cycles.
func (l *Loop) CycleCounts(dst []int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ping == nil {
		return fmt.Errorf("verbs: %s loop: cycle counts are a ping loop's", l.kind)
	}
	return l.copyCounts("cycle counts", &l.ping.cycle, dst)
}

func (l *Loop) copyCounts(what string, h *C.rb_hist, dst []int64) error {
	switch {
	case h == nil:
		return fmt.Errorf("verbs: %s loop: no histogram", l.kind)
	case l.running:
		return fmt.Errorf("verbs: %s loop: %s read while running", l.kind, what)
	case len(dst) != int(h.len):
		return fmt.Errorf("verbs: %s loop: %s need %d entries, got %d", l.kind, what, h.len, len(dst))
	}
	copy(dst, unsafe.Slice((*int64)(unsafe.Pointer(h.counts)), len(dst)))
	return nil
}

// Close stops the loop, waits (at most its timeout, or 10 s) until a
// running Run has returned, and frees its C memory. If Run does not return
// in time, nothing is freed and an error says so. A second Close does
// nothing.
func (l *Loop) Close() error {
	l.Stop()
	wait := max(l.timeout, 10*time.Second)
	for {
		l.mu.Lock()
		if !l.running {
			l.free()
			l.mu.Unlock()
			return nil
		}
		done := l.done
		l.mu.Unlock()
		select {
		case <-done:
		case <-time.After(wait):
			return fmt.Errorf("verbs: %s loop still running %v after Stop: not freed", l.kind, wait)
		}
	}
}

func (l *Loop) free() {
	for _, p := range l.frees {
		C.free(p)
	}
	l.frees, l.ctl, l.hist, l.ping, l.serve, l.stream, l.rpc, l.prog = nil, nil, nil, nil, nil, nil, nil, nil
	if l.id != 0 {
		untrack(l.id)
		l.id = 0
	}
}

// histAdd records v through the C loops' bucket arithmetic into counts
// laid out for g (tests compare it with hdrhistogram-go).
func histAdd(g HistGeometry, counts []int64, vs []int64) (overflow int64) {
	var h C.rb_hist
	mem := C.calloc(C.size_t(g.countsLen), 8)
	defer C.free(mem)
	setHist(&h, g, mem)
	for _, v := range vs {
		C.rb_hist_add(&h, C.int64_t(v))
	}
	copy(counts, unsafe.Slice((*int64)(mem), g.countsLen))
	return int64(h.overflow)
}
