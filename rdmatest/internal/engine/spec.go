package engine

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/sizes"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// Kind is what a Spec measures: the runner that takes it and the rules
// that apply (see CheckLimits). Latency, Stream and EchoRPC set it.
type Kind int

// Kinds of measurement.
const (
	// KindLatency is one operation at a time (Latency).
	KindLatency Kind = iota + 1
	// KindStream is a stream with QD operations outstanding (Stream).
	KindStream
	// KindRPC is echo RPCs with a window of QD (EchoRPC).
	KindRPC
)

// String returns "latency", "stream" or "rpc".
func (k Kind) String() string {
	switch k {
	case KindLatency:
		return "latency"
	case KindStream:
		return "stream"
	case KindRPC:
		return "rpc"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Spec is one measured scenario: which verb, over which transport, with
// which knobs. The zero values of the knobs are perftest's defaults.
type Spec struct {
	// Kind is what is measured; the runner sets it.
	Kind Kind
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
	// SignalAll (latency runs) does perftest's latency work on both
	// sides: every WR signaled and its completion awaited in its
	// iteration, receives reposted after every message (perftest's
	// latency tests force tx_depth 1, hence cq_mod 1). The default
	// signals one WR in half the send queue and reposts in batches,
	// as an application that pipelines would. -rdma.signal-all sets it
	// for every latency run. The work happens after the answer is seen:
	// it is in the cycle samples (cycle-p50-ns …), not in p50-ns ….
	SignalAll bool
	// MTU is the path MTU in bytes (perftest -m): 256, 512, 1024, 2048
	// or 4096, at most the port's active MTU; 0 = the active MTU.
	MTU int
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
	s.QPs = cmp.Or(s.QPs, 1)
	s.QD = cmp.Or(s.QD, 128)
	s.Batch = cmp.Or(s.Batch, 1)
	s.Signal = cmp.Or(s.Signal, 1)
	if s.isAtomic() {
		s.Size = cmp.Or(s.Size, 8)
		s.Counters = cmp.Or(s.Counters, 1)
		s.Stride = cmp.Or(s.Stride, 8)
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
// CheckLimits. Every variant runs against a remote peer too: bidir's
// stream back is the peer's, side=responder counts at the peer's sink,
// threads are a session each.
// Threads run against a peer: each thread's pair is a session of its
// own, its passive side the peer's, so the peer's -max-clients must be
// at least the threads (else it refuses one as busy, which fails the
// run).
func (s Spec) Check(d *Dev) error {
	if d.Opts.Peer != "" && s.QPs > oob.MaxQPs {
		return bad("qps %d exceeds what one session with a remote peer carries (%d)", s.QPs, oob.MaxQPs)
	}
	return s.CheckLimits(d.Limits())
}

// CheckLimits validates s against a device's limits, rule by rule (see
// valueRules and deviceRules). Malformed values (negative or zero counts,
// batch above depth…) are plain errors naming the value and the limit,
// all of them at once; then the first combination the verb, transport or
// device cannot do is an *Unsupported (or, for a limit of the device, a
// plain error naming it).
func (s Spec) CheckLimits(d Limits) error {
	s.defaults()
	if s.Kind < KindLatency || s.Kind > KindRPC {
		return fmt.Errorf("rdmatest: spec of kind %v: want latency, stream or rpc (Latency, Stream and EchoRPC set it)", s.Kind)
	}
	var errs []error
	for _, r := range valueRules {
		if err := r.check(&s, &d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, r := range deviceRules {
		if err := r.check(&s, &d); err != nil {
			return err
		}
	}
	return nil
}

// rule is one named check of a Spec against a device's limits.
type rule struct {
	name  string
	check func(s *Spec, d *Limits) error
}

// valueRules refuse malformed values and combinations of knobs, whatever
// the device; CheckLimits reports every one that fails.
var valueRules = []rule{
	{"size", checkSize},
	{"counts", checkCounts},
	{"window", checkWindow},
	{"signal rules", checkSignalRules},
	{"counters", checkAtomicCounters},
	{"threads", checkThreads},
	{"bidir", checkBidir},
	{"gap", checkGap},
	{"signal-all", checkSignalAll},
	{"load", checkLoad},
	{"mtu value", checkMTUValue},
}

// deviceRules refuse what this device, verb or transport cannot do;
// CheckLimits reports the first that fails.
var deviceRules = []rule{
	{"device depth", checkDeviceDepth},
	{"device QPs", checkDeviceQPs},
	{"message size", checkMsgSize},
	{"mtu", checkMTUPort},
	{"iwarp", checkIWARP},
	{"transport", checkTransport},
	{"counter span", checkCounterSpan},
	{"atomics", checkAtomics},
	{"inline", checkInline},
	{"srq", checkSRQ},
	{"inbound", checkInbound},
	{"latency QPs", checkLatencyQPs},
	{"event", checkEvent},
}

func bad(format string, a ...any) error { return fmt.Errorf("rdmatest: "+format, a...) }

func checkSize(s *Spec, _ *Limits) error {
	switch {
	case s.HeaderOnly && s.Size != 0:
		return bad("header-only messages carry no payload: size %d must be 0", s.Size)
	case s.HeaderOnly && s.Op != verbs.OpSendImm && s.Op != verbs.OpWriteImm:
		return bad("header-only needs a verb with immediate data (SEND_WITH_IMM or RDMA_WRITE_WITH_IMM), not %s", s.Op)
	case !s.HeaderOnly && s.Size < 1:
		return bad("message size %d must be at least 1 byte (size 0 only with HeaderOnly)", s.Size)
	}
	return nil
}

func checkCounts(s *Spec, _ *Limits) error {
	var errs []error
	for _, c := range []struct {
		name string
		v    int
	}{{"qps", s.QPs}, {"qd", s.QD}, {"batch", s.Batch}, {"signal interval", s.Signal}} {
		if c.v < 1 {
			errs = append(errs, bad("%s %d must be at least 1", c.name, c.v))
		}
	}
	return errors.Join(errs...)
}

// checkWindow checks a stream's window as its loop will
// (verbs.CheckStreamWindow); counts below 1 are checkCounts'.
func checkWindow(s *Spec, _ *Limits) error {
	if s.Kind != KindStream || s.QD < 1 || s.Batch < 1 || s.Signal < 1 {
		return nil
	}
	if err := verbs.CheckStreamWindow(s.QD, s.Batch, s.Signal); err != nil {
		return bad("%w", err)
	}
	return nil
}

func checkSignalRules(s *Spec, _ *Limits) error {
	if s.Kind != KindStream || !s.SignalRules {
		return nil
	}
	var errs []error
	if s.Batch > s.Signal {
		errs = append(errs, bad("batch %d exceeds the signal interval %d (rdma_bench's invariant postlist ≤ unsig_batch)", s.Batch, s.Signal))
	}
	if s.QD < 2*s.Signal {
		errs = append(errs, bad("send-queue depth (qd) %d is below 2 × signal interval %d = %d (rdma_bench's invariant sq_depth ≥ 2·unsig_batch)", s.QD, s.Signal, 2*s.Signal))
	}
	return errors.Join(errs...)
}

func checkAtomicCounters(s *Spec, _ *Limits) error {
	if !s.isAtomic() {
		if s.Counters > 1 || s.Stride != 0 {
			return bad("counters %d and stride %d apply to atomics only, not %s", s.Counters, s.Stride, s.Op)
		}
		return nil
	}
	var errs []error
	if s.Counters < 1 {
		errs = append(errs, bad("counters %d must be at least 1", s.Counters))
	}
	if s.Stride < 8 || s.Stride%8 != 0 {
		errs = append(errs, bad("counter stride %d must be a positive multiple of 8 bytes (atomics are 8-byte aligned)", s.Stride))
	}
	return errors.Join(errs...)
}

func checkThreads(s *Spec, _ *Limits) error {
	switch {
	case s.Threads < 0:
		return bad("threads %d must be at least 0 (0: one stream in the benchmark's goroutine)", s.Threads)
	case s.Threads > 0 && (s.Bidir || s.Inbound || s.Kind != KindStream):
		return bad("threads %d applies to one-way streams only (not with bidir, inbound or latency runs)", s.Threads)
	}
	return nil
}

func checkBidir(s *Spec, _ *Limits) error {
	switch {
	case s.Bidir && s.Kind != KindStream:
		return bad("bidir applies to streaming runs only")
	case s.Inbound && s.Bidir:
		return bad("inbound and bidir cannot be combined (both sides are requesters)")
	}
	return nil
}

func checkGap(s *Spec, _ *Limits) error {
	switch {
	case s.Gap < 0 || s.Gap > time.Second:
		return bad("gap %v must be 0 … 1s", s.Gap)
	case s.Gap > 0 && s.Kind != KindLatency:
		return bad("a gap between round trips applies to latency runs, not %s runs", s.Kind)
	}
	return nil
}

func checkSignalAll(s *Spec, _ *Limits) error {
	if s.SignalAll && s.Kind != KindLatency {
		return bad("signal-all (perftest's latency work) applies to latency runs, not %s runs", s.Kind)
	}
	return nil
}

func checkLoad(s *Spec, _ *Limits) error {
	switch {
	case s.Load < 0 || s.Load > 1:
		return bad("offered load %g must be a fraction of the peak rate in (0, 1]", s.Load)
	case s.Load > 0 && (s.Kind != KindStream || s.Bidir || s.Inbound || s.Threads > 0 || s.isAtomic()):
		return bad("an offered load applies to one-way streams of SEND, WRITE or READ (not latency runs, bidir, inbound, threads or atomics)")
	case s.Load > 0 && s.Batch > 1:
		return bad("an offered load posts each message at its due time: batch %d must be 1", s.Batch)
	}
	return nil
}

func checkDeviceDepth(s *Spec, d *Limits) error {
	if s.QD > d.Attr.MaxQPWR {
		return bad("qd %d exceeds %s's max_qp_wr %d", s.QD, d.Device, d.Attr.MaxQPWR)
	}
	return nil
}

func checkDeviceQPs(s *Spec, d *Limits) error {
	if s.QPs > d.Attr.MaxQP/2 {
		return bad("qps %d needs %d QPs (two sides), above %s's max_qp %d", s.QPs, 2*s.QPs, d.Device, d.Attr.MaxQP)
	}
	if t := max(s.Threads, 1); t*s.QPs > d.Attr.MaxQP/2 {
		return bad("threads %d × qps %d needs %d QPs (two sides), above %s's max_qp %d", t, s.QPs, 2*t*s.QPs, d.Device, d.Attr.MaxQP)
	}
	return nil
}

func checkMsgSize(s *Spec, d *Limits) error {
	if max := d.PortAttr.MaxMsgSize; uint64(s.Size) > uint64(max) {
		return unsupported("size %d exceeds %s port %d max_msg_sz %d", s.Size, d.Device, d.Port, max)
	}
	return nil
}

func checkMTUValue(s *Spec, _ *Limits) error {
	if s.MTU != 0 && (s.MTU < 256 || s.MTU > 4096 || s.MTU&(s.MTU-1) != 0) {
		return bad("mtu %d must be 256, 512, 1024, 2048 or 4096 bytes (0: the port's active MTU)", s.MTU)
	}
	return nil
}

func checkMTUPort(s *Spec, d *Limits) error {
	if s.MTU > d.PortAttr.ActiveMTU {
		return unsupported("mtu %d exceeds %s port %d's active MTU %d", s.MTU, d.Device, d.Port, d.PortAttr.ActiveMTU)
	}
	return nil
}

// SkipIWARPRC is why a UD or UC benchmark skips on an iWARP device.
const SkipIWARPRC = "transport iWARP: reliable connected QPs only (ibv_create_qp would be EOPNOTSUPP)"

// checkIWARP refuses UD and UC on an iWARP device: iWARP defines only
// reliable connected QPs (siw, iw_cxgb4 and irdma fail ibv_create_qp of
// any other type with EOPNOTSUPP).
//
// It also refuses the verbs with immediate data there: RDMAP (RFC 5040)
// has none, and siw fails RDMA_WRITE_WITH_IMM and SEND_WITH_IMM in
// ibv_post_send with EINVAL.
func checkIWARP(s *Spec, d *Limits) error {
	if d.Attr.NodeTransport != verbs.NodeTransportIWARP {
		return nil
	}
	if s.Transport != verbs.TransportRC {
		return unsupported("%s: %s: %s", d.Device, s.Transport, SkipIWARPRC)
	}
	if s.Op == verbs.OpWriteImm || s.Op == verbs.OpSendImm {
		return unsupported("%s: %s: %s", d.Device, s.Op, SkipIWARPImm)
	}
	return nil
}

// SkipIWARPImm is why a benchmark of a verb with immediate data skips on
// an iWARP device.
const SkipIWARPImm = "transport iWARP: no immediate data (RDMAP has none; siw's ibv_post_send is EINVAL)"

func checkTransport(s *Spec, d *Limits) error {
	switch s.Transport {
	case verbs.TransportUC:
		if !(s.isSend() || s.Op == verbs.OpWrite || s.Op == verbs.OpWriteImm) {
			return unsupported("UC supports SEND and RDMA WRITE only, not %s", s.Op)
		}
	case verbs.TransportUD:
		if !s.isSend() {
			return unsupported("UD supports SEND only, not %s", s.Op)
		}
		if mtu := cmp.Or(s.MTU, d.PortAttr.ActiveMTU); s.Size > mtu {
			return unsupported("UD message size %d exceeds the path MTU %d", s.Size, mtu)
		}
	}
	return nil
}

func checkCounterSpan(s *Spec, _ *Limits) error {
	if !s.isAtomic() {
		return nil
	}
	// Each factor within sizes.MaxSize first, so that the product cannot wrap.
	if s.Counters > sizes.MaxSize/8 || s.Stride > sizes.MaxSize {
		return bad("%d counters %d bytes apart span more than %d bytes", s.Counters, s.Stride, sizes.MaxSize)
	}
	if span := s.counterSpan(); span > sizes.MaxSize {
		return bad("%d counters %d bytes apart span %d bytes, above %d", s.Counters, s.Stride, span, sizes.MaxSize)
	}
	return nil
}

func checkAtomics(s *Spec, d *Limits) error {
	if !s.isAtomic() {
		return nil
	}
	if d.Attr.AtomicCap == verbs.AtomicNone {
		return unsupported("%s has no atomic support (atomic_cap %s)", d.Device, d.Attr.AtomicCap)
	}
	if s.Size != 8 {
		return bad("atomic operations move exactly 8 bytes, not %d", s.Size)
	}
	return nil
}

func checkInline(s *Spec, d *Limits) error {
	if !s.Inline {
		return nil
	}
	if s.Op == verbs.OpRead || s.isAtomic() {
		return unsupported("inline does not apply to %s (no outgoing payload)", s.Op)
	}
	if s.Size > d.Attr.MaxInline {
		return unsupported("inline size %d exceeds %s's max_inline_data %d", s.Size, d.Device, d.Attr.MaxInline)
	}
	return nil
}

func checkSRQ(s *Spec, _ *Limits) error {
	if s.SRQ && !s.consumesRecv() {
		return unsupported("an SRQ only matters for verbs that consume a receive, not %s", s.Op)
	}
	return nil
}

func checkInbound(s *Spec, _ *Limits) error {
	if s.Inbound && (s.Kind != KindStream || !s.consumesRecv()) {
		return unsupported("the inbound rate is counted by the passive side's receive completions: it needs a stream of a verb that consumes a receive (SEND, SEND_WITH_IMM, RDMA_WRITE_WITH_IMM), not %s", s.Op)
	}
	return nil
}

func checkLatencyQPs(s *Spec, _ *Limits) error {
	if s.Kind != KindStream && s.QPs > 1 {
		return unsupported("latency is measured on one QP, not %d", s.QPs)
	}
	return nil
}

func checkEvent(s *Spec, _ *Limits) error {
	if s.Event && s.Op == verbs.OpWrite && s.Kind != KindStream {
		return unsupported("write latency waits on memory, not on completions: event mode does not apply")
	}
	return nil
}

// PeerSetup is the Setup a client sends a remote peer for s (defaults
// applied; no endpoints, targets, MTU or QKey yet), so that a caller can
// price a run's sides before anything is built: rdmapeer's agent puts it
// through the peer's own cost (peer.SetupCost) for its side and the
// destination's. A pair that could not be built (a buffer above
// sizes.MaxSize: counters × stride, QPs × size) is an error instead.
// Threads > 0 builds that many such pairs.
func (s Spec) PeerSetup() (*oob.Setup, error) {
	s.defaults()
	c := s.pairConfig()
	c.defaults()
	if err := c.check(); err != nil {
		return nil, err
	}
	return setupRequest(&c, 0, 0), nil
}

// iwarpRecvDepth is the most receives a SEND stream keeps posted on a
// device without RNR flow control (see streamPairConfig).
const iwarpRecvDepth = 16384

// streamPairConfig is the pair a stream needs on a device with attr:
// pairConfig's, with a deeper receive queue where the transport has no
// RNR flow control (iWARP). There a SEND that finds no receive posted is
// fatal (siw: TERMINATE, DDP "no buffer", the sender's WR a local QP
// operation error), not retried as on InfiniBand and RoCE; and a send
// completes once its data is on the wire, not once the receiver's loop
// has reposted, so the sender runs ahead of a descheduled passive loop
// by any amount. A peak-rate run of 5000 messages against the 512
// default receives failed so on siw0 in 4 of 15 runs in a TCG guest
// (docs/notes/siw-2026-12-06-no-rnr.md). The queue holds as many
// receives as the device allows, up to iwarpRecvDepth, within its CQ
// (each receive may complete before the loop polls); they all land in
// the one receive buffer, so the depth costs only queue entries.
func (s Spec) streamPairConfig(a verbs.DeviceAttr) PairConfig {
	c := s.pairConfig()
	if a.NodeTransport != verbs.NodeTransportIWARP || !s.consumesRecv() {
		return c
	}
	limit := a.MaxQPWR
	if s.SRQ {
		limit = a.MaxSRQWR
	}
	qps := max(s.QPs, 1)
	depth := min(iwarpRecvDepth, limit, a.MaxCQE/qps-c.SendDepth)
	if depth > 512 { // the default's
		c.RecvDepth = depth
	}
	return c
}

// pairConfig is the pair a spec needs.
func (s Spec) pairConfig() PairConfig {
	// Latency runs keep up to 64 unsignaled sends in flight (one in 32
	// signaled), so the loop never waits for its own send completions.
	c := PairConfig{Transport: s.Transport, QPs: s.QPs, SlotSize: s.counterSpan(), SRQ: s.SRQ, Event: s.Event, SendDepth: 64, MTU: s.MTU}
	if s.Kind == KindStream {
		c.SendDepth = s.QD + 1 // +1 for the final completion marker
	}
	c.Spec = &s
	if s.Inline {
		c.Inline = s.Size
	}
	if !s.consumesRecv() {
		c.RecvDepth = 1
	}
	return c
}
