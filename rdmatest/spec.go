package rdmatest

import (
	"errors"
	"fmt"

	"github.com/rdmabench/rdmabench/verbs"
)

// Spec is one measured scenario: which verb, over which transport, with
// which knobs. The zero values of the knobs are perftest's defaults.
type Spec struct {
	// Op is the requester's verb: OpSend, OpSendImm, OpWrite, OpWriteImm,
	// OpRead, OpFetchAdd or OpCmpSwap.
	Op        verbs.Opcode
	Transport verbs.Transport
	// Size is the message size in bytes (atomics: always 8).
	Size int
	// QD is the number of outstanding WRs per QP in streaming runs
	// (perftest -t, default 128); latency runs have one.
	QD int
	// QPs is the number of QPs, posted to round-robin by one goroutine
	// (perftest -q; default 1).
	QPs int
	// Inline sends the payload inline in the WQE.
	Inline bool
	// Batch is the number of WRs per post call (doorbell batching,
	// perftest -l; default 1).
	Batch int
	// Signal asks for one completion every Signal WRs (perftest -Q;
	// default 1 = every WR).
	Signal int
	// Event waits for completions on a completion channel instead of busy
	// polling (perftest -e).
	Event bool
	// SRQ makes the passive side receive through a shared receive queue.
	SRQ bool
}

// Unsupported is a combination the verb, transport or device does not
// allow; benchmarks skip it with its reason.
type Unsupported struct{ Reason string }

func (u *Unsupported) Error() string { return "not applicable: " + u.Reason }

func unsupported(format string, a ...any) error { return &Unsupported{fmt.Sprintf(format, a...)} }

// IsUnsupported tells whether err says the combination cannot run here.
func IsUnsupported(err error) bool {
	var u *Unsupported
	return errors.As(err, &u)
}

func (s *Spec) defaults() {
	if s.QPs == 0 {
		s.QPs = 1
	}
	if s.QD == 0 {
		s.QD = 128
	}
	if s.Batch == 0 {
		s.Batch = 1
	}
	if s.Signal == 0 {
		s.Signal = 1
	}
	if s.isAtomic() && s.Size == 0 {
		s.Size = 8
	}
}

func (s *Spec) isAtomic() bool { return s.Op == verbs.OpFetchAdd || s.Op == verbs.OpCmpSwap }
func (s *Spec) isSend() bool   { return s.Op == verbs.OpSend || s.Op == verbs.OpSendImm }

// consumesRecv tells whether the verb consumes a receive WR at the passive
// side (SEND and RDMA WRITE with immediate).
func (s *Spec) consumesRecv() bool { return s.isSend() || s.Op == verbs.OpWriteImm }

// Limits are the device facts a Spec is checked against.
type Limits struct {
	Device   string
	Attr     verbs.DeviceAttr
	Port     int
	PortAttr verbs.PortAttr
}

// Limits returns d's limits.
func (d *Dev) Limits() Limits {
	return Limits{Device: d.Name(), Attr: d.Attr(), Port: d.Port, PortAttr: d.PortAttr}
}

// Check validates s against d before anything is created: see CheckLimits.
func (s Spec) Check(d *Dev, streaming bool) error { return s.CheckLimits(d.Limits(), streaming) }

// CheckLimits validates s against a device's limits. Malformed values
// (negative or zero counts, batch above depth…) are plain errors naming
// the value and the limit; combinations the verb, transport or device
// cannot do are *Unsupported.
func (s Spec) CheckLimits(d Limits, streaming bool) error {
	s.defaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("rdmatest: "+format, a...)) }
	if s.Size < 1 {
		bad("message size %d must be at least 1 byte", s.Size)
	}
	if s.QPs < 1 {
		bad("qps %d must be at least 1", s.QPs)
	}
	if s.QD < 1 {
		bad("qd %d must be at least 1", s.QD)
	}
	if s.Batch < 1 {
		bad("batch %d must be at least 1", s.Batch)
	}
	if s.Signal < 1 {
		bad("signal interval %d must be at least 1", s.Signal)
	}
	if streaming {
		if s.Batch > s.QD {
			bad("batch %d exceeds qd %d (WRs per post cannot exceed the outstanding WRs allowed)", s.Batch, s.QD)
		}
		if s.Signal > s.QD {
			bad("signal interval %d exceeds qd %d (the send queue would fill before a completion is asked for)", s.Signal, s.QD)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	a := d.Attr
	if s.QD > a.MaxQPWR {
		return fmt.Errorf("rdmatest: qd %d exceeds %s's max_qp_wr %d", s.QD, d.Device, a.MaxQPWR)
	}
	if s.QPs > a.MaxQP/2 {
		return fmt.Errorf("rdmatest: qps %d needs %d QPs (two sides), above %s's max_qp %d", s.QPs, 2*s.QPs, d.Device, a.MaxQP)
	}
	if max := d.PortAttr.MaxMsgSize; uint64(s.Size) > uint64(max) {
		return unsupported("size %d exceeds %s port %d max_msg_sz %d", s.Size, d.Device, d.Port, max)
	}
	switch s.Transport {
	case verbs.TransportUC:
		if !(s.isSend() || s.Op == verbs.OpWrite || s.Op == verbs.OpWriteImm) {
			return unsupported("UC supports SEND and RDMA WRITE only, not %s", s.Op)
		}
	case verbs.TransportUD:
		if !s.isSend() {
			return unsupported("UD supports SEND only, not %s", s.Op)
		}
		if mtu := d.PortAttr.ActiveMTU; s.Size > mtu {
			return unsupported("UD message size %d exceeds the path MTU %d", s.Size, mtu)
		}
	}
	if s.isAtomic() {
		if a.AtomicCap == verbs.AtomicNone {
			return unsupported("%s has no atomic support", d.Device)
		}
		if s.Size != 8 {
			return fmt.Errorf("rdmatest: atomic operations move exactly 8 bytes, not %d", s.Size)
		}
	}
	if s.Inline {
		if s.Op == verbs.OpRead || s.isAtomic() {
			return unsupported("inline does not apply to %s (no outgoing payload)", s.Op)
		}
		if s.Size > a.MaxInline {
			return unsupported("inline size %d exceeds %s's max_inline_data %d", s.Size, d.Device, a.MaxInline)
		}
	}
	if s.SRQ && !s.consumesRecv() {
		return unsupported("an SRQ only matters for verbs that consume a receive, not %s", s.Op)
	}
	if !streaming && s.QPs > 1 {
		return unsupported("latency is measured on one QP, not %d", s.QPs)
	}
	if s.Event && (s.Op == verbs.OpWrite) && !streaming {
		return unsupported("write latency waits on memory, not on completions: event mode does not apply")
	}
	return nil
}

// pairConfig is the pair a spec needs.
func (s Spec) pairConfig(streaming bool) PairConfig {
	c := PairConfig{Transport: s.Transport, QPs: s.QPs, SlotSize: s.Size, SRQ: s.SRQ, Event: s.Event, SendDepth: 4}
	if streaming {
		c.SendDepth = s.QD + 1 // +1 for the final completion marker
	}
	if s.Inline {
		c.Inline = s.Size
	}
	if !s.consumesRecv() {
		c.RecvDepth = 1
	}
	return c
}
