package prog

import (
	"fmt"

	"github.com/rdmabench/rdmabench/verbs"
)

// Static bounds of a Spec, checked by Check before anything is created:
// what a remote peer can refuse from the JSON alone.
const (
	// MaxEvery bounds a post's Every (verbs bounds the least common
	// multiple of a program's Every values to the same).
	MaxEvery = 1 << 12
	// MaxAwait bounds the completions one Await counts, of each kind.
	MaxAwait = 1 << 16
)

// knownFlags are the send flags a WR may carry.
const knownFlags = verbs.FlagSignaled | verbs.FlagInline | verbs.FlagSolicited | verbs.FlagFence

// SlotBytes is the bytes of each slot of a side for a pair's SlotSize:
// on UD the 40-byte GRH in front of each receive added, rounded up to 64.
func SlotBytes(slotSize int, ud bool) int {
	if ud {
		slotSize += GRH
	}
	return (slotSize + 63) &^ 63
}

// Check refuses a Spec that could not be resolved on a side of qps QPs
// whose slots hold slot bytes (SlotBytes): the number of steps
// (1..verbs.MaxSteps), every step's kind, the WRs of a post
// (1..verbs.MaxPostWRs, known opcodes and flags), every memory range and
// remote place within a slot of an existing QP, the receives within the
// slot, Every and the Await counts bounded. It needs no device. Every
// error is a *verbs.StepError naming the step (−1: the program as a
// whole); verbs.NewProgram checks the rest when the program is built.
func (s *Spec) Check(qps, slot int) error {
	if n := len(s.Steps); n < 1 || n > verbs.MaxSteps {
		return &verbs.StepError{Step: -1, Err: fmt.Errorf("%d steps: a program has 1 to %d", n, verbs.MaxSteps)}
	}
	if s.Recvs && (s.RecvBytes < 0 || s.RecvBytes > slot) {
		return &verbs.StepError{Step: -1, Err: fmt.Errorf("receives of %d bytes out of range 0..%d (the slot)", s.RecvBytes, slot)}
	}
	l := bounds{qps: qps, slot: slot}
	for i := range s.Steps {
		if err := l.step(i, &s.Steps[i]); err != nil {
			return err
		}
	}
	return nil
}

// bounds is what Check checks against: the side's QPs and slot bytes.
type bounds struct{ qps, slot int }

func (l bounds) step(i int, st *Step) error {
	if st.Kind < verbs.StepPost || st.Kind > verbs.StepSampleEnd {
		return stepErr(i, st, "unknown step kind %d", int32(st.Kind))
	}
	if st.Kind != verbs.StepPost && len(st.WRs) > 0 {
		return stepErr(i, st, "%d WRs: only a post has WRs", len(st.WRs))
	}
	switch st.Kind {
	case verbs.StepPost:
		switch {
		case st.QP < 0 || st.QP >= l.qps:
			return stepErr(i, st, "QP %d out of range: the side has %d QPs", st.QP, l.qps)
		case len(st.WRs) < 1 || len(st.WRs) > verbs.MaxPostWRs:
			return stepErr(i, st, "%d WRs: a post chains 1 to %d", len(st.WRs), verbs.MaxPostWRs)
		case st.Every < 0 || st.Every > MaxEvery:
			return stepErr(i, st, "signal every %d iterations: want 0 (the WRs' own flags) … %d", st.Every, MaxEvery)
		}
		for j := range st.WRs {
			if err := l.wr(&st.WRs[j]); err != nil {
				return stepErr(i, st, "WR %d: %v", j, err)
			}
		}
	case verbs.StepAwait:
		if st.Recvs < 0 || st.Sends < 0 || st.Recvs > MaxAwait || st.Sends > MaxAwait {
			return stepErr(i, st, "awaits %d receives and %d sends: each count 0..%d", st.Recvs, st.Sends, MaxAwait)
		}
	case verbs.StepPutGen, verbs.StepSpinGen, verbs.StepSpinChange, verbs.StepCopyImm, verbs.StepCopyLen,
		verbs.StepSpinEqual, verbs.StepExpect:
		if err := l.mem(st.At); err != nil {
			return stepErr(i, st, "%v", err)
		}
		if want := memLen(st.Kind); want != 0 && st.At.Len != want {
			return stepErr(i, st, "%v: the step takes %d bytes, not %d", st.At, want, st.At.Len)
		}
	}
	return nil
}

// mem checks that m lies in a slot of one of the side's QPs.
func (l bounds) mem(m Mem) error {
	switch {
	case m.QP < 0 || m.QP >= l.qps:
		return fmt.Errorf("%v: QP %d out of range: the side has %d QPs", m, m.QP, l.qps)
	case m.Off < 0 || m.Len < 0 || m.Off > l.slot || m.Len > l.slot-m.Off:
		return fmt.Errorf("%v: out of range: a slot holds %d bytes (PairConfig.SlotSize, rounded up to 64)", m, l.slot)
	}
	return nil
}

// wr checks one WR's opcode, flags, local memory and remote place.
func (l bounds) wr(w *WR) error {
	if w.Op < verbs.OpSend || w.Op > verbs.OpCmpSwap {
		return fmt.Errorf("unknown opcode %d", int(w.Op))
	}
	if w.Flags&^knownFlags != 0 {
		return fmt.Errorf("unknown send flags %#x", uint8(w.Flags&^knownFlags))
	}
	if err := l.mem(w.Local); err != nil {
		return err
	}
	if w.Op == verbs.OpSend || w.Op == verbs.OpSendImm {
		return nil
	}
	n := w.Local.Len
	if w.Op == verbs.OpFetchAdd || w.Op == verbs.OpCmpSwap {
		n = 8
	}
	rq := w.Remote.QP
	if rq < 0 || rq >= l.qps {
		return fmt.Errorf("the peer's QP %d out of range: it has %d QPs", rq, l.qps)
	}
	if w.Remote.Off < 0 || w.Remote.Off > l.slot || n > l.slot-w.Remote.Off {
		return fmt.Errorf("the peer's bytes %d..%d of QP %d's in slot: out of range, a slot holds %d bytes", w.Remote.Off, w.Remote.Off+n, rq, l.slot)
	}
	return nil
}

// RemoteAccess is the access the Spec's WRs need of the peer's memory:
// remote write for WRITE and WRITE_WITH_IMM, remote read for READ, remote
// atomic for the atomics (none for SEND). A peer exposes no more.
func (s *Spec) RemoteAccess() verbs.Access {
	var a verbs.Access
	for i := range s.Steps {
		for _, w := range s.Steps[i].WRs {
			a |= w.Op.RemoteAccess()
		}
	}
	return a
}
