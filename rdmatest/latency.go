package rdmatest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rdmabench/rdmabench/verbs"
)

// skipOrFail skips b for an *Unsupported error and fails it otherwise.
func skipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if IsUnsupported(err) {
		tb.Skip(err)
	}
	tb.Fatal(err)
}

// sendWR is the template of a requester WR of spec s on QP i of side from.
func sendWR(s *Spec, from *Side, i int) verbs.SendWR {
	wr := verbs.SendWR{Op: s.Op, Flags: verbs.FlagSignaled, NumSGE: 1}
	t := from.Peer[i]
	switch s.Op {
	case verbs.OpRead, verbs.OpFetchAdd, verbs.OpCmpSwap:
		wr.SGE[0] = from.In(i, s.Size) // what comes back lands in "in"
	default:
		wr.SGE[0] = from.Out(i, s.Size)
	}
	wr.RemoteAddr, wr.RKey, wr.UD = t.Addr, t.RKey, t.Dest
	switch s.Op {
	case verbs.OpSendImm, verbs.OpWriteImm:
		wr.Imm = 0x5eed
	case verbs.OpFetchAdd:
		wr.CompareAdd = 1
	}
	if s.Inline {
		wr.Flags |= verbs.FlagInline
	}
	return wr
}

// recvBytes is what one receive must hold for s (a UD receive starts with
// the 40-byte GRH).
func recvBytes(s *Spec) int {
	if s.Transport == verbs.TransportUD {
		return s.Size + grhBytes
	}
	return s.Size
}

// Latency measures spec s one operation at a time on QP 0 (see the
// package doc for what is timed) and reports p50-ns … max-ns, msgs/s
// (operations per second) and MB/s (payload bytes of the requester's
// messages). Unsupported combinations are skipped, invalid ones fail.
func Latency(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	s.defaults()
	if err := s.Check(d, false); err != nil {
		skipOrFail(b, err)
	}
	p := NewPair(b, d, s.pairConfig(false))
	timeout := d.Opts.Timeout
	rec := NewRecorder()
	var iter func() (int64, error)
	var resp *responder
	var err error
	switch {
	case s.Op == verbs.OpWrite:
		iter, resp = p.writePingPong(&s, timeout)
	case s.consumesRecv():
		iter, resp, err = p.recvPingPong(&s, timeout)
	default:
		iter = p.roundTrip(&s, timeout)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Stop()
	// One untimed, unrecorded warm-up round trip: the first pass through
	// the path pays one-time costs (thread creation for the passive side,
	// first cgo calls) that are not the operation's.
	if _, err := iter(); err != nil {
		b.Fatal(err)
	}
	before := readCounters(b, d)
	b.SetBytes(int64(s.Size))
	b.ReportAllocs()
	for b.Loop() {
		ns, err := iter()
		if err != nil {
			if rerr := resp.Stop(); rerr != nil {
				err = fmt.Errorf("%w (passive side: %v)", err, rerr)
			}
			b.Fatal(err)
		}
		rec.Record(ns)
	}
	if err := resp.Stop(); err != nil {
		b.Fatal(err)
	}
	ReportLatency(b, rec)
	ReportRate(b, b.N)
	reportCounters(b, d, before)
}

// readCounters reads the port's counters before a run (nil when the
// device has none; the run goes on without counter deltas).
func readCounters(b *testing.B, d *Dev) Counters {
	c, err := ReadCounters(d.Name(), d.Port)
	if err != nil {
		b.Logf("rdmatest: no port counters: %v", err)
		return nil
	}
	return c
}

// reportCounters reports the counters that moved during the run (see
// ReportCounters), so that a fast run with retransmissions shows them.
func reportCounters(b *testing.B, d *Dev, before Counters) {
	if before == nil {
		return
	}
	after, err := ReadCounters(d.Name(), d.Port)
	if err != nil {
		b.Errorf("rdmatest: reading port counters after the run: %v", err)
		return
	}
	delta, err := Delta(before, after)
	if err != nil {
		b.Errorf("rdmatest: %v", err)
	}
	ReportCounters(b, delta)
}

// roundTrip: post one READ or atomic, wait for its completion; the sample
// is the full round trip.
func (p *Pair) roundTrip(s *Spec, timeout time.Duration) func() (int64, error) {
	qp, wr := p.A.QPs[0], []verbs.SendWR{sendWR(s, p.A, 0)}
	poll := NewPoller(p.A, 4, timeout)
	what := "the completion of the requester's " + s.Op.String()
	return func() (int64, error) {
		t0 := time.Now()
		if err := qp.PostSend(wr); err != nil {
			return 0, err
		}
		if _, err := poll.Wait(what, 1); err != nil {
			return 0, err
		}
		return time.Since(t0).Nanoseconds(), nil
	}
}

// recvPingPong: A sends (SEND or WRITE_WITH_IMM), B answers with the same
// verb when its receive completes, A waits for its own receive
// completion; the sample is half the round trip. Sends are signaled once
// every half queue depth, as in perftest, so neither side waits for its
// own send completions on the way.
func (p *Pair) recvPingPong(s *Spec, timeout time.Duration) (func() (int64, error), *responder, error) {
	n := recvBytes(s)
	ra, rb := newReceiver(p.A, n), newReceiver(p.B, n)
	if err := ra.fill(p.Cfg.RecvDepth); err != nil {
		return nil, nil, err
	}
	if err := rb.fill(p.Cfg.RecvDepth); err != nil {
		return nil, nil, err
	}
	depth := p.Cfg.SendDepth
	sqA := newSendQueue(p.A.QPs[0], sendWR(s, p.A, 0), depth)
	sqB := newSendQueue(p.B.QPs[0], sendWR(s, p.B, 0), depth)
	pollA, pollB := NewPoller(p.A, 8, timeout), NewPoller(p.B, 8, timeout)

	resp := startResponder(timeout, func(stop *atomic.Bool) error {
		pings := 0 // receives to answer
		onRecv := func(*verbs.WC) { pings++ }
		for !stop.Load() {
			wcs, err := pollB.Poll()
			if err != nil {
				return fmt.Errorf("rdmatest: passive side: %w", err)
			}
			sqB.handle(wcs, onRecv)
			for ; pings > 0; pings-- {
				if err := rb.consumed(0); err != nil {
					return err
				}
				if err := sqB.makeRoom(pollB, onRecv); err != nil {
					return fmt.Errorf("rdmatest: passive side: %w", err)
				}
				if err := sqB.post(); err != nil {
					return fmt.Errorf("rdmatest: passive side answering: %w", err)
				}
			}
			if len(wcs) == 0 {
				if err := rb.flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})

	got := false
	onRecv := func(*verbs.WC) { got = true }
	iter := func() (int64, error) {
		if err := sqA.makeRoom(pollA, nil); err != nil {
			return 0, err
		}
		got = false
		t0 := time.Now()
		if err := sqA.post(); err != nil {
			return 0, err
		}
		for !got {
			wcs, err := pollA.Wait("the answer of the passive side (a receive completion on the requester)", sqA.outstanding())
			if err != nil {
				return 0, err
			}
			sqA.handle(wcs, onRecv)
		}
		ns := time.Since(t0).Nanoseconds() / 2
		return ns, ra.consumed(0)
	}
	return iter, resp, nil
}

// writePingPong: A writes into B's "in" slot; B spins on the slot's last
// byte, then writes into A's "in" slot; A spins on its last byte. The
// sample is half the round trip (perftest's ib_write_lat). Writes are
// signaled once every half queue depth.
func (p *Pair) writePingPong(s *Spec, timeout time.Duration) (func() (int64, error), *responder) {
	last := s.Size - 1
	depth := p.Cfg.SendDepth
	sqA := newSendQueue(p.A.QPs[0], sendWR(s, p.A, 0), depth)
	sqB := newSendQueue(p.B.QPs[0], sendWR(s, p.B, 0), depth)
	pollA, pollB := NewPoller(p.A, 8, timeout), NewPoller(p.B, 8, timeout)
	outA, inA := p.A.OutBytes(0), p.A.InBytes(0)
	outB, inB := p.B.OutBytes(0), p.B.InBytes(0)

	resp := startResponder(timeout, func(stop *atomic.Bool) error {
		seen := byte(0)
		for !stop.Load() {
			v := loadByte(inB, last)
			if v == seen {
				continue
			}
			seen = v
			if err := sqB.makeRoom(pollB, nil); err != nil {
				return fmt.Errorf("rdmatest: passive side: %w", err)
			}
			outB[last] = v
			if err := sqB.post(); err != nil {
				return fmt.Errorf("rdmatest: passive side answering: %w", err)
			}
		}
		return nil
	})

	v := byte(0)
	iter := func() (int64, error) {
		if err := sqA.makeRoom(pollA, nil); err != nil {
			return 0, err
		}
		v = v%255 + 1 // 1..255: never the initial 0
		outA[last] = v
		t0 := time.Now()
		if err := sqA.post(); err != nil {
			return 0, err
		}
		deadline := t0.Add(timeout)
		for spins := 0; loadByte(inA, last) != v; spins++ {
			if spins&1023 == 1023 && time.Now().After(deadline) {
				return 0, pollA.Stalled("the passive side's RDMA WRITE to change the last byte of the requester's buffer", sqA.outstanding())
			}
		}
		return time.Since(t0).Nanoseconds() / 2, nil
	}
	return iter, resp
}

// loadByte reads b[i] with an atomic load, so that a spin on memory the
// NIC writes sees every update (b is mmap'd, 64-byte aligned; little
// endian assumed, as on amd64 and arm64).
func loadByte(b []byte, i int) byte {
	w := (*uint32)(unsafe.Pointer(&b[i&^3]))
	return byte(atomic.LoadUint32(w) >> (8 * (i & 3)))
}
