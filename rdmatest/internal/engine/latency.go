package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// begin makes s a spec of kind k with its defaults and checks it against
// d: an unsupported combination skips b, an invalid one fails it.
func (s *Spec) begin(b *testing.B, d *Dev, k Kind) {
	b.Helper()
	s.Kind = k
	s.defaults()
	if err := s.Check(d); err != nil {
		skipOrFail(b, err)
	}
}

// skipOrFail skips b for an *Unsupported error and fails it otherwise.
func skipOrFail(tb testing.TB, err error) {
	tb.Helper()
	if IsUnsupported(err) {
		tb.Skip(err)
	}
	tb.Fatal(err)
}

// sendWR is the template of a requester WR of spec s on QP i of side from.
func sendWR(s *Spec, from *Side, i int) verbs.SendWR {
	wr := verbs.SendWR{Op: s.Op, Flags: verbs.FlagSignaled, NumSGE: 1}
	t := from.Peer[i]
	switch s.Op {
	case verbs.OpRead, verbs.OpFetchAdd, verbs.OpCmpSwap:
		wr.SGE[0] = from.In(i, s.Size) // what comes back lands in "in"
	default:
		wr.SGE[0] = from.Out(i, s.Size)
	}
	wr.RemoteAddr, wr.RKey, wr.UD = t.Addr, t.RKey, t.Dest
	switch s.Op {
	case verbs.OpSendImm, verbs.OpWriteImm:
		wr.Imm = 0x5eed
	case verbs.OpFetchAdd:
		wr.CompareAdd = 1
	}
	if s.Inline {
		wr.Flags |= verbs.FlagInline
	}
	return wr
}

// recvBytes is what one receive must hold for s (a UD receive starts with
// the 40-byte GRH).
func recvBytes(s *Spec) int {
	if s.Transport == verbs.TransportUD {
		return s.Size + grhBytes
	}
	return s.Size
}

// Latency measures spec s one operation at a time on QP 0 (package
// rdmatest's doc defines what is timed) and reports p50-ns … max-ns and msgs/s
// (round trips per second, from the C loop's own clock). The loop runs in
// C, on a thread pinned to its own CPU, as does the in-process passive
// side; ns/op is the testing timer around that one call divided by b.N.
// After the run the results are verified (see verifyLatency): a mismatch
// fails the benchmark. Unsupported combinations are skipped, invalid ones
// fail.
func Latency(b *testing.B, d *Dev, s Spec) {
	b.Helper()
	takeTurn(b)
	// Every check that can skip runs before the probe: testing reports
	// only the first call's skip (probe.go).
	skipCM(b, d, &s)
	s.SignalAll = s.SignalAll || d.Opts.SignalAll
	s.begin(b, d, KindLatency)
	if err := checkProcs(s.busyGoroutines(d)); err != nil {
		b.Skip(err)
	}
	if probeCall(b) {
		return // testing discards this call (probe.go)
	}
	b.ReportAllocs()
	p := NewPair(b, d, s.pairConfig())
	defer p.close()
	p.fillPatterns(&s)
	timeout := d.Opts.Timeout
	cpus := d.cpus.ForLoops(s.busyGoroutines(d))
	resp, err := p.startPassive(&s, cpus[1])
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Stop()
	ping, err := newPing(p, &s, int64(b.N), timeout)
	if err != nil {
		resp.fatal(b, err)
	}
	defer ping.Close()
	// Untimed, unrecorded round trips (-rdma.warmup, default 1): the
	// first pass through the path pays one-time costs (first touches,
	// the passive thread's start).
	if w := d.Opts.Warmup; w > 0 {
		if err := ping.Warm(int64(w)); err != nil {
			resp.fatal(b, err)
		}
	}
	res, rec, before := measure(b, d, ping, cpus[0], resp, nil)
	if err := p.verifyLatency(&s); err != nil {
		b.Fatal(err)
	}
	cycles, err := importCycles(ping, res)
	if err != nil {
		b.Fatal(err)
	}
	hist.ReportLatencyHeld(b, rec)
	hist.ReportCycles(b, cycles)
	reportLoopRate(b, "msgs/s", res.Ops, res.Elapsed())
	before.report(b, d, int64(b.N))
}

// newPing builds the requester's C loop of a latency run on p.A.
func newPing(p *Pair, s *Spec, n int64, timeout time.Duration) (*verbs.Loop, error) {
	a := p.A
	cfg := verbs.PingConfig{QP: a.QPs[0], CQ: a.CQ, WR: sendWR(s, a, 0), SendDepth: a.depth,
		Iters: n, Gap: s.Gap, SignalAll: s.SignalAll, Timeout: timeout, Hist: histGeometry}
	switch {
	case s.Op == verbs.OpWrite:
		cfg.Mode, cfg.Halve = verbs.PingWrite, true
		cfg.InLast, cfg.OutLast = a.inByte(0, s.Size-1), a.outByte(0, s.Size-1)
	case s.consumesRecv():
		cfg.Mode, cfg.Halve = verbs.PingRecv, true
		cfg.Recv, cfg.RecvDepth = a.In(0, recvBytes(s)), p.Cfg.RecvDepth
	default:
		cfg.Mode = verbs.PingRound
		cfg.Result = a.inByte(0, 0)
	}
	l, err := verbs.NewPing(cfg)
	if err != nil {
		return nil, fmt.Errorf("rdmatest: %w", err)
	}
	return l, nil
}

// startPassive starts side B's role for s: a C serve loop on B pinned to
// cpu, the remote peer's role, or nothing (the NIC alone serves READ,
// WRITE and atomics of a stream, READ and atomic round trips).
func (p *Pair) startPassive(s *Spec, cpu int) (*responder, error) {
	if p.remote != nil {
		if err := p.remote.Start(); err != nil {
			return nil, err
		}
		return remoteResponder(p.remote), nil
	}
	cfg, ok := serveConfig(p.B, s, roleFor(s), p.Cfg.RecvDepth, p.Dev.Opts.Timeout)
	if !ok {
		return nil, nil
	}
	return startServe(cfg, cpu)
}

// serveConfig is the passive loop of role on side b (roleTarget: none).
func serveConfig(b *Side, s *Spec, role passiveRole, recvDepth int, timeout time.Duration) (verbs.ServeConfig, bool) {
	cfg := verbs.ServeConfig{CQ: b.CQ, QPs: b.QPs, SRQ: b.SRQ, SendDepth: b.depth, Timeout: timeout, Idle: timeout,
		SignalAll: s.SignalAll && (role == roleWriteEcho || role == roleEcho)}
	switch role {
	case roleWriteEcho:
		cfg.Mode, cfg.WR = verbs.ServeWriteEcho, sendWR(s, b, 0)
		cfg.InLast, cfg.OutLast = b.inByte(0, s.Size-1), b.outByte(0, s.Size-1)
	case roleEcho:
		// A true echo: the answer carries the bytes that arrived (after
		// the GRH on UD), and the receive's immediate data.
		cfg.Mode, cfg.WR = verbs.ServeRecvEcho, sendWR(s, b, 0)
		cfg.WR.SGE[0] = b.In(0, recvBytes(s))
		cfg.WR.SGE[0].Addr += uint64(recvBytes(s) - s.Size)
		cfg.WR.SGE[0].Length = uint32(s.Size)
	case roleSink:
		cfg.Mode = verbs.ServeSink
	default:
		return cfg, false
	}
	if cfg.Mode != verbs.ServeWriteEcho {
		cfg.RecvDepth = recvDepth
		for i := range b.QPs {
			cfg.Recv = append(cfg.Recv, b.In(i, recvBytes(s)))
		}
	}
	return cfg, true
}

// ReportRate reports msgs/s: msgs divided by the testing timer's elapsed
// time (b.Elapsed), for a pattern with no loop clock of its own; the
// standard scenarios and MeasureProgram divide by the loop's own time
// instead. Call it after the loop (and after any timed drain).
func ReportRate(b *testing.B, msgs int) {
	b.Helper()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(msgs)/s, "msgs/s")
	}
}

// reportLoopRate reports ops per second of a C loop's own elapsed time.
func reportLoopRate(b *testing.B, unit string, ops int64, elapsed time.Duration) {
	b.Helper()
	if elapsed <= 0 {
		b.Fatalf("rdmatest: the loop measured no time for %d operations", ops)
	}
	b.ReportMetric(float64(ops)/elapsed.Seconds(), unit)
}
