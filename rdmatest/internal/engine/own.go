package engine

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
	"github.com/rdmabench/rdmabench/verbs"
)

// A benchmark of one's own pattern — say, "WRITE a 4 KiB block, SEND an
// 8-byte commit, await an 8-byte ACK" — is a Pair, the WRs built once,
// a passive side if the pattern needs one (Serve), and Measure around a
// function that does one operation with Side.Post and Side.Await (see
// the package's commit example). Unlike the built-in families, whose
// loops run in C, such an operation runs in Go: every Post and every
// poll inside Await is one cgo call (tens of ns each; on rxe, whose post
// is a system call, far below the verb's own cost). The passive side
// Serve starts is one of the C serve loops.

// maxPost is the most WRs one Side.Post chains.
const maxPost = 16

// own is a side's state for Post, Await and KeepRecvs, made on first use
// (outside a timed region: Measure's warm-up calls the operation first).
type own struct {
	poller  *Poller
	wrs     [maxPost]verbs.SendWR
	posted  []uint64 // per QP: WRs posted (each WR's ID is its index)
	broken  []bool   // per QP: a post failed (its accounting is lost)
	done    []uint64 // per QP: WRs known complete (through the last signaled completion)
	sends   int64    // WRs posted that consume a receive at the peer
	recvs   int64    // receive completions seen
	gotRecv int      // receive completions seen but not yet awaited
	gotSend int      // send completions seen but not yet awaited
	keep    []verbs.RecvWR
}

func (s *Side) ownState() *own {
	if s.own == nil {
		n := len(s.QPs)
		s.own = &own{poller: NewPoller(s, 32, s.timeout), posted: make([]uint64, n), broken: make([]bool, n), done: make([]uint64, n)}
	}
	return s.own
}

// OutAt returns the SGE of n bytes at offset off of QP qp's outgoing slot
// (PairConfig.SlotSize bytes). It panics, naming the values and the
// limit, when the range is outside the slot: that is a bug in the
// benchmark, like an index out of range.
func (s *Side) OutAt(qp, off, n int) verbs.SGE {
	s.checkSlot("OutAt", qp, off, n)
	return s.MR.SGE(2*qp*s.slot+off, n)
}

// InAt returns the SGE of n bytes at offset off of QP qp's incoming slot
// (see OutAt).
func (s *Side) InAt(qp, off, n int) verbs.SGE {
	s.checkSlot("InAt", qp, off, n)
	return s.MR.SGE((2*qp+1)*s.slot+off, n)
}

func (s *Side) checkSlot(what string, qp, off, n int) {
	if qp < 0 || qp >= len(s.QPs) {
		panic(fmt.Sprintf("rdmatest: %s: QP %d out of range: the side has %d QPs", what, qp, len(s.QPs)))
	}
	if off < 0 || n < 0 || off+n > s.slot {
		panic(fmt.Sprintf("rdmatest: %s: bytes %d..%d out of range: a slot holds %d bytes (PairConfig.SlotSize, rounded up to 64)", what, off, off+n, s.slot))
	}
}

// Write returns an RDMA WRITE of sge to the start of this remote QP's
// "in" slot (unsignaled; see verbs.SendWR.Signaled).
func (t Target) Write(sge verbs.SGE) verbs.SendWR { return verbs.Write(sge, t.Addr, t.RKey) }

// Send returns a SEND of sge to this remote QP (addressed on UD;
// unsignaled).
func (t Target) Send(sge verbs.SGE) verbs.SendWR { return verbs.Send(sge).To(t.Dest) }

// Post posts wrs (at most 16) on QP qp as one chain, one doorbell. Their
// IDs are set by Post. A WR without FlagSignaled never completes on its
// own: the send queue frees it when a later signaled WR of the same QP
// completes and Await sees that completion, so a pattern must signal at
// least one WR in every send-queue depth (PairConfig.SendDepth) and await
// it; Post refuses to overfill the queue, naming the count. It does not
// allocate.
func (s *Side) Post(qp int, wrs ...verbs.SendWR) error {
	o := s.ownState()
	if qp < 0 || qp >= len(s.QPs) {
		return fmt.Errorf("rdmatest: Post: QP %d out of range: the side has %d QPs", qp, len(s.QPs))
	}
	if len(wrs) == 0 || len(wrs) > maxPost {
		return fmt.Errorf("rdmatest: Post: %d WRs: post 1 to %d at a time", len(wrs), maxPost)
	}
	if out := o.posted[qp] - o.done[qp]; out+uint64(len(wrs)) > uint64(s.depth) {
		return fmt.Errorf("rdmatest: Post: send queue of QP %d full: %d WRs not yet known complete + %d > depth %d: signal at least one WR in every %d and Await it",
			qp, out, len(wrs), s.depth, s.depth)
	}
	if o.broken[qp] {
		return fmt.Errorf("rdmatest: Post: QP %#x failed a post before; some of those WRs may be queued, so its accounting is lost", s.QPs[qp].QPN())
	}
	chain := o.wrs[:len(wrs)]
	copy(chain, wrs)
	sends := 0
	for i := range chain {
		chain[i].ID = o.posted[qp] + uint64(i)
		switch chain[i].Op {
		case verbs.OpSend, verbs.OpSendImm, verbs.OpWriteImm:
			sends++
		}
	}
	if err := s.QPs[qp].PostSend(chain); err != nil {
		o.broken[qp] = true // a WR before the bad one may be on the queue
		return fmt.Errorf("rdmatest: Post on QP %#x: %w", s.QPs[qp].QPN(), err)
	}
	o.posted[qp] += uint64(len(wrs))
	o.sends += int64(sends)
	return nil
}

// Count is a number of completions to await: Recvs(n) or Sends(n).
type Count struct {
	recv bool
	n    int
}

// Recvs is n receive completions (each a message that arrived).
func Recvs(n int) Count { return Count{recv: true, n: n} }

// Sends is n completions of signaled WRs posted by this side.
func Sends(n int) Count { return Count{n: n} }

// Await polls the side's CQ until the completions counted have arrived
// (completions that arrive early count towards the next Await), within
// the -rdma.timeout deadline; a failed completion or the deadline is an
// error (a deadline, a *StallError). Receives consumed are posted again
// when KeepRecvs was called. It does not allocate unless it fails.
func (s *Side) Await(counts ...Count) error {
	o := s.ownState()
	var recvs, sends int
	for _, c := range counts {
		if c.n < 0 {
			return fmt.Errorf("rdmatest: Await: a count of %d completions: want 0 or more", c.n)
		}
		if c.recv {
			recvs += c.n
		} else {
			sends += c.n
		}
	}
	for o.gotRecv < recvs || o.gotSend < sends {
		wcs, err := o.poller.Wait("Await's completions", s.outstanding())
		if err != nil {
			return fmt.Errorf("rdmatest: Await(%d receives, %d sends; seen %d, %d): %w", recvs, sends, o.gotRecv, o.gotSend, err)
		}
		for i := range wcs {
			if err := s.completed(o, &wcs[i]); err != nil {
				return err
			}
		}
	}
	o.gotRecv -= recvs
	o.gotSend -= sends
	return nil
}

// completed accounts for one completion.
func (s *Side) completed(o *own, wc *verbs.WC) error {
	qp := s.qpIndex(wc.QPN)
	if !isRecv(wc) {
		o.gotSend++
		if qp >= 0 {
			o.done[qp] = wc.ID + 1 // completions come in order on a QP
		}
		return nil
	}
	o.gotRecv++
	o.recvs++
	if o.keep == nil || qp < 0 {
		return nil
	}
	return s.repost(o, qp)
}

// repost posts QP qp's kept receive once (on the SRQ if the side has one).
func (s *Side) repost(o *own, qp int) error {
	var err error
	if s.SRQ != nil {
		err = s.SRQ.PostRecv(o.keep[qp : qp+1])
	} else {
		err = s.QPs[qp].PostRecv(o.keep[qp : qp+1])
	}
	if err != nil {
		return fmt.Errorf("rdmatest: posting a receive on QP %#x: %w", s.QPs[qp].QPN(), err)
	}
	return nil
}

func (s *Side) qpIndex(qpn uint32) int {
	for i, qp := range s.QPs {
		if qp.QPN() == qpn {
			return i
		}
	}
	return -1
}

func (s *Side) outstanding() int {
	if s.own == nil {
		return 0
	}
	n := 0
	for i := range s.own.posted {
		n += int(s.own.posted[i] - s.own.done[i])
	}
	return n
}

// KeepRecvs posts, on every QP of the side (or its SRQ), as many receives
// of n bytes (at the start of the QP's incoming slot; on UD n plus the
// 40-byte GRH) as the receive queue holds, and makes Await post each
// consumed receive again, so the queue never runs dry.
func (s *Side) KeepRecvs(n int) error {
	o := s.ownState()
	if o.keep != nil {
		return errors.New("rdmatest: KeepRecvs: called twice on one side")
	}
	size := n
	if s.QPs[0].Transport() == verbs.TransportUD {
		size += grhBytes
	}
	if size <= 0 || size > s.slot {
		return fmt.Errorf("rdmatest: KeepRecvs: %d bytes per receive out of range 1..%d (the slot)", size, s.slot)
	}
	o.keep = make([]verbs.RecvWR, len(s.QPs))
	for i := range s.QPs {
		o.keep[i] = verbs.RecvWR{NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{s.InAt(i, 0, size)}}
	}
	if s.SRQ != nil {
		// One SRQ shared by all QPs: recvDepth receives in all (each
		// QP's slot in turn, so every slot gets some).
		for k := range s.recvDepth {
			if err := s.repost(o, k%len(s.QPs)); err != nil {
				return fmt.Errorf("rdmatest: KeepRecvs: %w", err)
			}
		}
		return nil
	}
	for i := range s.QPs {
		for range s.recvDepth {
			if err := s.repost(o, i); err != nil {
				return fmt.Errorf("rdmatest: KeepRecvs: %w", err)
			}
		}
	}
	return nil
}

// Role is what the passive side plays for Serve.
type Role struct {
	name passiveRole
	size int
}

// EchoSends is the passive side answering every SEND it receives with a
// SEND of n bytes (the first n bytes that arrived) on the pair's one QP: an
// acknowledgement. Serve also gives side A receives for the answers
// (KeepRecvs(n)), unless it has them already.
func EchoSends(n int) Role { return Role{name: roleEcho, size: n} }

// SinkSends is the passive side receiving SENDs (receives of n bytes,
// posted again as they are consumed) and answering nothing.
func SinkSends(n int) Role { return Role{name: roleSink, size: n} }

// Serve starts side B's role for a benchmark of one's own pattern: a C
// loop on a thread (and CPU) of its own, until Measure ends or tb does.
// READ, WRITE and atomics need no Serve: the NIC serves them. B is in
// this process: with -rdma.peer there is no B to serve (a peer plays only
// the built-in families' roles), and Serve fails saying so.
func Serve(tb testing.TB, p *Pair, r Role) {
	tb.Helper()
	if p.B == nil {
		fatal(tb, fmt.Errorf("rdmatest: Serve: side B is played by the remote peer -rdma.peer=%s, which serves only the built-in families; run a benchmark of your own pattern without -rdma.peer", p.Dev.Opts.Peer))
	}
	if p.served != nil {
		fatal(tb, errors.New("rdmatest: Serve: side B already serves"))
	}
	if len(p.B.QPs) != 1 {
		fatal(tb, fmt.Errorf("rdmatest: Serve: the pair has %d QPs; a served side answers on one QP: PairConfig.QPs 1", len(p.B.QPs)))
	}
	s := Spec{Kind: KindLatency, Op: verbs.OpSend, Size: r.size, Transport: p.Cfg.Transport}
	if r.size <= 0 || recvBytes(&s) > p.B.slot {
		fatal(tb, fmt.Errorf("rdmatest: Serve: message size %d (%d bytes per receive) out of range: 1 to the slot, %d bytes (PairConfig.SlotSize, rounded up to 64, less a UD GRH of 40)",
			r.size, recvBytes(&s), p.B.slot))
	}
	cfg, _ := serveConfig(p.B, &s, r.name, p.Cfg.RecvDepth, p.Dev.Opts.Timeout)
	resp, err := startServe(cfg, p.Dev.cpus.ForLoops(2)[1])
	if err != nil {
		fatal(tb, err)
	}
	p.served = resp
	tb.Cleanup(func() { _ = resp.Stop() })
	if r.name == roleEcho && (p.A.own == nil || p.A.own.keep == nil) {
		if err := p.A.KeepRecvs(r.size); err != nil {
			resp.fatal(tb, err)
		}
	}
}

// MeasureOpts configures Measure.
type MeasureOpts struct {
	// Rate is the unit of the operations-per-second metric, e.g.
	// "commits/s" (default "ops/s"); Measure registers it as
	// higher-is-better (see units.Register).
	Rate string
	// Warmup is the number of untimed, unrecorded operations before the
	// timer starts (default 16): first touches, the completion array.
	Warmup int
}

// Measure is the timed region of a benchmark of one's own pattern: it
// calls op b.N times, each call one operation and one latency sample,
// and reports what the built-in families report. Around the loop: the
// CPU check (one CPU per spinning thread, or skip), Warmup untimed calls,
// garbage collection and memory returned to the OS before the timer, the
// port counters and CPU time; the loop runs on the calling goroutine's
// thread, locked and pinned to the requester's CPU (see -rdma.cpus). An
// error from op ends the benchmark with it (and the passive side's).
// After the timer: the SENDs A posted must all have arrived at a passive
// side started by Serve (on RC; a fail names both counts), then p50-ns …
// max-ns (each call of op, from just before it to its return, clock
// CLOCK_MONOTONIC), the rate (calls per second of the loop's own time),
// cpu-ns/op, allocations and the port counters that moved.
func Measure(b *testing.B, p *Pair, o MeasureOpts, op func() error) {
	b.Helper()
	takeTurn(b)
	if o.Rate == "" {
		o.Rate = "ops/s"
	}
	switch {
	case o.Warmup < 0:
		fatal(b, fmt.Errorf("rdmatest: Measure: Warmup %d: want 0 (the default, 16) or more", o.Warmup))
	case o.Warmup == 0:
		o.Warmup = 16
	}
	if err := units.Register(o.Rate, "higher"); err != nil {
		fatal(b, err)
	}
	busy := 1
	if p.served != nil {
		busy = 2
	}
	if err := checkProcs(busy); err != nil {
		skip(b, err)
	}
	d := p.Dev
	p.A.ownState()
	for i := range o.Warmup {
		if err := op(); err != nil {
			p.served.fatal(b, fmt.Errorf("rdmatest: warm-up operation %d of %d: %w", i+1, o.Warmup, err))
		}
	}
	b.ReportAllocs()
	rec := hist.NewRecorder()
	before := beforeRun(b, d)
	elapsed, n, err := timedOps(b, op, rec, d.cpus.ForLoops(busy)[0])
	before.end()
	if err != nil {
		p.served.fatal(b, fmt.Errorf("rdmatest: operation %d of %d (counted from 1): %w", n+1, b.N, err))
	}
	if err := p.checkServed(); err != nil {
		p.served.fatal(b, err)
	}
	if err := p.served.Stop(); err != nil {
		fatal(b, err)
	}
	hist.ReportLatencyHeld(b, rec)
	reportLoopRate(b, o.Rate, int64(b.N), elapsed)
	before.report(b, d, int64(b.N))
}

// timedOps runs op b.N times as b's timed region on the calling
// goroutine's thread pinned to cpu, recording each call in rec; it
// returns the loop's own time and, on an error, the failed call's index.
func timedOps(b *testing.B, op func() error, rec *hist.Recorder, cpu int) (time.Duration, int, error) {
	var elapsed time.Duration
	n := 0 // the failed call's index; b.N when none failed
	err := onPinnedThread(cpu, func() error {
		b.ResetTimer()
		start := time.Now()
		for i := range b.N {
			t0 := time.Now()
			if err := op(); err != nil {
				b.StopTimer()
				n = i
				return err
			}
			rec.Record(int64(time.Since(t0)))
		}
		elapsed = time.Since(start)
		b.StopTimer()
		n = b.N
		return nil
	})
	return elapsed, n, err
}

// checkServed checks, after Measure's loop, that a passive side started
// by Serve received every message A sent (on RC; UC and UD may lose
// messages), waiting for the last ones up to the deadline.
func (p *Pair) checkServed() error {
	if p.served == nil || p.A.own == nil || p.Cfg.Transport != verbs.TransportRC {
		return nil
	}
	want := p.A.own.sends
	deadline := time.Now().Add(p.Dev.Opts.Timeout)
	for p.served.recvs() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	if got := p.served.recvs(); got != want {
		return fmt.Errorf("rdmatest: A posted %d messages that consume a receive, but the passive side received %d", want, got)
	}
	return nil
}

// ReportRate reports msgs/s: msgs divided by the testing timer's elapsed
// time (b.Elapsed), for a pattern with no loop clock of its own; the
// standard scenarios and Measure divide by the loop's own time instead.
// Call it after the loop (and after any timed drain).
func ReportRate(b *testing.B, msgs int) {
	b.Helper()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(msgs)/s, "msgs/s")
	}
}
