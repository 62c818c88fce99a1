// Package prog is a side's own pattern as data: steps, the WRs of its
// posts and the memory ranges they touch, all relative to a side's
// layout (QP i's "out" and "in" slots, and the peer's "in" slots), so
// that one Spec runs on side A or B, in this process or in a remote
// rdmapeer, and travels as JSON without carrying code. Resolve turns a
// Spec into the verbs.ProgramConfig of one side, checking every range
// against that side's slots; verbs.NewProgram checks the rest (the send
// queues' accounting, the awaits, the samples). Every error names the
// step.
package prog

import (
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// Mem is a range of a side's own memory: QP QP's "out" slot (In false)
// or "in" slot, bytes Off to Off+Len.
type Mem struct {
	QP  int  `json:"qp"`
	In  bool `json:"in,omitempty"`
	Off int  `json:"off"`
	Len int  `json:"len"`
}

func (m Mem) String() string {
	slot := "out"
	if m.In {
		slot = "in"
	}
	return fmt.Sprintf("bytes %d..%d of QP %d's %s slot", m.Off, m.Off+m.Len, m.QP, slot)
}

// Remote is a place in the peer's "in" slot of QP QP, Off bytes in.
type Remote struct {
	QP  int `json:"qp"`
	Off int `json:"off"`
}

// WR is one work request of a post: Local is its payload (SEND, WRITE),
// its destination (READ) or its 8-byte result (atomics); Remote its
// target (WRITE, READ, atomics). Compare is the compare-and-swap's
// compare value or the fetch-and-add's addend.
type WR struct {
	Op      verbs.Opcode    `json:"op"`
	Local   Mem             `json:"local"`
	Remote  Remote          `json:"remote"`
	Imm     uint32          `json:"imm,omitempty"`
	Compare uint64          `json:"compare,omitempty"`
	Swap    uint64          `json:"swap,omitempty"`
	Flags   verbs.SendFlags `json:"flags,omitempty"`
}

// Step is one step (verbs.StepKind says what each does): Post uses QP,
// WRs and Every; Await Recvs and Sends; the memory steps At (and Value);
// SampleEnd Halve.
type Step struct {
	Kind  verbs.StepKind `json:"kind"`
	QP    int            `json:"qp,omitempty"`
	WRs   []WR           `json:"wrs,omitempty"`
	Every int            `json:"every,omitempty"`
	Recvs int            `json:"recvs,omitempty"`
	Sends int            `json:"sends,omitempty"`
	At    Mem            `json:"at,omitzero"`
	Value uint64         `json:"value,omitempty"`
	Halve bool           `json:"halve,omitempty"`
}

// Spec is a side's program: its steps, run once per iteration, and the
// receives it keeps posted (RecvBytes at the start of every QP's "in"
// slot; none when Recvs is false).
type Spec struct {
	Steps     []Step `json:"steps"`
	Recvs     bool   `json:"recvs,omitempty"`
	RecvBytes int    `json:"recv_bytes,omitempty"`
}

// Layout is what Resolve needs of a side: its QPs and slots, its memory,
// and where the peer's "in" slots are.
type Layout struct {
	Transport verbs.Transport
	QPs       []*verbs.QP
	CQ        *verbs.CQ
	SRQ       *verbs.SRQ
	Buf       *verbs.Buffer
	MR        *verbs.MR
	// Slot is the bytes of each slot (64-aligned; on UD including the
	// 40-byte GRH in front of each receive); the peer's are the same.
	Slot      int
	Peer      []Peer
	SendDepth int
	RecvDepth int
}

// Peer is one of the peer's QPs as Resolve addresses it.
type Peer struct {
	Addr uint64 // its "in" slot
	RKey uint32
	Dest verbs.UDDest // UD only
}

// GRH is the Global Routing Header in front of every UD receive.
const GRH = 40

// Run says how a resolved program runs: the requester's iterations and
// histogram, or a passive side's idle limit.
type Run struct {
	Passive bool
	Idle    time.Duration
	Iters   int64
	Timeout time.Duration
	Hist    verbs.HistGeometry
}

// Resolve builds side l's verbs.ProgramConfig from s, checking every
// memory range against l's slots; verbs.NewProgram checks the rest.
func Resolve(s Spec, l Layout, r Run) (verbs.ProgramConfig, error) {
	cfg := verbs.ProgramConfig{CQ: l.CQ, QPs: l.QPs, SRQ: l.SRQ, Mem: l.Buf, SendDepth: l.SendDepth,
		Passive: r.Passive, Idle: r.Idle, Iters: r.Iters, Timeout: r.Timeout, Hist: r.Hist}
	if s.Recvs {
		n := s.RecvBytes
		if l.Transport == verbs.TransportUD {
			n += GRH
		}
		if s.RecvBytes < 0 || n > l.Slot {
			return cfg, fmt.Errorf("rdmatest: program: receives of %d bytes (%d with a UD GRH) out of range 0..%d (the slot)", s.RecvBytes, n, l.Slot)
		}
		cfg.RecvDepth = l.RecvDepth
		for i := range l.QPs {
			cfg.Recv = append(cfg.Recv, l.MR.SGE((2*i+1)*l.Slot, n))
		}
	}
	for i := range s.Steps {
		st := &s.Steps[i]
		vs := verbs.Step{Kind: st.Kind, QP: st.QP, Every: st.Every, Recvs: st.Recvs, Sends: st.Sends, Value: st.Value, Halve: st.Halve}
		switch st.Kind {
		case verbs.StepPost:
			if st.QP < 0 || st.QP >= len(l.QPs) {
				return cfg, stepErr(i, st, "QP %d out of range: the side has %d QPs", st.QP, len(l.QPs))
			}
			vs.First, vs.N = len(cfg.WRs), len(st.WRs)
			for j := range st.WRs {
				wr, err := l.wr(&st.WRs[j], st.QP)
				if err != nil {
					return cfg, stepErr(i, st, "WR %d: %v", j, err)
				}
				cfg.WRs = append(cfg.WRs, wr)
			}
		case verbs.StepPutGen, verbs.StepSpinGen, verbs.StepSpinChange, verbs.StepCopyImm, verbs.StepCopyLen,
			verbs.StepSpinEqual, verbs.StepExpect:
			off, err := l.offset(st.At)
			if err != nil {
				return cfg, stepErr(i, st, "%v", err)
			}
			if want := memLen(st.Kind); want != 0 && st.At.Len != want {
				return cfg, stepErr(i, st, "%v: the step takes %d bytes, not %d", st.At, want, st.At.Len)
			}
			vs.Off, vs.Width = off, st.At.Len
		}
		cfg.Steps = append(cfg.Steps, vs)
	}
	return cfg, nil
}

// offset is m's offset in the side's memory.
func (l *Layout) offset(m Mem) (int, error) {
	switch {
	case m.QP < 0 || m.QP >= len(l.QPs):
		return 0, fmt.Errorf("%v: QP %d out of range: the side has %d QPs", m, m.QP, len(l.QPs))
	case m.Off < 0 || m.Len < 0 || m.Off+m.Len > l.Slot:
		return 0, fmt.Errorf("%v: out of range: a slot holds %d bytes (PairConfig.SlotSize, rounded up to 64)", m, l.Slot)
	}
	off := 2 * m.QP * l.Slot
	if m.In {
		off += l.Slot
	}
	return off + m.Off, nil
}

// wr builds one WR posted on QP qp.
func (l *Layout) wr(w *WR, qp int) (verbs.SendWR, error) {
	off, err := l.offset(w.Local)
	if err != nil {
		return verbs.SendWR{}, err
	}
	out := verbs.SendWR{Op: w.Op, Flags: w.Flags, NumSGE: 1, Imm: w.Imm, CompareAdd: w.Compare, Swap: w.Swap}
	out.SGE[0] = l.MR.SGE(off, w.Local.Len)
	if w.Local.Len == 0 {
		out.NumSGE = 0
	}
	switch w.Op {
	case verbs.OpSend, verbs.OpSendImm:
		if l.Transport == verbs.TransportUD {
			out.UD = l.Peer[qp].Dest
		}
		return out, nil
	}
	n := w.Local.Len
	if w.Op == verbs.OpFetchAdd || w.Op == verbs.OpCmpSwap {
		n = 8
	}
	rq := w.Remote.QP
	if rq < 0 || rq >= len(l.Peer) {
		return out, fmt.Errorf("the peer's QP %d out of range: it has %d QPs", rq, len(l.Peer))
	}
	if w.Remote.Off < 0 || w.Remote.Off+n > l.Slot {
		return out, fmt.Errorf("the peer's bytes %d..%d of QP %d's in slot: out of range, a slot holds %d bytes", w.Remote.Off, w.Remote.Off+n, rq, l.Slot)
	}
	out.RemoteAddr, out.RKey = l.Peer[rq].Addr+uint64(w.Remote.Off), l.Peer[rq].RKey
	return out, nil
}

// memLen is the bytes a memory step touches (0: 1, 4 or 8, the word's
// width).
func memLen(k verbs.StepKind) int {
	switch k {
	case verbs.StepPutGen, verbs.StepSpinGen, verbs.StepSpinChange:
		return 1
	case verbs.StepCopyImm, verbs.StepCopyLen:
		return 4
	}
	return 0
}

func stepErr(i int, st *Step, format string, args ...any) error {
	return &verbs.StepError{Step: i, Kind: st.Kind, Err: fmt.Errorf(format, args...)}
}
