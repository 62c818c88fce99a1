package rdmatest

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// Work request IDs of a stream: the QP index in bits 40..62, the QP's WR
// sequence number below, and bit 63 for the completion marker.
const (
	seqBits    = 40
	seqMask    = 1<<seqBits - 1
	markerFlag = 1 << 63
)

// streamQP is the requester's state for one QP of a stream.
type streamQP struct {
	qp         *verbs.QP
	wrs        []verbs.SendWR // the batch, reused
	posted     uint64         // WRs posted
	done       uint64         // WRs known complete (a signaled completion covers all before it)
	lastSignal uint64         // sequence number + 1 of the last signaled WR posted
	postedAt   []int64        // ring: post time of signaled WR seq at seq & mask
	mask       uint64
	base       uint64 // the remote address of counter 0 (atomics)
}

// stream is the requester's side of a streaming run.
type stream struct {
	s     *Spec
	p     *Pair // p.A is the side this stream posts from (B for a mirror)
	qps   []streamQP
	poll  *Poller
	rec   *Recorder
	start time.Time
	// recv reposts the side's own receives for the peer's messages: only
	// in bidir runs of verbs that consume a receive, where one CQ carries
	// both the side's send completions and its receive completions.
	recv *receiver
	// rr and pending are the QP the next message goes to and the messages
	// queued for it (add); msgs counts the messages posted.
	rr, pending int
	msgs        int64
}

// Stream measures spec s as a stream: QD WRs outstanding per QP, posted
// Batch at a time round-robin over the QPs, one in Signal signaled. It
// reports MB/s (b.SetBytes: payload bytes per second, 10^6 B), msgs/s,
// and latency under load (p50-ns … max-ns: post to completion of each
// signaled WR). The timed region runs from the first post to the last
// completion. Unsupported combinations are skipped, invalid ones fail.
//
// Variants, by Spec field:
//
//   - Bidir: side B streams the mirror of A's stream to A at the same
//     time (B's QP i to A's QP i, same verb, size and knobs), in lockstep:
//     B posts, from a goroutine of its own, exactly as
//     many messages as A has posted so far, so both move b.N messages.
//     The timed region runs from A's first post until both streams'
//     last completions. MB/s counts the payload of both directions
//     (b.SetBytes(2·Size)), msgs/s = 2·b.N / elapsed, and the latency
//     percentiles merge both sides' samples. For verbs that consume a
//     receive, each side reposts its own receives while it streams.
//   - Inbound: msgs/s is the passive side's rate: (R − R₁) / (t_last −
//     t_first), where R receives completed at B, t_first and t_last are
//     when B's poll first and last returned receive completions and R₁
//     is how many the first poll returned. No MB/s is reported; ns/op
//     and the latency percentiles stay the requester's.
//   - Threads ≥ 1: see the threads section of the package documentation
//     (streamThreads): Threads goroutines, each with its own pair.
//   - Counters, Stride (atomics): WR k of a QP targets counter k mod
//     Counters, at Stride·(k mod Counters) bytes into the passive side's
//     slot of that QP.
func Stream(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	s.defaults()
	if err := s.Check(d, true); err != nil {
		skipOrFail(b, err)
	}
	if s.Threads > 0 { // may oversubscribe on purpose: see streamThreads
		streamThreads(b, d, s)
		return
	}
	if err := checkProcs(s.busyGoroutines(d, true)); err != nil {
		b.Skip(err)
	}
	p := NewPair(b, d, s.pairConfig(true))
	timeout := d.Opts.Timeout
	st := newStream(&s, p, timeout)
	var resp *responder
	var in *sinkSide
	var mirror *mirrorStream
	var err error
	switch {
	case s.Bidir:
		mirror, err = startMirror(st)
		if mirror != nil {
			resp = mirror.resp
		}
	case s.consumesRecv():
		in, err = sink(p, recvBytes(&s), timeout)
		if in != nil {
			resp = in.resp
		}
	case p.remote != nil: // a remote peer that only exposes memory
		if err = p.remote.start(); err == nil {
			resp = p.remote.responder()
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Stop()

	before := beforeRun(b, d)
	directions := 1
	if s.Bidir {
		directions = 2
	}
	if !s.Inbound {
		b.SetBytes(int64(directions * s.Size))
	}
	b.ReportAllocs()
	st.start = time.Now()
	for b.Loop() {
		if err := st.add(); err != nil {
			resp.fatal(b, err)
		}
		if mirror != nil {
			mirror.target.Store(st.msgs)
		}
	}
	// The messages still in flight belong to the measurement: the timer
	// runs again until the last one has completed.
	b.StartTimer()
	if err := st.finish(st.rr, st.pending); err != nil {
		resp.fatal(b, err)
	}
	if mirror != nil {
		if err := mirror.drain(st, int64(b.N)); err != nil {
			resp.fatal(b, err)
		}
	}
	b.StopTimer()
	if err := resp.Stop(); err != nil {
		b.Fatal(err)
	}
	if mirror != nil {
		st.rec.Merge(mirror.st.rec)
	}
	ReportLatency(b, st.rec)
	if s.Inbound {
		in.report(b)
	} else {
		ReportRate(b, directions*b.N)
	}
	reportCounters(b, d, before)
}

func newStream(s *Spec, p *Pair, timeout time.Duration) *stream {
	st := &stream{s: s, p: p, poll: NewPoller(p.A, 64, timeout), rec: NewRecorder()}
	ring := uint64(1)
	for ring < uint64(s.QD)+2 {
		ring <<= 1
	}
	for i, qp := range p.A.QPs {
		q := streamQP{qp: qp, wrs: make([]verbs.SendWR, s.Batch), postedAt: make([]int64, ring), mask: ring - 1}
		for j := range q.wrs {
			q.wrs[j] = sendWR(s, p.A, i)
			if s.HeaderOnly {
				q.wrs[j].NumSGE = 0
			}
		}
		q.base = q.wrs[0].RemoteAddr
		st.qps = append(st.qps, q)
	}
	return st
}

// add queues one message; a full batch is posted on the current QP, and
// the next batch goes to the next QP.
func (st *stream) add() error {
	st.pending++
	if st.pending == st.s.Batch {
		if err := st.post(st.rr, st.pending); err != nil {
			return err
		}
		st.pending, st.rr = 0, (st.rr+1)%len(st.qps)
	}
	return nil
}

// post posts the first n WRs of QP i's batch, after waiting for room.
func (st *stream) post(i, n int) error {
	q := &st.qps[i]
	for q.posted-q.done+uint64(n) > uint64(st.s.QD) {
		if err := st.reap(true); err != nil {
			return err
		}
	}
	now := time.Since(st.start).Nanoseconds()
	sig := uint64(st.s.Signal)
	counters, stride := uint64(st.s.Counters), uint64(st.s.Stride)
	for j := range n {
		seq := q.posted + uint64(j)
		wr := &q.wrs[j]
		wr.ID = uint64(i)<<seqBits | seq
		if counters > 1 {
			wr.RemoteAddr = q.base + seq%counters*stride
		}
		if (seq+1)%sig == 0 {
			wr.Flags |= verbs.FlagSignaled
			q.postedAt[seq&q.mask] = now
			q.lastSignal = seq + 1
		} else {
			wr.Flags &^= verbs.FlagSignaled
		}
	}
	if err := q.qp.PostSend(q.wrs[:n]); err != nil {
		return err
	}
	q.posted += uint64(n)
	st.msgs += int64(n)
	return st.reap(false)
}

// reap processes completions: all that are there (wait=false) or at least
// one (wait=true, bounded by the deadline).
func (st *stream) reap(wait bool) error {
	var wcs []verbs.WC
	var err error
	if wait {
		wcs, err = st.poll.Wait("the requester's send completions", st.outstanding())
	} else {
		wcs, err = st.poll.Poll()
	}
	if err != nil {
		return err
	}
	if len(wcs) == 0 && st.recv != nil {
		return st.recv.flush()
	}
	now := time.Since(st.start).Nanoseconds()
	for k := range wcs {
		if isRecv(&wcs[k]) {
			if st.recv == nil {
				return fmt.Errorf("rdmatest: unexpected receive completion (wr_id %d) on the requester's CQ", wcs[k].ID)
			}
			if err := st.recv.consumed(recvIndex(&wcs[k])); err != nil {
				return err
			}
			continue
		}
		id := wcs[k].ID
		q := &st.qps[(id&^markerFlag)>>seqBits]
		seq := id & seqMask
		q.done = seq + 1
		if id&markerFlag == 0 {
			st.rec.Record(now - q.postedAt[seq&q.mask])
		}
	}
	return nil
}

func (st *stream) outstanding() int {
	n := 0
	for i := range st.qps {
		n += int(st.qps[i].posted - st.qps[i].done)
	}
	return n
}

// marker is the completion marker of QP i: a signaled WR of the same
// class as the stream's verb, so that the passive side needs no access it
// does not grant already (a remote peer grants only what the scenario
// needs), and that moves no payload of the stream's: a zero-byte SEND (to
// a remote peer or on UD; otherwise an RDMA WRITE), RDMA WRITE or RDMA READ, or for atomics a fetch-and-add of 0 on the
// first counter (its 8 bytes come back into the requester's "in" slot).
func (st *stream) marker(i int) verbs.SendWR {
	a, t := st.p.A, st.p.A.Peer[i]
	m := verbs.SendWR{Flags: verbs.FlagSignaled, RemoteAddr: t.Addr, RKey: t.RKey, UD: t.Dest}
	switch {
	case st.s.isSend() && (st.p.remote != nil || st.s.Transport == verbs.TransportUD):
		// A remote peer grants no remote write for SEND, and UD has
		// nothing else; locally an RDMA WRITE keeps receive counts exact.
		m.Op = verbs.OpSend
	case st.s.Op == verbs.OpRead:
		m.Op = verbs.OpRead
	case st.s.isAtomic():
		m.Op, m.NumSGE, m.SGE[0] = verbs.OpFetchAdd, 1, a.In(i, 8)
	default:
		m.Op = verbs.OpWrite
	}
	return m
}

// finish posts the partial batch left by the loop, makes sure every QP's
// last WR is signaled (with a marker WR where it is not, see marker; it
// is not counted as a message), and waits until everything has completed.
func (st *stream) finish(i, pending int) error {
	if pending > 0 {
		if err := st.post(i, pending); err != nil {
			return err
		}
	}
	for i := range st.qps {
		q := &st.qps[i]
		if q.lastSignal == q.posted {
			continue
		}
		for q.posted-q.done+1 > uint64(st.p.Cfg.SendDepth) {
			if err := st.reap(true); err != nil {
				return err
			}
		}
		m := st.marker(i)
		m.ID = markerFlag | uint64(i)<<seqBits | q.posted
		if err := q.qp.PostSend([]verbs.SendWR{m}); err != nil {
			return fmt.Errorf("rdmatest: posting the completion marker: %w", err)
		}
		q.posted++
		q.lastSignal = q.posted
	}
	for st.outstanding() > 0 {
		if err := st.reap(true); err != nil {
			return err
		}
	}
	return nil
}
