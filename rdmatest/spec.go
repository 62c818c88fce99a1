package rdmatest

import (
	"errors"
	"fmt"
	"time"

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

	// Bidir (streaming only) runs the mirror stream from B to A at the
	// same time, in lockstep: see Stream.
	Bidir bool
	// HeaderOnly sends messages without payload: Size must be 0 and the
	// verb one that carries its 4 bytes of immediate data (SEND_WITH_IMM,
	// RDMA_WRITE_WITH_IMM): rdma_bench's header-only SEND (ATC'16 §3.2).
	// It is the only way to ask for size 0.
	HeaderOnly bool
	// Counters (atomics only) rotates the remote address of successive
	// WRs over this many 8-byte counters, Stride bytes apart, in the
	// passive side's memory (rdma_bench atomics-sequencer's Z and
	// kAppStrideSize; default 1 counter, stride 8).
	Counters, Stride int
	// SignalRules enforces rdma_bench's selective-signalling invariants
	// (README "Selective signaling logic"): Batch ≤ Signal (a post never
	// spans two signaled WRs) and send-queue depth QD ≥ 2·Signal (up to
	// 2·Signal−1 WRs can be unacknowledged).
	SignalRules bool
	// Threads (streaming), when ≥ 1, runs the stream from this many
	// goroutines, each locked to its own OS thread with its own pair of
	// QPs connections (QPs per thread), CQs and recorder: see Stream.
	// 0 = the single-goroutine stream.
	Threads int
	// Inbound (streaming, verbs that consume a receive) reports the rate
	// seen at the passive side instead of the requester's: see Stream.
	Inbound bool
	// Gap (latency runs) is idle time after each round trip, the loop
	// spinning on the clock (perftest --latency_gap): on real NICs it
	// changes the tail (power states, caches going cold).
	Gap time.Duration
	// Load (streaming), when positive, makes the stream open-loop at
	// this fraction of the peak rate (0 < Load ≤ 1): the peak is measured
	// first on the same pair, closed-loop; see Stream.
	Load float64
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
	if s.isAtomic() {
		if s.Counters == 0 {
			s.Counters = 1
		}
		if s.Stride == 0 {
			s.Stride = 8
		}
	}
}

// counterSpan is the bytes of the passive side's "in" slot the atomics'
// counters occupy (Size for every other verb).
func (s *Spec) counterSpan() int {
	if s.isAtomic() {
		return (s.Counters-1)*s.Stride + 8
	}
	return s.Size
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
	return Limits{Device: d.Name(), Attr: d.Attr(), Port: d.PortNum, PortAttr: d.PortAttr}
}

// Check validates s against d before anything is created: see
// CheckLimits. With a remote peer, the variants whose passive side does
// more than a peer offers (bidir, inbound counting, threads) are
// *Unsupported.
func (s Spec) Check(d *Dev, streaming bool) error {
	if d.Opts.Peer != "" && (s.Bidir || s.Inbound || s.Threads > 1) {
		return unsupported("bidir, side=responder and threads run with both sides in this process, not with a remote peer (-rdma.peer)")
	}
	return s.CheckLimits(d.Limits(), streaming)
}

// CheckLimits validates s against a device's limits. Malformed values
// (negative or zero counts, batch above depth…) are plain errors naming
// the value and the limit; combinations the verb, transport or device
// cannot do are *Unsupported.
func (s Spec) CheckLimits(d Limits, streaming bool) error {
	s.defaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("rdmatest: "+format, a...)) }
	switch {
	case s.HeaderOnly && s.Size != 0:
		bad("header-only messages carry no payload: size %d must be 0", s.Size)
	case s.HeaderOnly && s.Op != verbs.OpSendImm && s.Op != verbs.OpWriteImm:
		bad("header-only needs a verb with immediate data (SEND_WITH_IMM or RDMA_WRITE_WITH_IMM), not %s", s.Op)
	case !s.HeaderOnly && s.Size < 1:
		bad("message size %d must be at least 1 byte (size 0 only with HeaderOnly)", s.Size)
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
		if s.SignalRules && s.Batch > s.Signal {
			bad("batch %d exceeds the signal interval %d (rdma_bench's invariant postlist ≤ unsig_batch)", s.Batch, s.Signal)
		}
		if s.SignalRules && s.QD < 2*s.Signal {
			bad("send-queue depth (qd) %d is below 2 × signal interval %d = %d (rdma_bench's invariant sq_depth ≥ 2·unsig_batch)", s.QD, s.Signal, 2*s.Signal)
		}
	}
	if s.isAtomic() {
		if s.Counters < 1 {
			bad("counters %d must be at least 1", s.Counters)
		}
		if s.Stride < 8 || s.Stride%8 != 0 {
			bad("counter stride %d must be a positive multiple of 8 bytes (atomics are 8-byte aligned)", s.Stride)
		}
	} else if s.Counters > 1 || s.Stride != 0 {
		bad("counters %d and stride %d apply to atomics only, not %s", s.Counters, s.Stride, s.Op)
	}
	if s.Threads < 0 {
		bad("threads %d must be at least 0 (0: one stream in the benchmark's goroutine)", s.Threads)
	}
	if s.Threads > 0 && (s.Bidir || s.Inbound || !streaming) {
		bad("threads %d applies to one-way streams only (not with bidir, inbound or latency runs)", s.Threads)
	}
	if s.Bidir && !streaming {
		bad("bidir applies to streaming runs only")
	}
	if s.Inbound && s.Bidir {
		bad("inbound and bidir cannot be combined (both sides are requesters)")
	}
	switch {
	case s.Gap < 0 || s.Gap > time.Second:
		bad("gap %v must be 0 … 1s", s.Gap)
	case s.Gap > 0 && streaming:
		bad("a gap between round trips applies to latency runs, not streams")
	}
	switch {
	case s.Load < 0 || s.Load > 1:
		bad("offered load %g must be a fraction of the peak rate in (0, 1]", s.Load)
	case s.Load > 0 && (!streaming || s.Bidir || s.Inbound || s.Threads > 0 || s.isAtomic()):
		bad("an offered load applies to one-way streams of SEND, WRITE or READ (not latency runs, bidir, inbound, threads or atomics)")
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
	if t := max(s.Threads, 1); t*s.QPs > a.MaxQP/2 {
		return fmt.Errorf("rdmatest: threads %d × qps %d needs %d QPs (two sides), above %s's max_qp %d", t, s.QPs, 2*t*s.QPs, d.Device, a.MaxQP)
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
	if span := s.counterSpan(); s.isAtomic() && span > MaxSize {
		return fmt.Errorf("rdmatest: %d counters %d bytes apart span %d bytes, above %d", s.Counters, s.Stride, span, MaxSize)
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
	if s.Inbound && (!streaming || !s.consumesRecv()) {
		return unsupported("the inbound rate is counted by the passive side's receive completions: it needs a stream of a verb that consumes a receive (SEND, SEND_WITH_IMM, RDMA_WRITE_WITH_IMM), not %s", s.Op)
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
	// Latency runs keep up to 64 unsignaled sends in flight (one in 32
	// signaled), so the loop never waits for its own send completions.
	c := PairConfig{Transport: s.Transport, QPs: s.QPs, SlotSize: s.counterSpan(), SRQ: s.SRQ, Event: s.Event, SendDepth: 64}
	if streaming {
		c.SendDepth = s.QD + 1 // +1 for the final completion marker
	}
	c.Spec, c.Streaming = &s, streaming
	if s.Inline {
		c.Inline = s.Size
	}
	if !s.consumesRecv() {
		c.RecvDepth = 1
	}
	return c
}
