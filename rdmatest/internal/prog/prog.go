// Package prog is a side's own pattern as data: steps, the WRs of its
// posts and the memory ranges they touch, all relative to a side's
// layout (QP i's "out" and "in" slots, and the peer's "in" slots), so
// that one Spec runs on side A or B, in this process or in a remote
// rdmapeer, and travels as JSON without carrying code. Spec.Check bounds
// a Spec statically, with no device (a remote peer refuses a bad one
// before it creates anything); Resolve checks it against one side and
// turns it into that side's verbs.ProgramConfig; verbs.NewProgram checks
// the rest (the send queues' accounting, the awaits, the samples). Every
// error names the step.
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

// Resolve builds side l's verbs.ProgramConfig from s, checking it first
// against l's QPs and slots (Check, and on UD the receives' GRH);
// verbs.NewProgram checks the rest.
func Resolve(s Spec, l Layout, r Run) (verbs.ProgramConfig, error) {
	cfg := verbs.ProgramConfig{CQ: l.CQ, QPs: l.QPs, SRQ: l.SRQ, Mem: l.Buf, SendDepth: l.SendDepth,
		Passive: r.Passive, Idle: r.Idle, Iters: r.Iters, Timeout: r.Timeout, Hist: r.Hist}
	if len(l.Peer) != len(l.QPs) {
		return cfg, fmt.Errorf("rdmatest: program: the side has %d QPs but knows %d of the peer's", len(l.QPs), len(l.Peer))
	}
	if err := s.Check(len(l.QPs), l.Slot); err != nil {
		return cfg, err
	}
	if s.Recvs {
		n := s.RecvBytes
		if l.Transport == verbs.TransportUD {
			n += GRH
		}
		if n > l.Slot {
			return cfg, &verbs.StepError{Step: -1, Err: fmt.Errorf("receives of %d bytes (%d with a UD GRH) out of range 0..%d (the slot)", s.RecvBytes, n, l.Slot)}
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
			vs.First, vs.N = len(cfg.WRs), len(st.WRs)
			for j := range st.WRs {
				cfg.WRs = append(cfg.WRs, l.wr(&st.WRs[j], st.QP))
			}
		case verbs.StepPutGen, verbs.StepSpinGen, verbs.StepSpinChange, verbs.StepCopyImm, verbs.StepCopyLen,
			verbs.StepSpinEqual, verbs.StepExpect:
			vs.Off, vs.Width = l.offset(st.At), st.At.Len
		}
		cfg.Steps = append(cfg.Steps, vs)
	}
	return cfg, nil
}

// offset is m's offset in the side's memory (m is checked).
func (l *Layout) offset(m Mem) int {
	off := 2 * m.QP * l.Slot
	if m.In {
		off += l.Slot
	}
	return off + m.Off
}

// wr builds one WR posted on QP qp (w is checked).
func (l *Layout) wr(w *WR, qp int) verbs.SendWR {
	out := verbs.SendWR{Op: w.Op, Flags: w.Flags, NumSGE: 1, Imm: w.Imm, CompareAdd: w.Compare, Swap: w.Swap}
	out.SGE[0] = l.MR.SGE(l.offset(w.Local), w.Local.Len)
	if w.Local.Len == 0 {
		out.NumSGE = 0
	}
	switch w.Op {
	case verbs.OpSend, verbs.OpSendImm:
		if l.Transport == verbs.TransportUD {
			out.UD = l.Peer[qp].Dest
		}
		return out
	}
	p := l.Peer[w.Remote.QP]
	out.RemoteAddr, out.RKey = p.Addr+uint64(w.Remote.Off), p.RKey
	return out
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
