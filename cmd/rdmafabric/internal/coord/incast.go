package coord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
	"github.com/rdmabench/rdmabench/internal/stats"
)

// IncastPkg is the benchmark family of an incast stream's rows.
const IncastPkg = "BenchmarkIncast"

// IncastOptions configure an incast run (RunIncast). Check tells what is
// wrong with them.
type IncastOptions struct {
	// Nodes are the node names the cases' indexes refer to (as
	// Options.Nodes).
	Nodes []string
	// Cases are the incast cases, run in order (schedule.Incast).
	Cases []schedule.IncastCase
	// Stream is each sender's scenario: a fixed-size transfer (its
	// iterations × its message size), whose timed region is the flow's
	// completion time.
	Stream Scenario
	// Victim is the victim flow's scenario, a latency ping-pong with
	// percentiles (p50-ns, p99-ns, p99.9-ns).
	Victim Scenario
	// Runs is the number of runs per case, 1..MaxRuns: the cases are
	// run that many times over, one run each time.
	Runs int
	// VictimDelay is how long after the senders' Runs are sent the
	// victim's is: the senders' setup (device, QPs, connection) comes
	// before their timed region, and a victim that starts at once runs
	// partly before the incast (victim-overlap tells how much).
	VictimDelay time.Duration
	// CaseTimeout bounds one case's turn: the idle victim, then the
	// incast.
	CaseTimeout time.Duration
}

// Check reports the first thing wrong with o, naming the value and the
// limit.
func (o IncastOptions) Check() error {
	base := Options{Nodes: o.Nodes, Runs: o.Runs, PairTimeout: o.CaseTimeout,
		Plan:      schedule.Plan{Kind: "incast", Nodes: len(o.Nodes), Rounds: []schedule.Round{{{Src: 0, Dst: 1}}}},
		Scenarios: []Scenario{o.Stream, o.Victim}}
	if len(o.Nodes) < 3 {
		return fmt.Errorf("coord: incast: %d nodes: at least 3 are needed", len(o.Nodes))
	}
	if err := base.Check(); err != nil {
		return err
	}
	switch {
	case len(o.Cases) == 0:
		return errors.New("coord: incast: no case")
	case len(o.Cases) > schedule.MaxIncastCases:
		return fmt.Errorf("coord: incast: %d cases: at most %d", len(o.Cases), schedule.MaxIncastCases)
	case o.VictimDelay < 0:
		return fmt.Errorf("coord: incast: victim delay %v: must not be negative", o.VictimDelay)
	}
	n := len(o.Nodes)
	for i, c := range o.Cases {
		used := make(map[int]bool)
		for _, v := range append([]int{c.Dst}, c.Senders...) {
			if v < 0 || v >= n {
				return fmt.Errorf("coord: incast case %d: node %d: nodes are 0..%d", i, v, n-1)
			}
			if used[v] {
				return fmt.Errorf("coord: incast case %d: node %d is in it twice", i, v)
			}
			used[v] = true
		}
		if len(c.Senders) < 2 {
			return fmt.Errorf("coord: incast case %d: %d senders: at least 2", i, len(c.Senders))
		}
		if c.Victim < 0 || c.Victim >= n || c.Victim == c.Dst {
			return fmt.Errorf("coord: incast case %d: victim partner %d: want a node of 0..%d other than the receiver %d", i, c.Victim, n-1, c.Dst)
		}
	}
	return nil
}

// flowRun is one agent's Run of one flow in a case, timed on the
// coordinator's clock from the case's start (t0).
type flowRun struct {
	res      Result
	err      error
	t0       time.Time
	sent     time.Duration // the Run was sent
	returned time.Duration // its results were back
	clock    nodeClock     // its node's clock against ours
}

// nodeClock is a node's system clock against the coordinator's: the
// node's reads offset ahead, within ±err (ok: measured).
type nodeClock struct {
	offset, err time.Duration
	ok          bool
}

// elapsed is the run's timed region: ns/op × iterations.
func (f flowRun) elapsed() time.Duration {
	return time.Duration(f.res.Values["ns/op"] * float64(f.res.Iters))
}

// measured tells whether the run's timed region is placed from the
// agent's own account of it (Result.Start, End) and its node's measured
// clock, rather than estimated.
func (f flowRun) measured() bool { return f.clock.ok && !f.res.Start.IsZero() }

// start and end place the run's timed region on the coordinator's clock.
// Measured: the agent's region less its clock's offset (each end within
// the offset's ±err). Estimated, without them: it ended when its result
// came back (less the result's way back and the agent's teardown, not
// known and taken as nothing), and began its elapsed time before; a
// teardown of hundreds of ms under TCG moves it that much later.
func (f flowRun) start() time.Duration {
	if f.measured() {
		return f.res.Start.Add(-f.clock.offset).Sub(f.t0)
	}
	return f.returned - f.elapsed()
}

func (f flowRun) end() time.Duration {
	if f.measured() {
		return f.res.End.Add(-f.clock.offset).Sub(f.t0)
	}
	return f.returned
}

// clockProbes is how many clock exchanges measure a node's offset; the
// one with the shortest round trip is kept (as NTP keeps its best
// sample).
const clockProbes = 3

// measureClock measures agent a's clock against ours: each probe notes
// our clock before (t1) and after (t3) the agent's answer (t2); the
// offset is t2 − (t1+t3)/2, within ±(t3−t1)/2. Not measured (ok false)
// when a does not tell its clock or a probe fails (an older agent): the
// case's runs are then placed by the estimate.
func measureClock(ctx context.Context, a Agent) nodeClock {
	c, ok := a.(Clocked)
	if !ok {
		return nodeClock{}
	}
	var best nodeClock
	for range clockProbes {
		cs, err := c.Clock(ctx)
		t1, t2, t3 := cs.Sent, cs.Agent, cs.Back
		if err != nil || t2.IsZero() || t1.IsZero() || t3.Before(t1) {
			return nodeClock{}
		}
		half := t3.Sub(t1) / 2
		if !best.ok || half < best.err {
			best = nodeClock{offset: t2.Sub(t1.Add(half)), err: half, ok: true}
		}
	}
	return best
}

// incastOutcome is one case's runs: the idle victim, then the senders
// (in the case's order) and the victim under incast.
type incastOutcome struct {
	idle    flowRun
	senders []flowRun
	victim  flowRun
	err     error // the case could not be measured (the first failure)
}

// RunIncast drives the incast run o: it dials every node, writes the
// stream's header, then, o.Runs times over, every case: the victim flow
// alone (its idle baseline, in the same run), then the senders and the
// victim at once. It writes each flow's row and the case's row (see
// docs/metrics.md, "Incast"), then the counter and failure lines. A case
// that fails is recorded in the Summary (Failures, with Scenario
// "n=<N>/flow=…") and not run again. Errors as Run's.
func RunIncast(ctx context.Context, o IncastOptions, dial Dialer, w io.Writer) (Summary, error) {
	if err := o.Check(); err != nil {
		return Summary{}, err
	}
	if dial == nil || w == nil {
		return Summary{}, errors.New("coord: incast: nil dialer or writer")
	}
	r, err := start(ctx, Options{Nodes: o.Nodes, PairTimeout: o.CaseTimeout, Concurrency: true, Runs: o.Runs}, dial, w)
	if err != nil {
		return r.sum, err
	}
	failed := make([]bool, len(o.Cases))
	done := make([]int, len(o.Cases))
	counted := make(map[int]bool) // nodes that reported a congestion counter
	var timing flowTiming
	var stopped error
passes:
	for pass := range o.Runs {
		for ci, c := range o.Cases {
			if failed[ci] {
				continue
			}
			if err := ctx.Err(); err != nil {
				stopped = fmt.Errorf("coord: incast stopped before case %d of %d in pass %d of %d: %w", ci+1, len(o.Cases), pass+1, o.Runs, err)
				break passes
			}
			out := r.runCase(ctx, o, c)
			if out.err == nil {
				out.err = r.writeCase(o, c, out)
			}
			if out.err != nil {
				failed[ci] = true
				r.sum.Failures = append(r.sum.Failures, Failure{Src: "incast", Dst: o.Nodes[c.Dst],
					Scenario: fmt.Sprintf("n=%d/%s", c.N(), o.Stream.Name), Err: out.err})
			} else {
				done[ci]++
				for _, v := range congestionNodes(c, out) {
					counted[v] = true
				}
				timing.add(out)
			}
			if err := r.bw.Flush(); err != nil {
				return r.sum, fmt.Errorf("coord: writing case %d of pass %d: %w", ci+1, pass+1, err)
			}
		}
		r.sum.Rounds++
	}
	for ci := range o.Cases {
		if done[ci] == o.Runs {
			r.sum.Measured++
		}
	}
	r.sum.Links = r.sum.Measured
	if len(counted) == 0 {
		r.line("fabric.incast.congestion-counters: not counted by these devices (none of " + strings.Join(facts.CongestionCounters, ", ") + "; rxe and siw have none)")
	} else {
		var names []string
		for _, v := range slices.Sorted(maps.Keys(counted)) {
			names = append(names, o.Nodes[v])
		}
		r.line("fabric.incast.congestion-counters: counted on " + strings.Join(names, " ") + " (a counter with no line there did not move)")
	}
	if l := timing.line(); l != "" {
		r.line(l)
	}
	r.writeTrailer()
	if err := r.bw.Flush(); err != nil {
		return r.sum, fmt.Errorf("coord: writing the counter and failure lines: %w", err)
	}
	if stopped != nil {
		return r.sum, stopped
	}
	if r.sum.Measured == 0 {
		err := fmt.Errorf("coord: incast: no case measured in every run: %d failed", len(r.sum.Failures))
		if len(r.sum.Failures) > 0 {
			err = fmt.Errorf("%w; the first, to %s: %w", err, r.sum.Failures[0].Dst, r.sum.Failures[0].Err)
		}
		return r.sum, err
	}
	return r.sum, nil
}

// flowTiming counts how the measured cases' incast flows (senders and
// victim) were placed on the coordinator's clock, for the stream's
// fabric.incast.timing line: measured from the agents' own regions (the
// worst clock error among them), or estimated.
type flowTiming struct {
	measured, estimated int
	worst               time.Duration
}

func (t *flowTiming) add(out incastOutcome) {
	for _, f := range append(slices.Clone(out.senders), out.victim) {
		if f.measured() {
			t.measured++
			t.worst = max(t.worst, f.clock.err)
		} else {
			t.estimated++
		}
	}
}

// line is the timing line ("" before any case was measured).
func (t flowTiming) line() string {
	switch {
	case t.measured+t.estimated == 0:
		return ""
	case t.estimated == 0:
		return fmt.Sprintf("fabric.incast.timing: measured (each flow's timed region from its agent, on the coordinator's clock within ±%.3f ms, the worst node clock offset error)", float64(t.worst)/1e6)
	}
	return fmt.Sprintf("fabric.incast.timing: estimated for %d of %d flows (agents that do not tell their clock or region: a region is taken to end when its result came back, so victim-overlap and sender-skew-ns may be off by the agents' teardown)", t.estimated, t.measured+t.estimated)
}

// congestionNodes are the nodes of case c that reported a congestion
// counter in out (the agents send them even at zero where the device
// has them).
func congestionNodes(c schedule.IncastCase, out incastOutcome) []int {
	var nodes []int
	has := func(node int, f flowRun) {
		for _, name := range facts.CongestionCounters {
			if _, ok := f.res.Counters[name]; ok {
				nodes = append(nodes, node)
				return
			}
		}
	}
	for i, f := range out.senders {
		has(c.Senders[i], f)
	}
	has(c.Dst, out.victim)
	has(c.Dst, out.idle)
	return nodes
}

// runCase runs one case under the case timeout: the idle victim, then
// the incast.
func (r *runner) runCase(ctx context.Context, o IncastOptions, c schedule.IncastCase) incastOutcome {
	cctx, cancel := context.WithTimeoutCause(ctx, o.CaseTimeout, fmt.Errorf("case timeout %v exceeded", o.CaseTimeout))
	defer cancel()
	out := incastOutcome{senders: make([]flowRun, c.N())}
	for _, v := range append([]int{c.Dst}, c.Senders...) {
		if r.agents[v] == nil {
			out.err = fmt.Errorf("not run: node %s could not be dialled", o.Nodes[v])
			return out
		}
	}
	t0 := time.Now()
	runFlow := func(f *flowRun, src, dst int, sc Scenario) {
		f.t0 = t0
		f.sent = time.Since(t0)
		res, err := r.agents[src].Run(cctx, o.Nodes[dst], sc, 1)
		f.returned = time.Since(t0)
		if err == nil {
			err = checkResults(res, 1)
		}
		if err != nil {
			f.err = fmt.Errorf("%s -> %s %s: %w", o.Nodes[src], o.Nodes[dst], sc.Name, withCause(cctx, err))
			return
		}
		f.res = res[0]
	}
	runFlow(&out.idle, c.Dst, c.Victim, o.Victim)
	if out.err = out.idle.err; out.err != nil {
		return out
	}
	// Each node's clock against ours, just before the incast: its
	// flows' timed regions are then placed from the agents' accounts.
	clocks := map[int]nodeClock{}
	for _, v := range append([]int{c.Dst}, c.Senders...) {
		clocks[v] = measureClock(cctx, r.agents[v])
	}
	out.victim.clock = clocks[c.Dst]
	for i, s := range c.Senders {
		out.senders[i].clock = clocks[s]
	}
	t0 = time.Now()
	var wg sync.WaitGroup
	for i, s := range c.Senders {
		wg.Go(func() { runFlow(&out.senders[i], s, c.Dst, o.Stream) })
	}
	wg.Go(func() {
		t := time.NewTimer(o.VictimDelay)
		defer t.Stop()
		select {
		case <-t.C:
			runFlow(&out.victim, c.Dst, c.Victim, o.Victim)
		case <-cctx.Done():
			out.victim.err = fmt.Errorf("victim not run: %w", context.Cause(cctx))
		}
	})
	wg.Wait()
	for _, f := range append(slices.Clone(out.senders), out.victim) {
		if f.err != nil {
			out.err = f.err
			return out
		}
	}
	for _, f := range append(slices.Clone(out.senders), out.victim, out.idle) {
		if f.elapsed() <= 0 {
			out.err = fmt.Errorf("a run without ns/op: its timed region is unknown")
			return out
		}
	}
	return out
}

// caseName is the row name of a flow of case c: its receiver, its
// sender count, the flow, and the flow's source.
func caseName(o IncastOptions, c schedule.IncastCase, flow string, src int, sc Scenario) string {
	name := IncastPkg + "/dst=" + o.Nodes[c.Dst] + "/n=" + strconv.Itoa(c.N()) + "/flow=" + flow
	if src >= 0 {
		name += "/src=" + o.Nodes[src]
	}
	return name + "/" + sc.Name + "-1"
}

// writeCase writes the rows of one measured case: the idle victim, each
// sender, the victim under incast, and the case's own row.
func (r *runner) writeCase(o IncastOptions, c schedule.IncastCase, out incastOutcome) error {
	metrics, err := caseMetrics(out)
	if err != nil {
		return err
	}
	emit := func(name string, node int, res Result) error {
		declare, err := r.directions([]Result{res})
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.declare(declare)
		r.line(row(name, res))
		r.addCounters(node, res.Counters)
		r.sum.Rows++
		return nil
	}
	caseRow := Result{Iters: 1, Values: metrics, Units: incastUnits}
	if _, err := r.directions([]Result{out.idle.res, out.victim.res, caseRow}); err != nil {
		return err
	}
	for i, f := range out.senders {
		if _, err := r.directions([]Result{withFCT(f)}); err != nil {
			return fmt.Errorf("sender %s: %w", o.Nodes[c.Senders[i]], err)
		}
	}
	// Checked above: emit cannot fail from here on, so a case's rows are
	// written whole or not at all.
	_ = emit(caseName(o, c, "victim-idle", c.Dst, o.Victim), c.Dst, out.idle.res)
	for i, f := range out.senders {
		_ = emit(caseName(o, c, "sender", c.Senders[i], o.Stream), c.Senders[i], withFCT(f))
	}
	_ = emit(caseName(o, c, "victim", c.Dst, o.Victim), c.Dst, out.victim.res)
	return emit(caseName(o, c, "case", -1, o.Stream), c.Dst, caseRow)
}

// withFCT is a sender's result with its flow-completion time, fct-ns:
// the timed region of its fixed-size transfer.
func withFCT(f flowRun) Result {
	res := f.res
	res.Values = make(map[string]float64, len(f.res.Values)+1)
	for u, v := range f.res.Values {
		res.Values[u] = v
	}
	res.Values["fct-ns"] = float64(f.elapsed())
	res.Units = make(map[string]string, len(f.res.Units)+1)
	for u, d := range f.res.Units {
		res.Units[u] = d
	}
	res.Units["fct-ns"] = "lower"
	return res
}

// incastUnits are the directions of the case row's units.
var incastUnits = map[string]string{
	"jain": "higher", "fct-p50-ns": "lower", "fct-max-ns": "lower", "sender-skew-ns": "lower",
	"victim-overlap": "higher", "victim-p50-x": "lower", "victim-p99-x": "lower", "victim-p99.9-x": "lower",
}

// caseMetrics computes a case's own values (docs/metrics.md, "Incast"):
//
//   - MB/s: the senders' bytes over the span from the first sender's
//     start to the last one's end, on the coordinator's clock;
//   - jain: Jain's fairness index of the senders' MB/s, (Σx)²/(N·Σx²),
//     1 when all are equal, 1/N when one takes everything;
//   - fct-p50-ns, fct-max-ns: the median and the largest of the senders'
//     flow-completion times;
//   - sender-skew-ns: the spread of the senders' starts on the
//     coordinator's clock;
//   - victim-overlap: the share of the victim's timed region during
//     which every sender was in its timed region;
//   - victim-p50-x, victim-p99-x, victim-p99.9-x: the victim's
//     percentile under incast over the same percentile idle.
func caseMetrics(out incastOutcome) (map[string]float64, error) {
	n := len(out.senders)
	fcts := make([]float64, n)
	var bytes, sum, sumSq float64
	first, last := time.Duration(math.MaxInt64), time.Duration(math.MinInt64)
	latest, earliest := time.Duration(math.MinInt64), time.Duration(math.MaxInt64) // last start, first end
	for i, f := range out.senders {
		mbs, ok := f.res.Values["MB/s"]
		if !ok || mbs <= 0 {
			return nil, fmt.Errorf("sender %d: no MB/s: the stream scenario must move bytes", i+1)
		}
		fcts[i] = float64(f.elapsed())
		bytes += mbs * 1e6 * f.elapsed().Seconds()
		sum += mbs
		sumSq += mbs * mbs
		first, last = min(first, f.start()), max(last, f.end())
		latest, earliest = max(latest, f.start()), min(earliest, f.end())
	}
	if last <= first {
		return nil, fmt.Errorf("the senders' timed regions span %v: no time to divide their bytes by", last-first)
	}
	m := map[string]float64{
		"MB/s":           bytes / 1e6 / (last - first).Seconds(),
		"jain":           sum * sum / (float64(n) * sumSq),
		"fct-p50-ns":     stats.Median(fcts),
		"fct-max-ns":     slices.Max(fcts),
		"sender-skew-ns": float64(latest - first),
	}
	v := out.victim
	overlap := min(v.end(), earliest) - max(v.start(), latest)
	m["victim-overlap"] = max(0, float64(overlap)) / float64(max(v.end()-v.start(), 1))
	for _, p := range []string{"p50", "p99", "p99.9"} {
		idle, ok1 := out.idle.res.Values[p+"-ns"]
		load, ok2 := v.res.Values[p+"-ns"]
		if !ok1 || !ok2 || idle <= 0 {
			return nil, fmt.Errorf("victim: no %s-ns idle and under incast: the victim scenario must report latency percentiles", p)
		}
		m["victim-"+p+"-x"] = load / idle
	}
	return m, nil
}
