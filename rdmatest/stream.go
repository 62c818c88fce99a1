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
}

// stream is the requester's side of a streaming run.
type stream struct {
	s     *Spec
	p     *Pair
	qps   []streamQP
	poll  *Poller
	rec   *Recorder
	start time.Time
}

// Stream measures spec s as a stream: QD WRs outstanding per QP, posted
// Batch at a time round-robin over the QPs, one in Signal signaled. It
// reports MB/s (b.SetBytes: payload bytes per second, 10^6 B), msgs/s,
// and latency under load (p50-ns … max-ns: post to completion of each
// signaled WR). The timed region runs from the first post to the last
// completion. Unsupported combinations are skipped, invalid ones fail.
func Stream(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	s.defaults()
	if err := s.Check(d, true); err != nil {
		skipOrFail(b, err)
	}
	p := NewPair(b, d, s.pairConfig(true))
	timeout := d.Opts.Timeout
	var resp *responder
	if s.consumesRecv() {
		var err error
		if resp, err = sink(p, recvBytes(&s), timeout); err != nil {
			b.Fatal(err)
		}
	}
	defer resp.Stop()
	st := newStream(&s, p, timeout)
	fail := func(err error) {
		if rerr := resp.Stop(); rerr != nil {
			err = fmt.Errorf("%w (passive side: %v)", err, rerr)
		}
		b.Fatal(err)
	}

	before := readCounters(b, d)
	b.SetBytes(int64(s.Size))
	b.ReportAllocs()
	pending, rr := 0, 0
	st.start = time.Now()
	for b.Loop() {
		pending++
		if pending == s.Batch {
			if err := st.post(rr, pending); err != nil {
				fail(err)
			}
			pending, rr = 0, (rr+1)%len(st.qps)
		}
	}
	// The messages still in flight belong to the measurement: the timer
	// runs again until the last one has completed.
	b.StartTimer()
	if err := st.finish(rr, pending); err != nil {
		fail(err)
	}
	b.StopTimer()
	if err := resp.Stop(); err != nil {
		b.Fatal(err)
	}
	ReportLatency(b, st.rec)
	ReportRate(b, b.N)
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
		}
		st.qps = append(st.qps, q)
	}
	return st
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
	for j := range n {
		seq := q.posted + uint64(j)
		wr := &q.wrs[j]
		wr.ID = uint64(i)<<seqBits | seq
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
	now := time.Since(st.start).Nanoseconds()
	for k := range wcs {
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

// finish posts the partial batch left by the loop, makes sure every QP's
// last WR is signaled (with a zero-byte marker WR where it is not: an
// RDMA WRITE, or a SEND on UD, that moves no payload and is not counted
// as a message), and waits until everything has completed.
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
		m := verbs.SendWR{ID: markerFlag | uint64(i)<<seqBits | q.posted, Op: verbs.OpWrite, Flags: verbs.FlagSignaled}
		if st.s.Transport == verbs.TransportUD {
			m.Op = verbs.OpSend
		}
		m.RemoteAddr, m.RKey, m.UD = st.p.A.Peer[i].Addr, st.p.A.Peer[i].RKey, st.p.A.Peer[i].Dest
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
