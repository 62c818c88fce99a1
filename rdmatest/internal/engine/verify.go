package engine

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// Verification. Every run checks its results after the timed region:
// payloads carry a known pattern (fillPatterns) that the receiving memory
// must hold afterwards, atomics' counters and returned values follow
// from the operation count, and receives are counted. A mismatch fails
// the benchmark, naming what was expected and what was found.
//
//   - WRITE ping-pong: the requester's "in" slot holds the passive side's
//     pattern (every byte but the last, which carries the ping count).
//   - SEND ping-pong (RC, UC, UD): the answers echo the requester's own
//     payload back: its "in" slot (after the GRH on UD) holds its pattern.
//   - READ (latency and stream): the requester's "in" slot holds the
//     passive side's "in" pattern that it read.
//   - Atomics, latency: every returned value is checked inside the C loop
//     (operation k of a run returns start + k, for fetch-and-add of 1
//     and for compare-and-swap from v to v+1, so every swap must swap).
//   - Atomics, stream (local passive side): counter c of QP i ends at the
//     number of operations that targeted it times the step: 1 for
//     fetch-and-add; verbs.CmpSwapStep for compare-and-swap, whose
//     operation k swaps k·step for (k+1)·step, so that once a swap fails
//     (a counter that did not start at 0, or was moved by someone else)
//     no later one matches and the final value falls short.
//   - WRITE and SEND streams (local passive side): the passive side's
//     "in" slot holds the requester's pattern; SEND streams also count
//     delivered messages: on RC every message must arrive; on UC and UD
//     the loss is reported (lost-msgs/op), since the sender's completions
//     say nothing about delivery.
//
// With a remote peer (-rdma.peer) the passive side's memory is the
// peer's: ping-pong and READ results are checked here (the peer fills
// its slots with the same pattern), stream targets are not.

// patternByte is byte j of every slot's pattern: never 0 (the initial
// memory), and not periodic within 251 bytes.
func patternByte(j int) byte { return byte(j%251) + 1 }

// fillPattern writes the pattern into b.
func fillPattern(b []byte) {
	for j := range b {
		b[j] = patternByte(j)
	}
}

// checkPattern returns an error naming the first byte of got that is not
// the pattern.
func checkPattern(what string, got []byte) error {
	for j, v := range got {
		if want := patternByte(j); v != want {
			return fmt.Errorf("rdmatest: verification: %s: byte %d is %#02x, expected %#02x (pattern byte %d of %d)", what, j, v, want, j, len(got))
		}
	}
	return nil
}

// fillPatterns prepares the pair's memory for s: see Side.fillPatterns.
func (p *Pair) fillPatterns(s *Spec) {
	p.A.fillPatterns(s, false)
	if p.B != nil {
		p.B.fillPatterns(s, true)
	}
}

// fillPatterns writes the pattern into every "out" slot of the side (the
// requester's messages; a passive side's WRITE answers and mirrored
// streams) and, on a passive side of READ, into the "in" slots (what the
// requester reads).
func (s *Side) fillPatterns(sp *Spec, passive bool) {
	for i := range s.QPs {
		fillPattern(s.OutBytes(i))
		if passive && sp.Op == verbs.OpRead {
			fillPattern(s.InBytes(i))
		}
	}
}

// verifyLatency checks what a latency run left in A's memory.
func (p *Pair) verifyLatency(s *Spec) error {
	in := p.A.InBytes(0)
	switch {
	case s.Op == verbs.OpWrite:
		return checkPattern("the passive side's RDMA WRITE answers in the requester's buffer", in[:s.Size-1])
	case s.consumesRecv():
		off := recvBytes(s) - s.Size
		return checkPattern("the echoed payload in the requester's receive buffer", in[off:off+s.Size])
	case s.Op == verbs.OpRead:
		return checkPattern("the data RDMA READ returned", in[:s.Size])
	}
	return nil // atomics: checked by the loop, every operation
}

// msgsPerQP is how many of n messages, posted batch at a time round-robin
// over qps QPs, went to QP i.
func msgsPerQP(n int64, batch, qps, i int) int64 {
	full := n / int64(batch)
	per := full / int64(qps) * int64(batch)
	if int64(i) < full%int64(qps) {
		per += int64(batch)
	}
	if int64(i) == full%int64(qps) {
		per += n % int64(batch)
	}
	return per
}

// checkCounters checks the atomics' counters of one QP's slot after a
// stream of n operations spread over counters counters stride bytes
// apart, each starting at 0 and moved one step up per operation (step
// 1 for fetch-and-add, verbs.CmpSwapStep for compare-and-swap).
func checkCounters(slot []byte, n int64, counters, stride int, step uint64) error {
	for c := range counters {
		ops := uint64(n / int64(counters))
		if int64(c) < n%int64(counters) {
			ops++
		}
		want := ops * step
		if got := binary.LittleEndian.Uint64(slot[c*stride:]); got != want {
			return fmt.Errorf("rdmatest: verification: counter %d (of %d, %d bytes apart) is %#x after %d atomic operations, expected %#x (%d steps of %#x)", c, counters, stride, got, n, want, ops, step)
		}
	}
	return nil
}

// verifyStream checks the passive side's memory after a stream of n
// messages (local passive side only).
func (p *Pair) verifyStream(s *Spec, n int64) error {
	if p.B == nil {
		return nil
	}
	for i := range p.A.QPs {
		ni := msgsPerQP(n, s.Batch, len(p.A.QPs), i)
		switch {
		case s.isAtomic():
			step := uint64(1)
			if s.Op == verbs.OpCmpSwap {
				step = verbs.CmpSwapStep
			}
			if err := checkCounters(p.B.InBytes(i), ni, s.Counters, s.Stride, step); err != nil {
				return fmt.Errorf("QP %d: %w", i, err)
			}
		case s.Op == verbs.OpRead:
			if err := checkPattern(fmt.Sprintf("the data RDMA READ returned on QP %d", i), p.A.InBytes(i)[:s.Size]); err != nil {
				return err
			}
		case ni > 0 && !s.HeaderOnly && (s.Op == verbs.OpWrite || s.Op == verbs.OpWriteImm || s.isSend()):
			off := 0
			if s.isSend() {
				off = recvBytes(s) - s.Size // after the GRH on UD
			}
			in := p.B.InBytes(i)
			if s.SRQ {
				in = p.B.InBytes(0)
			}
			if err := checkPattern(fmt.Sprintf("the payload the passive side received on QP %d", i), in[off:off+s.Size]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBidirBack checks a remote peer's bidir stream back (n messages
// each way): all of its messages completed, and on RC every one of A's
// arrived there and B's payload is in A's buffer on every QP (UC and UD
// may lose some, and with them the payload).
func (p *Pair) checkBidirBack(s *Spec, back *oob.Stopped, n int64) error {
	if back.StreamOps != uint64(n) {
		return fmt.Errorf("rdmatest: verification: the peer's stream back completed %d of %d messages", back.StreamOps, n)
	}
	if s.Transport != verbs.TransportRC {
		return nil
	}
	if s.consumesRecv() && back.Received < uint64(n) {
		return fmt.Errorf("rdmatest: verification: the peer received %d of our %d messages (RC delivers every message)", back.Received, n)
	}
	for i := range p.A.QPs {
		if msgsPerQP(n, s.Batch, len(p.A.QPs), i) == 0 || s.HeaderOnly {
			continue
		}
		off := 0
		if s.isSend() {
			off = recvBytes(s) - s.Size
		}
		if err := checkPattern(fmt.Sprintf("the payload the peer's stream back left in our buffer on QP %d", i), p.A.InBytes(i)[off:off+s.Size]); err != nil {
			return err
		}
	}
	return nil
}

// noSignaledWR tells whether a stream of n messages of s has no signaled
// WR of its own (every QP got fewer than Signal messages): then only the
// completion markers completed, and there is no latency sample.
func noSignaledWR(s *Spec, n int64) bool {
	for i := range s.QPs {
		if msgsPerQP(n, s.Batch, s.QPs, i) >= int64(s.Signal) {
			return false
		}
	}
	return true
}
