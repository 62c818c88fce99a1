package engine

import (
	"errors"
	"fmt"
	"os"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// A remote client's Setup is checked by the same rules as a local
// benchmark's Spec (CheckLimits), against the peer's device, plus what
// only a passive side has to agree on: the role must be the one the
// client's own side would ask for (roleFor), every slot must hold one
// message, and every depth must fit the device. CheckSetup runs before
// anything is created, so no request can reach the roles with values they
// cannot take (a write-echo of size 0 or larger than its slot indexed
// out of range).

// SetupSpec is the Spec a Setup describes, as the client's side built
// it: the role decides the kind (sink: stream; echo and write-echo:
// latency; target: stream). A role that no client side asks for with
// this verb is an error naming both. (A target serves READ and atomic
// latency runs too; it is checked as a stream, the looser of the two.)
func SetupSpec(req *oob.Setup) (Spec, error) {
	sc := req.Scenario
	op, err := verbs.ParseOpcode(sc.Op)
	if err != nil {
		return Spec{}, fmt.Errorf("rdmatest: setup: %w", err)
	}
	transport, err := verbs.ParseTransport(sc.Transport)
	if err != nil {
		return Spec{}, fmt.Errorf("rdmatest: setup: %w", err)
	}
	s := Spec{Op: op, Transport: transport, Size: sc.Size, QPs: sc.QPs, QD: sc.SendDepth,
		Inline: sc.Inline > 0, SRQ: sc.SRQ, SignalAll: sc.SignalAll}
	s.HeaderOnly = sc.Size == 0 && (op == verbs.OpSendImm || op == verbs.OpWriteImm)
	switch passiveRole(sc.Role) {
	case roleSink, roleTarget:
		s.Kind = KindStream
	case roleEcho, roleWriteEcho:
		s.Kind = KindLatency
	case roleBidir:
		s.Kind, s.Bidir = KindStream, true
		if st := sc.Stream; st != nil { // oob checked it is there
			s.QD, s.Batch, s.Signal = st.QD, st.Batch, st.Signal
		}
	case roleWriteRPC:
		s.Kind = KindRPC
		if r := sc.RPC; r != nil { // oob checked it is there
			s.QD = r.Window
		}
	default:
		return Spec{}, fmt.Errorf("rdmatest: setup: unknown role %q (sink, echo, write-echo, target, bidir, write-rpc)", trimName(sc.Role))
	}
	if want := roleFor(&s); string(want) != sc.Role {
		return Spec{}, fmt.Errorf("rdmatest: setup: role %q does not serve %s (a client asks for %q with this verb)", sc.Role, op, want)
	}
	return s, nil
}

func trimName(s string) string {
	if len(s) > oob.MaxNameLen {
		return s[:oob.MaxNameLen] + "…"
	}
	return s
}

// CheckSetup validates a client's Setup against the peer's device limits
// before anything is created: the message bounds (oob), the role against
// the verb and transport, the scenario by Spec.CheckLimits, and the
// passive side's own sizes — slot at least the message, queue depths,
// SRQ depth and inline size within the device's limits, inline size at
// least the message when the answers are inlined, the registered bytes
// within max_mr_size. Every error names the value and the limit.
func CheckSetup(req *oob.Setup, lim Limits) error {
	if err := req.Validate(); err != nil {
		return fmt.Errorf("rdmatest: setup: %w", err)
	}
	if passiveRole(req.Scenario.Role) == roleProgram {
		return checkProgramSetup(req, lim)
	}
	s, err := SetupSpec(req)
	if err != nil {
		return err
	}
	sc, a := req.Scenario, lim.Attr
	var errs []error
	bad := func(format string, v ...any) { errs = append(errs, fmt.Errorf("rdmatest: setup: "+format, v...)) }
	span := s.Size
	if s.isAtomic() && span == 0 {
		span = 8
	}
	if sc.SlotSize < span {
		bad("slot_size %d is smaller than the message size %d (a slot holds one message)", sc.SlotSize, span)
	}
	if sc.SendDepth > a.MaxQPWR {
		bad("send_depth %d exceeds %s's max_qp_wr %d", sc.SendDepth, lim.Device, a.MaxQPWR)
	}
	if r := passiveRole(sc.Role); (r == roleEcho || r == roleWriteEcho || r == roleWriteRPC) && sc.SendDepth < 2 {
		bad("send_depth %d: the %s role answers every message and needs at least 2 (one WR in every half is signaled)", sc.SendDepth, r)
	}
	if sc.SRQ && sc.RecvDepth > a.MaxSRQWR {
		bad("recv_depth %d (SRQ) exceeds %s's max_srq_wr %d", sc.RecvDepth, lim.Device, a.MaxSRQWR)
	}
	if !sc.SRQ && sc.RecvDepth > a.MaxQPWR {
		bad("recv_depth %d exceeds %s's max_qp_wr %d", sc.RecvDepth, lim.Device, a.MaxQPWR)
	}
	if sc.Inline > a.MaxInline {
		bad("inline %d exceeds %s's max_inline_data %d", sc.Inline, lim.Device, a.MaxInline)
	}
	if sc.Inline > 0 && sc.Inline < s.Size {
		bad("inline %d is smaller than the message size %d (the peer's answers are inlined)", sc.Inline, s.Size)
	}
	if c := SetupCost(req, lim); a.MaxMRSize > 0 && uint64(c.Registered) > a.MaxMRSize {
		bad("registered memory %d bytes exceeds %s's max_mr_size %d", c.Registered, lim.Device, a.MaxMRSize)
	}
	lim.PortAttr.ActiveMTU = min(lim.PortAttr.ActiveMTU, req.MTU) // the path MTU both sides use
	check := s.CheckLimits
	if s.Kind == KindRPC {
		check = s.CheckRPC // the window and a response in one datagram too
	}
	if err := check(lim); err != nil {
		errs = append(errs, fmt.Errorf("rdmatest: setup (%s %s %s, %s): %w", sc.Role, sc.Transport, sc.Op, s.Kind, err))
	}
	return errors.Join(errs...)
}

// Cost is what a passive side for one Setup makes the peer create, for
// its per-client and global limits.
type Cost struct {
	// Sides is the number of sides (each with its own CQ): 2 for role
	// write-rpc, whose responses leave from a UD side of their own.
	Sides int
	QPs   int
	// WRs are the work requests of every queue: send and receive queues
	// of every QP (or one SRQ instead of the receive queues).
	WRs int
	// CQEs are the entries of the side's completion queue.
	CQEs int
	// Registered is the registered message memory in bytes (two slots
	// per QP, page rounded); Inline the send-queue space reserved for
	// inline data (QPs × send depth × inline bytes). Memory is both.
	Registered, Inline int64
}

// Memory is the bytes a Setup pins or reserves: registered memory and
// inline space.
func (c Cost) Memory() int64 { return c.Registered + c.Inline }

// SetupCost computes what NewPassive creates for req on a device with
// lim: the side NewSide makes (the CQ depth is clamped to max_cqe as
// NewSide does), and for role write-rpc a second, UD side of one QP with
// the same depths and slots, which sends the responses. req must have
// passed oob validation (its values are bounded).
func SetupCost(req *oob.Setup, lim Limits) Cost {
	c := sideCost(req.Scenario, lim)
	if passiveRole(req.Scenario.Role) == roleWriteRPC {
		sc := req.Scenario
		sc.Transport, sc.QPs, sc.SRQ = verbs.TransportUD.String(), 1, false
		r := sideCost(sc, lim)
		c.QPs, c.WRs, c.CQEs = c.QPs+r.QPs, c.WRs+r.WRs, c.CQEs+r.CQEs
		c.Registered, c.Inline = c.Registered+r.Registered, c.Inline+r.Inline
		c.Sides++
	}
	return c
}

// sideCost is what NewSide creates for one side of scenario sc.
func sideCost(sc oob.Scenario, lim Limits) Cost {
	qps, send, recv := int64(sc.QPs), int64(sc.SendDepth), int64(sc.RecvDepth)
	slot := int64(sc.SlotSize)
	if sc.Transport == verbs.TransportUD.String() {
		slot += grhBytes
	}
	slot = (slot + 63) &^ 63
	page := int64(os.Getpagesize())
	reg := (2*qps*slot + page - 1) / page * page
	wrs := qps * (send + recv)
	if sc.SRQ {
		wrs = qps*send + recv
	}
	cqe := qps * (send + recv)
	if m := int64(lim.Attr.MaxCQE); m > 0 && cqe > m {
		cqe = m
	}
	return Cost{Sides: 1, QPs: sc.QPs, WRs: int(wrs), CQEs: int(cqe), Registered: reg, Inline: qps * send * int64(sc.Inline)}
}

// Abort moves every QP of the passive side to the error state: posted
// work requests flush at once, so a role waiting for a completion ends
// without waiting for its deadline (the peer's shutdown). Close is still
// needed to release everything.
func (p *Passive) Abort() error {
	if p.side == nil {
		return nil
	}
	var errs []error
	for _, qp := range p.qps() {
		if err := qp.ToError(); err != nil {
			errs = append(errs, fmt.Errorf("rdmatest: QP %#x to error: %w", qp.QPN(), err))
		}
	}
	return errors.Join(errs...)
}
