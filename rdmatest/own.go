package rdmatest

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/internal/engine"
	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/verbs"
)

// Your own pattern: a Pair, a Program for each side, Measure and Serve.
// See the package doc ("Your own pattern") and the examples.

// PairConfig says what NewPair builds. Zero fields take their defaults.
type PairConfig struct {
	// Transport is RC (the default), UC or UD.
	Transport verbs.Transport
	// QPs is the number of QPs per side (default 1); QP i of A is
	// connected to QP i of B.
	QPs int
	// SlotSize is the bytes of memory per QP per direction (default 64):
	// every QP owns an "out" slot and an "in" slot, both 64-byte aligned
	// and rounded up to 64 bytes (on UD the "in" slot also holds the
	// 40-byte GRH in front of each receive).
	SlotSize int
	// SendDepth and RecvDepth are the queue depths per QP (defaults 128
	// and 512, perftest's tx and rx depth).
	SendDepth, RecvDepth int
	// Inline is the inline size to reserve on the send queues (0: none).
	Inline int
	// SRQ gives side B a shared receive queue instead of per-QP ones.
	SRQ bool
	// MTU is the path MTU in bytes (0: the port's active MTU).
	MTU int
}

// Pair is two sides connected QP to QP on one device: A, the requester
// whose program Measure times, and B, the passive side, whose program
// Serve runs (or none: the NIC serves READ, WRITE and atomics alone).
// With -rdma.peer a remote rdmapeer plays side B: its program is sent
// to the peer, which checks and bounds it as any request and runs it in
// its own C loop.
//
// Memory: each side's memory is one region registered for local write
// and every remote access (WRITE, READ, atomics) and zeroed at the start;
// QP i owns its "out" slot and its "in" slot (Side.Out, Side.In). A WR
// addresses the peer's "in" slots only (Side.Peer). Nothing but the
// programs and the peer's WRs changes it.
type Pair struct {
	// A and B describe the sides; B is described even when a remote peer
	// plays it (-rdma.peer).
	A, B *Side
	d    *Dev
	cfg  engine.PairConfig
	e    *engine.Pair // opened by Serve or Measure
	// bSpec is side B's program for a remote peer, sent when Measure
	// opens the pair (the peer must also know the access A's program
	// needs).
	bSpec *prog.Spec
	// bPos is where B's steps were built (Program), for Measure's errors.
	bPos []string
}

// NewPair describes a pair on d; the pair is created and connected by
// the first of Serve and Measure (with -rdma.peer, by Measure: the
// remote peer is sent side B's program and the access side A's needs),
// everything is released when the benchmark ends, and errors fail it.
func NewPair(tb testing.TB, d *Dev, cfg PairConfig) *Pair {
	tb.Helper()
	if cfg.QPs < 0 || cfg.SlotSize < 0 {
		engine.Fatal(tb, fmt.Errorf("rdmatest: PairConfig.QPs %d and SlotSize %d must not be negative", cfg.QPs, cfg.SlotSize))
	}
	ecfg := engine.PairConfig{Transport: cfg.Transport, QPs: cfg.QPs, SlotSize: cfg.SlotSize,
		SendDepth: cfg.SendDepth, RecvDepth: cfg.RecvDepth, Inline: cfg.Inline, SRQ: cfg.SRQ, MTU: cfg.MTU}
	n, size := max(cfg.QPs, 1), cfg.SlotSize
	if size == 0 {
		size = 64 // engine.PairConfig's default
	}
	slot := prog.SlotBytes(size, cfg.Transport == verbs.TransportUD)
	return &Pair{A: &Side{name: "A", qps: n, slot: slot}, B: &Side{name: "B", qps: n, slot: slot}, d: d, cfg: ecfg}
}

// remote tells whether a remote peer plays side B (-rdma.peer).
func (p *Pair) remote() bool { return p.d.Opts.Peer != "" }

// Side describes one side of a Pair: it builds the side's memory ranges,
// the places it addresses in the peer's memory and the steps of its
// program. Ranges and steps are checked when the program starts
// (Measure, Serve): an error names the step.
type Side struct {
	name      string
	qps, slot int
}

// Mem is a range of one side's memory (Side.Out, Side.In).
type Mem struct {
	side string
	m    prog.Mem
}

// Remote is a place in the peer's memory (Side.Peer).
type Remote struct {
	side string
	r    prog.Remote
}

// Out is n bytes at offset off of QP qp's "out" slot: what it sends and
// writes from, by convention, and where PutGen stores the generation
// that a WRITE carries. Out is registered for local write, so a READ's
// or an atomic's result may land here too, but then any WR whose source
// overlaps it sends it on: prefer In (see the package doc, "Where
// results land").
func (s *Side) Out(qp, off, n int) Mem { return Mem{s.name, prog.Mem{QP: qp, Off: off, Len: n}} }

// In is n bytes at offset off of QP qp's "in" slot: what the peer
// writes, reads and updates atomically (Peer on the other side), where
// receives land (Program.KeepRecvs, from offset 0), and where a local
// READ's data and an atomic's old value should land (Read, CmpSwap,
// FetchAdd): at offsets that neither the peer's WRITEs nor the receives
// use.
func (s *Side) In(qp, off, n int) Mem {
	return Mem{s.name, prog.Mem{QP: qp, In: true, Off: off, Len: n}}
}

// Peer is offset off of the peer's QP qp's "in" slot (the peer's In(qp,
// off, …)): the target of this side's WRITE, READ and atomics.
func (s *Side) Peer(qp, off int) Remote { return Remote{s.name, prog.Remote{QP: qp, Off: off}} }

// WR is one work request of a post (Write, Read, Send, CmpSwap,
// FetchAdd), unsignaled unless Signaled.
type WR struct {
	side string
	w    prog.WR
	err  error
}

func newWR(op verbs.Opcode, local Mem, remote Remote) WR {
	w := WR{side: local.side, w: prog.WR{Op: op, Local: local.m, Remote: remote.r}}
	if remote.side != "" && remote.side != local.side {
		w.err = fmt.Errorf("its memory is side %s's but its remote place was built by side %s", local.side, remote.side)
	}
	return w
}

// Write is an RDMA WRITE of src to dst.
func Write(src Mem, dst Remote) WR { return newWR(verbs.OpWrite, src, dst) }

// Read is an RDMA READ of dst's length from src into dst, a range of
// this side's In slot that nothing else writes (see In). The data has
// arrived once the completion of the post's last WR, which must be
// Signaled, is awaited (Side.Await with Sends): use it only after that
// step.
func Read(dst Mem, src Remote) WR { return newWR(verbs.OpRead, dst, src) }

// Send is a SEND of src: it lands in a receive the peer keeps posted
// (Program.KeepRecvs); on UD it goes to the peer's QP of the same index.
func Send(src Mem) WR { return newWR(verbs.OpSend, src, Remote{}) }

// CmpSwap is an atomic compare-and-swap of the 8-byte word at at (8-byte
// aligned): if it equals compare, swap is stored. The word's old value
// lands in result (8 bytes, 8-byte aligned: a range of this side's In
// slot that nothing else writes, see In) in host byte order, as Expect
// and SpinEqual read it; it has arrived once the completion of the
// post's last WR, which must be Signaled, is awaited. The remote word
// is a host-order uint64 of the peer's memory (0 at the start): what
// verbs' device test TestRCAtomics checks on the device at hand (rxe
// included).
func CmpSwap(result Mem, at Remote, compare, swap uint64) WR {
	w := newWR(verbs.OpCmpSwap, result, at)
	w.w.Compare, w.w.Swap = compare, swap
	return w
}

// FetchAdd is an atomic fetch-and-add of add to the 8-byte word at at;
// the old value lands in result (see CmpSwap for the byte order).
func FetchAdd(result Mem, at Remote, add uint64) WR {
	w := newWR(verbs.OpFetchAdd, result, at)
	w.w.Compare = add
	return w
}

// Signaled returns w asking for a completion: an Await with Sends counts
// it. A READ or atomic must be followed, in its post, by a Signaled WR
// (or be one) that the program awaits before it uses the result.
func (w WR) Signaled() WR { w.w.Flags |= verbs.FlagSignaled; return w }

// Fenced returns w executed only after the earlier READs and atomics of
// its QP have completed (IBV_SEND_FENCE): a lock's release after the
// READ it protects. On rxe (seen on Debian's 6.1 kernel) a fenced WR can
// stall for good: the requester and the completer share wait_fence
// without a lock, and a READ completing between the requester's fence
// check and its setting wait_fence wakes nobody (linux-rdma, Bob
// Pearson, June 2023). The program then ends at its await deadline
// with the WRs outstanding. Awaiting the READ before posting w does the
// same in the program and works on every device; the examples do that.
func (w WR) Fenced() WR { w.w.Flags |= verbs.FlagFence; return w }

// Inline returns w with its payload copied into the WQE (at most
// PairConfig.Inline bytes).
func (w WR) Inline() WR { w.w.Flags |= verbs.FlagInline; return w }

// WithImm returns w carrying immediate data imm: a SEND becomes
// SEND_WITH_IMM, a WRITE becomes RDMA_WRITE_WITH_IMM, which consumes a
// receive at the peer (KeepRecvs(0) there: a receive with no memory is
// enough) and shows imm in its completion (CopyImm).
func (w WR) WithImm(imm uint32) WR {
	switch w.w.Op {
	case verbs.OpSend:
		w.w.Op = verbs.OpSendImm
	case verbs.OpWrite:
		w.w.Op = verbs.OpWriteImm
	default:
		w.err = fmt.Errorf("a %s carries no immediate data", w.w.Op)
	}
	w.w.Imm = imm
	return w
}

// Step is one step of a side's program, built by the Side's methods.
type Step struct {
	side string
	s    prog.Step
	err  error
	pos  string // file:line of the code that built it (errors name it)
}

func (s *Side) step(k verbs.StepKind) Step {
	return Step{side: s.name, s: prog.Step{Kind: k}, pos: caller()}
}

// caller is file:line of the first caller outside package rdmatest: the
// code that built a step, which errors name beside the step's number.
func caller() string {
	var pcs [8]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, "github.com/rdmabench/rdmabench/rdmatest.") {
			return filepath.Base(f.File) + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

func (s *Side) memStep(k verbs.StepKind, m Mem) Step {
	st := s.step(k)
	st.s.At = m.m
	if m.side != s.name {
		st.err = fmt.Errorf("its memory is side %s's", m.side)
	}
	return st
}

// Post posts wrs (1 to 16) on QP qp as one chain, one doorbell, after
// waiting for room in the send queue: that wait takes completions, so
// the program must signal at least one WR within every send-queue depth
// (SignalEvery, or a Signaled WR it awaits); Measure and Serve refuse a
// program that could overfill the queue or never signals.
func (s *Side) Post(qp int, wrs ...WR) Step {
	st := s.step(verbs.StepPost)
	st.s.QP = qp
	for i, w := range wrs {
		switch {
		case w.err != nil:
			st.err = fmt.Errorf("WR %d: %w", i, w.err)
		case w.side != s.name:
			st.err = fmt.Errorf("WR %d: its memory is side %s's", i, w.side)
		}
		st.s.WRs = append(st.s.WRs, w.w)
	}
	return st
}

// SignalEvery makes a post signal its last WR once every n iterations
// (none of its WRs may be Signaled): the completion only frees the send
// queue, no Await counts it. The built-in ping-pong signals once every
// half send-queue depth this way.
func (st Step) SignalEvery(n int) Step {
	if st.s.Kind != verbs.StepPost {
		st.err = fmt.Errorf("SignalEvery applies to a post, not to a %s", st.s.Kind)
	}
	st.s.Every = n
	return st
}

// Count is a number of completions Await waits for (Recvs, Sends).
type Count struct {
	recv bool
	n    int
}

// Recvs is n receive completions (each a message that arrived: a SEND, or
// a WRITE_WITH_IMM's notice).
func Recvs(n int) Count { return Count{recv: true, n: n} }

// Sends is n completions of this side's Signaled WRs.
func Sends(n int) Count { return Count{n: n} }

// Await waits for the completions counted, within -rdma.timeout (side B:
// its first wait of an iteration may last that long without a request);
// completions that arrived earlier count. Receives consumed are posted
// again 64 at a time (Repost: at once).
func (s *Side) Await(counts ...Count) Step {
	st := s.step(verbs.StepAwait)
	for _, c := range counts {
		if c.recv {
			st.s.Recvs += c.n
		} else {
			st.s.Sends += c.n
		}
	}
	return st
}

// NextGen moves the side's generation byte to its next value: 1 … 255,
// then 1 again (it starts at 0, as memory does). PutGen, SpinGen and
// SpinChange use it.
//
// Only the side that leads calls it, once per iteration (side A of a
// ping-pong: NextGen, PutGen into the last byte of its WRITE's source,
// Post the WRITE, SpinGen on the last byte of the answer). The side that
// follows never does: SpinChange adopts the leader's value, then PutGen
// and its WRITE answer with it. Both generations are then equal after
// every iteration, and an answer from the iteration before never
// matches. See the package doc ("Generations") and
// BenchmarkProgramWriteLat in own_test.go.
func (s *Side) NextGen() Step { return s.step(verbs.StepNextGen) }

// PutGen stores the generation byte in m (1 byte, usually the last byte
// of an Out range): a WRITE whose source ends with m, posted after this
// step, carries it to the peer, whose SpinGen or SpinChange on that
// byte then knows the whole WRITE arrived.
func (s *Side) PutGen(m Mem) Step { return s.memStep(verbs.StepPutGen, m) }

// SpinGen spins until the byte m (1 byte of In, the last byte the
// peer's WRITE places) equals this side's generation: the peer's answer
// to this iteration arrived. The leader's wait (see NextGen); the peer
// must write back the value it adopted with SpinChange.
func (s *Side) SpinGen(m Mem) Step { return s.memStep(verbs.StepSpinGen, m) }

// SpinChange spins until the byte m differs from the generation, and
// makes that byte the generation: the follower's wait (side B's) for a
// WRITE it answers with PutGen, which keeps it in step with a leader
// that calls NextGen (see NextGen).
func (s *Side) SpinChange(m Mem) Step { return s.memStep(verbs.StepSpinChange, m) }

// SpinEqual spins until the word m (1, 4 or 8 bytes, aligned; host byte
// order) equals v, within -rdma.timeout. Like Expect it reads one word:
// to wait for a payload, spin on its last byte (or a flag written after
// it).
func (s *Side) SpinEqual(m Mem, v uint64) Step {
	st := s.memStep(verbs.StepSpinEqual, m)
	st.s.Value = v
	return st
}

// Repost posts the consumed receives again now.
func (s *Side) Repost() Step { return s.step(verbs.StepRepost) }

// CopyImm stores the last receive's immediate data (0 without) in m (4
// bytes, host order).
func (s *Side) CopyImm(m Mem) Step { return s.memStep(verbs.StepCopyImm, m) }

// CopyLen stores the last receive's byte count in m (4 bytes, host order).
func (s *Side) CopyLen(m Mem) Step { return s.memStep(verbs.StepCopyLen, m) }

// Expect checks that the word m (1, 4 or 8 bytes, aligned to its width;
// host byte order) equals v: the benchmark fails otherwise, naming the
// side, the step and the iteration (warm-up included). A pattern checks
// its results with it.
//
// Expect checks one word, not a range or a pattern: m must be exactly 1,
// 4 or 8 bytes (any other length is refused before anything is posted),
// and v is compared with it as an unsigned integer of that width read in
// host byte order (little-endian on x86 and arm64). To check more, use
// one Expect per 8-byte word (a program holds up to verbs.MaxSteps = 256
// steps, 64 when a remote peer runs it; each Expect is a load and a
// compare per iteration, in the sample unless it comes after
// EndSample), or have the peer put a word that stands for the payload
// (a sequence number or generation at its end, an immediate via
// CopyImm, a length via CopyLen) and Expect that. There is no pattern
// fill or range compare step.
func (s *Side) Expect(m Mem, v uint64) Step {
	st := s.memStep(verbs.StepExpect, m)
	st.s.Value = v
	return st
}

// StartSample and EndSample bound side A's latency sample (without them
// a sample is the whole iteration); EndHalfSample records half of it (a
// round trip's half, as the ping-pongs report).
func (s *Side) StartSample() Step { return s.step(verbs.StepSampleStart) }

// EndSample ends the sample StartSample started.
func (s *Side) EndSample() Step { return s.step(verbs.StepSampleEnd) }

// EndHalfSample ends the sample and records half of it.
func (s *Side) EndHalfSample() Step {
	st := s.step(verbs.StepSampleEnd)
	st.s.Halve = true
	return st
}

// Program is a side's pattern: its steps, run in order once per
// iteration by one C loop (no Go code and no allocation per operation),
// and the receives it keeps posted.
type Program struct {
	side string
	spec prog.Spec
	err  error
	pos  []string // each step's file:line
}

// Program makes steps the side's program. An error names a step by its
// index in steps, counted from 0, and the file:line of the code that
// built it ("rdmatest: side A, step 2 (expect, bench_test.go:24): …"),
// while the file:line in front of a failure is Measure's or Serve's.
func (s *Side) Program(steps ...Step) Program {
	p := Program{side: s.name}
	var errs []error
	for i, st := range steps {
		switch {
		case st.err != nil:
			errs = append(errs, &verbs.StepError{Step: i, Kind: st.s.Kind, Err: st.err})
		case st.side != s.name:
			errs = append(errs, &verbs.StepError{Step: i, Kind: st.s.Kind, Err: fmt.Errorf("a step of side %s", st.side)})
		}
		p.spec.Steps = append(p.spec.Steps, st.s)
		p.pos = append(p.pos, st.pos)
	}
	p.err = errors.Join(errs...)
	return p
}

// KeepRecvs keeps receives of n bytes (0: with no memory, enough for a
// WRITE_WITH_IMM's notice) posted at the start of every QP's "in" slot
// (after the 40-byte GRH on UD), as many as PairConfig.RecvDepth, each
// posted again once consumed.
func (p Program) KeepRecvs(n int) Program {
	p.spec.Recvs, p.spec.RecvBytes = true, n
	return p
}

// MeasureOpts are Measure's options. The zero value takes every
// default: MeasureOpts{} reports ops/s and warms up with 16 iterations.
type MeasureOpts struct {
	// Rate is the unit of the iterations-per-second metric, e.g.
	// "commits/s" (default "ops/s"): one word, no spaces. It is
	// registered as a unit whose higher values are better (RegisterUnit),
	// so that benchstat and the gate read it.
	Rate string
	// Warmup is the number of untimed, unrecorded iterations of side A's
	// program run before the timer starts (first touches of memory and
	// queues, the completion path; default 16; 0 means the default, a
	// negative value fails the benchmark). The -rdma.warmup flag
	// (RDMA_WARMUP, default 1) does not apply here: it sets the
	// built-in latency families' warm-up round trips (rdmatest/scenario),
	// never Measure's; the only way to change Measure's is this field.
	// Warm-up iterations count in the step errors' iteration numbers
	// (from 0, warm-up included) and in the delivered-count check.
	Warmup int
}

// toEngine converts o to the engine's options (the engine applies the
// defaults).
func (o MeasureOpts) toEngine() engine.MeasureOpts {
	return engine.MeasureOpts{Rate: o.Rate, Warmup: o.Warmup}
}

// Measure is the timed region of a benchmark of one's own pattern: side
// A's program runs o.Warmup untimed iterations (default 16; -rdma.warmup
// does not apply), then b.N iterations in C, one sample each, and
// Measure reports what the built-in families report (see the package
// doc). A program that could not run as written fails before anything is
// posted, naming the side and the step first; so does a step that fails
// while it runs (an Expect, a completion, a deadline), with side B's
// failing step, if any, on a line of its own.
func Measure(b *testing.B, p *Pair, o MeasureOpts, a Program) {
	b.Helper()
	if err := p.check(a, "A"); err != nil {
		engine.Fatal(b, err)
	}
	if p.e == nil {
		cfg := p.cfg
		if p.remote() {
			cfg.Own = &engine.Own{B: p.bSpec, Access: a.spec.RemoteAccess()}
		}
		p.e = engine.NewPair(b, p.d, cfg)
	}
	eo := o.toEngine()
	eo.Pos, eo.PosB = a.pos, p.bPos
	engine.MeasureProgram(b, p.e, eo, a.spec)
}

// Serve starts side B's program: a C loop on a thread (and CPU) of its
// own, until Measure ends or tb does. With -rdma.peer the program is
// sent to the remote peer when Measure opens the pair, and runs there.
func Serve(tb testing.TB, p *Pair, b Program) {
	tb.Helper()
	if err := p.check(b, "B"); err != nil {
		engine.Fatal(tb, err)
	}
	if p.remote() && p.e == nil {
		if p.bSpec != nil {
			engine.Fatal(tb, errors.New("rdmatest: Serve: side B already serves"))
		}
		spec := b.spec
		p.bSpec, p.bPos = &spec, b.pos
		return
	}
	if p.e == nil {
		p.e = engine.NewPair(tb, p.d, p.cfg)
	}
	p.bPos = b.pos
	engine.ServeProgram(tb, p.e, b.spec, b.pos...)
}

// check refuses a program of the wrong side or with a step that could
// not be resolved on the pair (prog.Spec.Check), naming the side and the
// step first (an *engine.ProgramError: "rdmatest: side A, step 2
// (expect): …"; errors.As finds the *verbs.StepError).
func (p *Pair) check(pr Program, side string) error {
	switch {
	case pr.side != side:
		return fmt.Errorf("rdmatest: side %s's program given to side %s", pr.side, side)
	case pr.err != nil:
		return &engine.ProgramError{Side: side, Err: pr.err, Pos: pr.pos}
	}
	if err := pr.spec.Check(p.A.qps, p.A.slot); err != nil {
		return &engine.ProgramError{Side: side, Err: err, Pos: pr.pos}
	}
	return nil
}
