package engine

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// A benchmark of one's own pattern is a Pair, a program for side A
// (MeasureProgram) and, when the pattern needs an answer, one for side B
// (ServeProgram): each a prog.Spec, interpreted by one C loop in verbs on
// a thread and CPU of its own — no cgo call and no Go code per
// operation, as in the built-in families' loops.

// Slot is the bytes of each of the side's slots (PairConfig.SlotSize
// rounded up to 64; on UD including the 40-byte GRH).
func (s *Side) Slot() int { return s.slot }

// Layout is the side's layout for prog.Resolve.
func (s *Side) Layout(t verbs.Transport) prog.Layout {
	l := prog.Layout{Transport: t, QPs: s.QPs, CQ: s.CQ, SRQ: s.SRQ, Buf: s.Buf, MR: s.MR, Slot: s.slot,
		SendDepth: s.depth, RecvDepth: s.recvDepth}
	for _, t := range s.Peer {
		l.Peer = append(l.Peer, prog.Peer{Addr: t.Addr, RKey: t.RKey, Dest: t.Dest})
	}
	return l
}

// programUnsupported tells why spec cannot run on d (nil: it can): a
// device without atomics, or immediate data on iWARP. The caller skips.
func programUnsupported(d *Dev, spec prog.Spec) error {
	a := d.Attr()
	for i := range spec.Steps {
		for _, w := range spec.Steps[i].WRs {
			switch {
			case (w.Op == verbs.OpFetchAdd || w.Op == verbs.OpCmpSwap) && a.AtomicCap == verbs.AtomicNone:
				return unsupported("%s has no atomic support (atomic_cap %s)", d.Name(), a.AtomicCap)
			case (w.Op == verbs.OpWriteImm || w.Op == verbs.OpSendImm) && a.NodeTransport == verbs.NodeTransportIWARP:
				return unsupported("%s: %s: %s", d.Name(), w.Op, SkipIWARPImm)
			}
		}
	}
	return nil
}

// newProgram resolves spec on side s and builds its loop.
func newProgram(s *Side, t verbs.Transport, spec prog.Spec, run prog.Run) (*verbs.Loop, error) {
	cfg, err := prog.Resolve(spec, s.Layout(t), run)
	if err == nil {
		var l *verbs.Loop
		if l, err = verbs.NewProgram(cfg); err == nil {
			return l, nil
		}
	}
	return nil, err
}

// ServeProgram starts side B's program: a C loop on a thread (and CPU) of
// its own, until MeasureProgram ends or tb does; its first wait of each
// iteration may last -rdma.timeout without a request. READ, WRITE and
// atomics need no program on B: the NIC serves them. B must be in this
// process: with -rdma.peer, side B's program goes to the peer when the
// pair is opened (PairConfig.Own), and ServeProgram fails saying so.
//
// pos, if given, is each step's file:line (where the caller built it),
// named in errors beside the step.
func ServeProgram(tb testing.TB, p *Pair, spec prog.Spec, pos ...string) {
	tb.Helper()
	if p.B == nil {
		fatal(tb, fmt.Errorf("rdmatest: Serve: side B is played by the remote peer -rdma.peer=%s: its program is sent with the pair's Setup (PairConfig.Own)", p.Dev.Opts.Peer))
	}
	if p.served != nil {
		fatal(tb, errors.New("rdmatest: Serve: side B already serves"))
	}
	if err := programUnsupported(p.Dev, spec); err != nil {
		skip(tb, err)
	}
	timeout := p.Dev.Opts.Timeout
	l, err := newProgram(p.B, p.Cfg.Transport, spec, prog.Run{Passive: true, Idle: timeout, Timeout: timeout})
	if err != nil {
		fatal(tb, &ProgramError{Side: "B", Err: err, Pos: pos})
	}
	r, err := startProgram(l, p.Dev.cpus.ForLoops(2)[1], timeout)
	if err != nil {
		fatal(tb, err)
	}
	p.served = r
	tb.Cleanup(func() { _ = p.served.Stop() })
}

// startProgram starts side B's program l on a thread pinned to cpu.
func startProgram(l *verbs.Loop, cpu int, timeout time.Duration) (*responder, error) {
	r := readyLoop(l, cpu)
	if r.err != nil { // the thread could not be pinned: the loop would not run
		r.begin()
		<-r.done
		return nil, errors.Join(fmt.Errorf("rdmatest: side B: %w", r.err), l.Close())
	}
	r.begin()
	return &responder{run: r, timeout: timeout}, nil
}

// startRemote starts the remote peer's role (its program, or a target)
// for MeasureProgram; its Stop reports what the peer's program received
// (see checkDelivered).
func (p *Pair) startRemote() error {
	if err := p.remote.Start(); err != nil {
		return err
	}
	var expect uint64
	p.served = &responder{stopFn: func() error {
		st, err := p.remote.StopWith(oob.Stop{Expect: expect})
		p.peerRecvd = st.Received
		return err
	}}
	p.expect = func(n uint64) { expect = n }
	return nil
}

// MeasureOpts configures MeasureProgram.
type MeasureOpts struct {
	// Rate is the unit of the iterations-per-second metric, e.g.
	// "commits/s" (default "ops/s"); it is registered as higher-is-better
	// (see units.Register).
	Rate string
	// Warmup is the number of untimed, unrecorded iterations before the
	// timer starts (default 16): first touches, the completion path.
	// -rdma.warmup (Options.Warmup, default 1) is the built-in latency
	// families' and does not apply here.
	Warmup int
	// Pos and PosB, if set, are the file:line of each step of side A's
	// and side B's programs (where the caller built them), named in
	// errors beside the step.
	Pos, PosB []string
}

// MeasureProgram is the timed region of a benchmark of one's own
// pattern: side A's program runs b.N iterations in one C loop on a
// thread pinned to the requester's CPU, each iteration one sample (the
// whole iteration, or from its sample-start to its sample-end step).
// Around the loop: the CPU check (one CPU per spinning loop, or skip),
// Warmup untimed iterations, garbage collection before the timer, the
// port counters and CPU time. After the timer: on RC, every message A
// sent that consumes a receive must have arrived at B's program (a fail
// names both counts), then p50-ns … max-ns, the rate (iterations per
// second of the loop's own time), cpu-ns/op (both sides' threads),
// allocations and the port counters that moved. A failure of either side
// ends the benchmark naming the side and the step.
func MeasureProgram(b *testing.B, p *Pair, o MeasureOpts, spec prog.Spec) {
	b.Helper()
	takeTurn(b)
	if o.Rate == "" {
		o.Rate = "ops/s"
	}
	switch {
	case o.Warmup < 0:
		fatal(b, fmt.Errorf("rdmatest: Measure: Warmup %d: want 0 (the default, 16) or more", o.Warmup))
	case o.Warmup == 0:
		o.Warmup = 16
	}
	if err := units.Register(o.Rate, "higher"); err != nil {
		fatal(b, err)
	}
	if p.remote != nil && p.served == nil {
		if err := p.startRemote(); err != nil {
			fatal(b, err)
		}
		b.Cleanup(func() { _ = p.served.Stop() })
	}
	busy := 1
	if p.served != nil && p.remote == nil {
		busy = 2
	}
	if err := checkProcs(busy); err != nil {
		skip(b, err)
	}
	if err := programUnsupported(p.Dev, spec); err != nil {
		skip(b, err)
	}
	d := p.Dev
	l, err := newProgram(p.A, p.Cfg.Transport, spec, prog.Run{Iters: int64(b.N), Timeout: d.Opts.Timeout, Hist: histGeometry})
	if err != nil {
		programFatal(b, p.served, &ProgramError{Side: "A", Err: err, Pos: o.Pos}, o.PosB)
	}
	defer l.Close()
	if err := l.Warm(int64(o.Warmup)); err != nil {
		programFatal(b, p.served, &ProgramError{Side: "A", Phase: "warm-up", Err: err, Pos: o.Pos}, o.PosB)
	}
	b.ReportAllocs()
	res, rec, before := measureProgram(b, d, l, d.cpus.ForLoops(busy)[0], p.served, o, func() error { return p.checkDelivered(l) })
	if res.Ops != int64(b.N) {
		b.Fatalf("rdmatest: verification: side A's program ran %d iterations, expected %d", res.Ops, b.N)
	}
	if rec.Count() != int64(b.N) {
		b.Fatalf("rdmatest: verification: %d samples for %d iterations", rec.Count(), b.N)
	}
	hist.ReportLatencyHeld(b, rec)
	reportLoopRate(b, o.Rate, res.Ops, res.Elapsed())
	before.report(b, d, int64(b.N))
}

// measureProgram is measure for side A's program l: its failure, and
// side B's, are ProgramErrors naming the side and the step first (and
// where it was built, o.Pos and o.PosB).
func measureProgram(b *testing.B, d *Dev, l *verbs.Loop, cpu int, resp *responder, o MeasureOpts, after func() error) (verbs.LoopResult, *hist.Recorder, *region) {
	b.Helper()
	slowdown(b, l)
	before := beforeRun(b, d)
	res, err := timedRun(l, cpu, b.ResetTimer)
	b.StopTimer()
	before.end()
	if err != nil {
		programFatal(b, resp, &ProgramError{Side: "A", Err: err, Pos: o.Pos}, o.PosB)
	}
	if after != nil {
		if err := after(); err != nil {
			programFatal(b, resp, err, o.PosB)
		}
	}
	if err := resp.Stop(); err != nil {
		fatal(b, sideB(err, o.PosB))
	}
	rec := hist.NewRecorder()
	if err := importLoop(rec, l, res); err != nil {
		b.Fatal(err)
	}
	return res, rec, before
}

// programFatal ends b with err, after stopping side B (resp) and adding
// its error, if any, on a line of its own (B often knows why A stalled);
// posB is where B's steps were built.
func programFatal(tb testing.TB, resp *responder, err error, posB []string) {
	tb.Helper()
	if rerr := resp.Stop(); rerr != nil {
		err = errors.Join(err, sideB(rerr, posB))
	}
	fatal(tb, err)
}

// sideB names side B's step in err, the error of its responder (Stop),
// when a step of B's program failed; pos is where B's steps were built.
func sideB(err error, pos []string) error {
	var se *verbs.StepError
	if errors.As(err, &se) {
		return &ProgramError{Side: "B", Err: se, Pos: pos}
	}
	return err
}

// ProgramError is a failure of one side's program of a pattern of one's
// own, refused before it ran or ended while it ran. Its text names the
// side and the step first, with one prefix:
//
//	rdmatest: side A, step 2 (expect, lock_test.go:21), warm-up: program loop: iteration 3 (from 0, warm-up included) read 0, expected 1
//
// (steps counted from 0, in the order given to Side.Program, with the
// file:line that built the step when Pos has it; an error of the
// program as a whole says "side A's program"). errors.As finds the
// *verbs.StepError behind it and what that wraps (a *verbs.LoopError, a
// *verbs.WCError, …), and errors.Is its sentinels (verbs.ErrNeverAwaited,
// verbs.ErrSendQueue). Joined errors (every refused step of a program)
// give a line each.
type ProgramError struct {
	Side  string   // "A" or "B"
	Phase string   // "" or "warm-up"
	Err   error    // a *verbs.StepError, errors.Join of them, or another error
	Pos   []string // each step's file:line, if known
}

func (e *ProgramError) Error() string {
	errs := []error{e.Err}
	if j, ok := e.Err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	lines := make([]string, len(errs))
	for i, err := range errs {
		lines[i] = e.line(err)
	}
	return strings.Join(lines, "\n")
}

// line is one error's line: the side, the step, the phase, then the
// cause without its own "verbs: " or "rdmatest: " prefix.
func (e *ProgramError) line(err error) string {
	phase := ""
	if e.Phase != "" {
		phase = ", " + e.Phase
	}
	if se, ok := err.(*verbs.StepError); ok && se.Step >= 0 {
		where := se.Kind.String()
		if se.Step < len(e.Pos) && e.Pos[se.Step] != "" {
			where += ", " + e.Pos[se.Step]
		}
		return fmt.Sprintf("rdmatest: side %s, step %d (%s)%s: %s", e.Side, se.Step, where, phase, unprefixed(se.Err))
	} else if ok {
		err = se.Err
	}
	return fmt.Sprintf("rdmatest: side %s's program%s: %s", e.Side, phase, unprefixed(err))
}

// Unwrap returns the error behind it (errors.As finds the step).
func (e *ProgramError) Unwrap() error { return e.Err }

// unprefixed is err's text without a leading package prefix.
func unprefixed(err error) string {
	msg := err.Error()
	for _, p := range []string{"verbs: ", "rdmatest: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

// checkDelivered checks, after A's program, that B's program received
// every message A sent that consumes a receive (on RC; UC and UD may
// lose messages), waiting for the last ones up to the deadline. Without
// a program on B nothing is checked here (the steps' own checks remain).
// A remote peer's program is stopped here, told to wait for that many
// first (oob.Stop.Expect), and its Stopped tells what it received.
func (p *Pair) checkDelivered(a *verbs.Loop) error {
	if p.served == nil || p.Cfg.Transport != verbs.TransportRC {
		return nil
	}
	want := a.Consumed()
	if p.remote != nil {
		if p.Cfg.Own == nil || p.Cfg.Own.B == nil {
			return nil
		}
		p.expect(uint64(want))
		if err := p.served.Stop(); err != nil {
			return err
		}
		if p.peerRecvd != uint64(want) {
			return fmt.Errorf("rdmatest: verification: side A posted %d messages that consume a receive, but side B's program on the peer %s received %d", want, p.Dev.Opts.Peer, p.peerRecvd)
		}
		return nil
	}
	deadline := time.Now().Add(p.Dev.Opts.Timeout)
	for p.served.recvs() < want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Microsecond)
	}
	if got := p.served.recvs(); got != want {
		return fmt.Errorf("rdmatest: verification: side A posted %d messages that consume a receive, but side B's program received %d", want, got)
	}
	return nil
}
