package rdmatest

import (
	"fmt"
	"runtime"
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
	if err := checkProcs(s.busyGoroutines(d, false)); err != nil {
		b.Skip(err)
	}
	p := NewPair(b, d, s.pairConfig(false))
	timeout := d.Opts.Timeout
	rec := NewRecorder()
	iter, resp, err := p.pingPong(&s, timeout)
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
	before := beforeRun(b, d)
	b.SetBytes(int64(s.Size))
	b.ReportAllocs()
	for b.Loop() {
		ns, err := iter()
		if err != nil {
			resp.fatal(b, err)
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

// beforeRun is the last step before a timed loop: it finishes any garbage
// collection the setup's allocations started (a GC cycle running into the
// loop would put its mark worker on a P, taking it from a spinning
// goroutine: the loops allocate nothing, so none starts later) and
// returns the port's counters (see readCounters).
func beforeRun(b *testing.B, d *Dev) Counters {
	runtime.GC()
	return readCounters(b, d)
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

// pingPong sets up both sides of a latency run: the passive side's role
// (answering pings) and the requester's iteration, which returns one
// sample.
func (p *Pair) pingPong(s *Spec, timeout time.Duration) (func() (int64, error), *responder, error) {
	if p.remote != nil {
		return p.remotePingPong(s, timeout)
	}
	switch {
	case s.Op == verbs.OpWrite:
		return writePing(p.A, s, timeout), serveWriteEcho(p.B, s, timeout), nil
	case s.consumesRecv():
		resp, err := serveRecvEcho(p.B, s, p.Cfg.RecvDepth, timeout)
		if err != nil {
			return nil, nil, err
		}
		iter, err := recvPing(p.A, s, p.Cfg.RecvDepth, timeout)
		if err != nil {
			resp.Stop()
			return nil, nil, err
		}
		return iter, resp, nil
	default:
		return roundTrip(p.A, s, timeout), nil, nil
	}
}

// remotePingPong is pingPong with side B in a remote peer: the requester's
// half is the same, the peer plays the role.
func (p *Pair) remotePingPong(s *Spec, timeout time.Duration) (func() (int64, error), *responder, error) {
	var iter func() (int64, error)
	var err error
	switch {
	case s.Op == verbs.OpWrite:
		iter = writePing(p.A, s, timeout)
	case s.consumesRecv():
		iter, err = recvPing(p.A, s, p.Cfg.RecvDepth, timeout)
	default:
		iter = roundTrip(p.A, s, timeout)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := p.remote.start(); err != nil {
		return nil, nil, err
	}
	return iter, p.remote.responder(), nil
}

// roundTrip: post one READ or atomic, wait for its completion; the sample
// is the full round trip.
func roundTrip(a *Side, s *Spec, timeout time.Duration) func() (int64, error) {
	qp, wr := a.QPs[0], []verbs.SendWR{sendWR(s, a, 0)}
	poll := NewPoller(a, 4, timeout)
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

// recvPing is the requester's half of a SEND (or WRITE_WITH_IMM)
// ping-pong: send, then wait for the answer's receive completion; the
// sample is half the round trip. Sends are signaled once every half queue
// depth, as in perftest, so the loop does not wait for its own send
// completions.
func recvPing(a *Side, s *Spec, recvDepth int, timeout time.Duration) (func() (int64, error), error) {
	rx := newReceiver(a, recvBytes(s))
	if err := rx.fill(recvDepth); err != nil {
		return nil, err
	}
	sq := newSendQueue(a.QPs[0], sendWR(s, a, 0), a.depth)
	poll := NewPoller(a, 8, timeout)
	got := false
	onRecv := func(*verbs.WC) { got = true }
	return func() (int64, error) {
		if err := sq.makeRoom(poll, nil); err != nil {
			return 0, err
		}
		got = false
		t0 := time.Now()
		if err := sq.post(); err != nil {
			return 0, err
		}
		for !got {
			wcs, err := poll.Wait("the answer of the passive side (a receive completion on the requester)", sq.outstanding())
			if err != nil {
				return 0, err
			}
			sq.handle(wcs, onRecv)
		}
		ns := time.Since(t0).Nanoseconds() / 2
		return ns, rx.consumed(0)
	}, nil
}

// serveRecvEcho is the passive half of a SEND ping-pong (and the server
// of an echo RPC over UD SEND): answer every receive with the same verb,
// carrying back the payload received and, for verbs with immediate data,
// the immediate received (an RPC's tag).
func serveRecvEcho(b *Side, s *Spec, recvDepth int, timeout time.Duration) (*responder, error) {
	rx := newReceiver(b, recvBytes(s))
	if err := rx.fill(recvDepth); err != nil {
		return nil, fmt.Errorf("rdmatest: posting the passive side's receives: %w", err)
	}
	// A true echo: the answer carries the bytes that arrived (after the
	// GRH on UD), so a client can verify payloads end to end.
	wr := sendWR(s, b, 0)
	wr.SGE[0] = b.In(0, recvBytes(s))
	wr.SGE[0].Addr += uint64(recvBytes(s) - s.Size)
	wr.SGE[0].Length = uint32(s.Size)
	sq := newSendQueue(b.QPs[0], wr, b.depth)
	poll := NewPoller(b, 8, timeout)
	return startResponder(timeout, func(stop *atomic.Bool) error {
		// The immediates of the receives still to answer, oldest first
		// (at most recvDepth: every one holds a posted receive).
		pings := make([]uint32, 0, recvDepth)
		onRecv := func(wc *verbs.WC) { pings = append(pings, wc.Imm) }
		for !stop.Load() {
			wcs, err := poll.Poll()
			if err != nil {
				return fmt.Errorf("rdmatest: passive side: %w", err)
			}
			sq.handle(wcs, onRecv)
			for len(pings) > 0 {
				if err := rx.consumed(0); err != nil {
					return err
				}
				if err := sq.makeRoom(poll, onRecv); err != nil {
					return fmt.Errorf("rdmatest: passive side: %w", err)
				}
				sq.wr[0].Imm = pings[0]
				pings = append(pings[:0], pings[1:]...)
				if err := sq.post(); err != nil {
					return fmt.Errorf("rdmatest: passive side answering: %w", err)
				}
			}
			if len(wcs) == 0 {
				if err := rx.flush(); err != nil {
					return err
				}
			}
		}
		return nil
	}), nil
}

// writePing is the requester's half of an RDMA WRITE ping-pong (perftest's
// ib_write_lat): write into the peer's "in" slot, then spin until the
// peer's write changes the last byte of our own "in" slot; the sample is
// half the round trip. Writes are signaled once every half queue depth.
func writePing(a *Side, s *Spec, timeout time.Duration) func() (int64, error) {
	last := s.Size - 1
	sq := newSendQueue(a.QPs[0], sendWR(s, a, 0), a.depth)
	poll := NewPoller(a, 8, timeout)
	out, in := a.OutBytes(0), a.InBytes(0)
	v := byte(0)
	var sp spinner
	return func() (int64, error) {
		if err := sq.makeRoom(poll, nil); err != nil {
			return 0, err
		}
		v = v%255 + 1 // 1..255: never the initial 0
		out[last] = v
		t0 := time.Now()
		if err := sq.post(); err != nil {
			return 0, err
		}
		deadline := t0.Add(timeout)
		for spins := 0; loadByte(in, last) != v; spins++ {
			sp.spin()
			if spins&1023 == 1023 && time.Now().After(deadline) {
				return 0, poll.Stalled("the passive side's RDMA WRITE to change the last byte of the requester's buffer", sq.outstanding())
			}
		}
		return time.Since(t0).Nanoseconds() / 2, nil
	}
}

// serveWriteEcho is the passive half of a WRITE ping-pong: spin on the
// last byte of the "in" slot and write the same value back.
func serveWriteEcho(b *Side, s *Spec, timeout time.Duration) *responder {
	last := s.Size - 1
	sq := newSendQueue(b.QPs[0], sendWR(s, b, 0), b.depth)
	poll := NewPoller(b, 8, timeout)
	out, in := b.OutBytes(0), b.InBytes(0)
	return startResponder(timeout, func(stop *atomic.Bool) error {
		seen := byte(0)
		var sp spinner
		for !stop.Load() {
			sp.spin()
			v := loadByte(in, last)
			if v == seen {
				continue
			}
			seen = v
			if err := sq.makeRoom(poll, nil); err != nil {
				return fmt.Errorf("rdmatest: passive side: %w", err)
			}
			out[last] = v
			if err := sq.post(); err != nil {
				return fmt.Errorf("rdmatest: passive side answering: %w", err)
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
