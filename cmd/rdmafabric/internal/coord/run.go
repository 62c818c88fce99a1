package coord

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

// Pkg is the package line of the stream.
const Pkg = "github.com/rdmabench/rdmabench/cmd/rdmafabric"

// maxDials is the most nodes dialled and asked for facts at once.
const maxDials = 64

// runner is the state of one Run.
type runner struct {
	o      Options
	dial   Dialer
	bw     *bufio.Writer
	agents []Agent
	dirs   map[string]int      // unit → +1 higher, −1 lower, written or built in
	counts []map[string]uint64 // node index → counter → total delta
	// rows counts each link scenario's rows so far; failed holds those
	// that failed, which later passes do not run again.
	rows   map[linkScenario]int
	failed map[linkScenario]bool
	sum    Summary
}

// linkScenario is one scenario on one directed link.
type linkScenario struct {
	pair     schedule.Pair
	scenario int // index in Options.Scenarios
}

// pairOutcome is what one pair brought back.
type pairOutcome struct {
	pair schedule.Pair
	scen []scenarioOutcome // in Options.Scenarios order
}

// scenarioOutcome is one scenario's results on a pair, or why there are
// none.
type scenarioOutcome struct {
	sc      Scenario
	results []Result
	err     error
	skip    bool // failed in an earlier pass: nothing to write
}

// Run drives the fabric run o: it dials every node, writes the stream's
// header, runs the plan's rounds and writes their rows, then the counter
// and failure lines (see the package documentation). A failing node,
// pair or scenario is recorded in the Summary and the run goes on. Run
// returns an error for bad options, when writing to w fails, when ctx is
// cancelled (wrapping ctx.Err()), and when no link and scenario could be
// measured; the Summary tells what was done in every case but the first.
func Run(ctx context.Context, o Options, dial Dialer, w io.Writer) (Summary, error) {
	if err := o.Check(); err != nil {
		return Summary{}, err
	}
	if dial == nil || w == nil {
		return Summary{}, errors.New("coord: run: nil dialer or writer")
	}
	r, err := start(ctx, o, dial, w)
	if err != nil {
		return r.sum, err
	}
	var stopped error
	r.failed = make(map[linkScenario]bool)
	r.rows = make(map[linkScenario]int)
passes:
	for pass := range o.Runs {
		for ri, round := range o.Plan.Rounds {
			if err := ctx.Err(); err != nil {
				stopped = fmt.Errorf("coord: run stopped before round %d of %d in pass %d of %d: %w", ri+1, len(o.Plan.Rounds), pass+1, o.Runs, err)
				break passes
			}
			outs := r.runRound(ctx, round)
			for _, out := range outs {
				r.writePair(out)
			}
			if err := r.bw.Flush(); err != nil {
				return r.sum, fmt.Errorf("coord: writing round %d of pass %d: %w", ri+1, pass+1, err)
			}
			if len(outs) < len(round) {
				stopped = fmt.Errorf("coord: run stopped in round %d of %d in pass %d of %d: %w", ri+1, len(o.Plan.Rounds), pass+1, o.Runs, ctx.Err())
				break passes
			}
			r.sum.Rounds++
		}
	}
	r.count()
	r.writeTrailer()
	if err := r.bw.Flush(); err != nil {
		return r.sum, fmt.Errorf("coord: writing the counter and failure lines: %w", err)
	}
	if stopped != nil {
		return r.sum, stopped
	}
	if r.sum.Measured == 0 {
		err := fmt.Errorf("coord: nothing measured: %d link scenarios failed", len(r.sum.Failures))
		if len(r.sum.Failures) > 0 {
			f := r.sum.Failures[0]
			err = fmt.Errorf("%w; the first, %s on %s -> %s: %w", err, f.Scenario, f.Src, f.Dst, f.Err)
		}
		return r.sum, err
	}
	return r.sum, nil
}

// start makes the runner of o and writes the stream's header: it dials
// every node (connect), then writes the package line and the nodes'
// facts. The error is the header's write error; the runner's Summary
// holds the nodes that failed either way.
func start(ctx context.Context, o Options, dial Dialer, w io.Writer) (*runner, error) {
	r := &runner{
		o:      o,
		dial:   dial,
		bw:     bufio.NewWriter(w),
		dirs:   make(map[string]int),
		counts: make([]map[string]uint64, len(o.Nodes)),
	}
	facts := r.connect(ctx)
	r.line("pkg: " + Pkg)
	for _, lines := range facts {
		for _, l := range lines {
			r.line(l)
		}
	}
	if err := r.bw.Flush(); err != nil {
		return r, fmt.Errorf("coord: writing the stream header: %w", err)
	}
	return r, nil
}

// line writes one line; bufio keeps the first write error.
func (r *runner) line(s string) {
	r.bw.WriteString(s)
	r.bw.WriteByte('\n')
}

// connect dials every node and collects its facts, recording the nodes
// that fail. It returns each node's fact lines.
func (r *runner) connect(ctx context.Context) [][]string {
	n := len(r.o.Nodes)
	r.agents = make([]Agent, n)
	facts := make([][]string, n)
	errs := make([]error, n)
	one := func(i int) {
		node := r.o.Nodes[i]
		a, err := r.dial(node)
		if err == nil && a == nil {
			err = errors.New("dialer returned no agent")
		}
		if err != nil {
			errs[i] = fmt.Errorf("dial %s: %w", node, err)
			return
		}
		r.agents[i] = a
		fctx, cancel := context.WithTimeoutCause(ctx, r.o.PairTimeout, fmt.Errorf("facts timeout %v exceeded", r.o.PairTimeout))
		defer cancel()
		lines, err := a.Facts(fctx)
		if err == nil {
			err = checkFacts(node, lines)
		}
		if err != nil {
			errs[i] = fmt.Errorf("facts of %s: %w", node, withCause(fctx, err))
			return
		}
		facts[i] = lines
	}
	if r.o.Concurrency {
		var wg sync.WaitGroup
		sem := make(chan struct{}, maxDials)
		for i := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				one(i)
			})
		}
		wg.Wait()
	} else {
		for i := range n {
			one(i)
		}
	}
	for i, err := range errs {
		if err != nil {
			r.sum.NodeFailures = append(r.sum.NodeFailures, NodeFailure{Node: r.o.Nodes[i], Err: err})
		}
	}
	return facts
}

// checkFacts tells why lines are not node's facts: each must be a
// benchfmt configuration line keyed fabric.node.<node>.<fact>, so that
// an agent cannot put a row or another node's facts into the stream.
func checkFacts(node string, lines []string) error {
	prefix := "fabric.node." + strings.ToLower(node) + "."
	for _, l := range lines {
		key, val, ok := strings.Cut(l, ": ")
		if !ok || !strings.HasPrefix(key, prefix) || len(key) == len(prefix) || !validKey(key) ||
			strings.TrimSpace(val) == "" || strings.ContainsAny(val, "\r\n") {
			return fmt.Errorf("line %.80q: want %s<fact>: <value>, one line", l, prefix)
		}
	}
	return nil
}

// validKey tells whether key is a benchfmt configuration key: it begins
// with a lower-case letter and holds no space, ':' or upper-case letter.
func validKey(key string) bool {
	for i, c := range key {
		if (i == 0 && !('a' <= c && c <= 'z')) || isBadKeyRune(c) {
			return false
		}
	}
	return key != ""
}

// runRound runs the pairs of a round, at once or one at a time, and
// returns their outcomes in the round's order: all of them, or with
// pairs run one at a time, those started before ctx was cancelled.
func (r *runner) runRound(ctx context.Context, round schedule.Round) []pairOutcome {
	outs := make([]pairOutcome, len(round))
	if !r.o.Concurrency {
		for i, p := range round {
			if ctx.Err() != nil {
				return outs[:i]
			}
			outs[i] = r.runPair(ctx, p)
		}
		return outs
	}
	var wg sync.WaitGroup
	for i, p := range round {
		wg.Go(func() { outs[i] = r.runPair(ctx, p) })
	}
	wg.Wait()
	return outs
}

// runPair runs one run of every scenario on pair p under the pair
// timeout, but those that failed in an earlier pass. It is called
// concurrently for the pairs of a round: it only reads the runner's
// state, which changes between rounds, and calls only its own agent.
func (r *runner) runPair(ctx context.Context, p schedule.Pair) pairOutcome {
	out := pairOutcome{pair: p, scen: make([]scenarioOutcome, len(r.o.Scenarios))}
	src, dst := r.o.Nodes[p.Src], r.o.Nodes[p.Dst]
	pctx, cancel := context.WithTimeoutCause(ctx, r.o.PairTimeout, fmt.Errorf("pair timeout %v exceeded", r.o.PairTimeout))
	defer cancel()
	a := r.agents[p.Src]
	for i, sc := range r.o.Scenarios {
		so := &out.scen[i]
		so.sc = sc
		switch {
		case r.failed[linkScenario{p, i}]:
			so.skip = true // failed in an earlier pass: recorded then
		case a == nil:
			so.err = fmt.Errorf("not run: node %s could not be dialled", src)
		case pctx.Err() != nil:
			so.err = fmt.Errorf("not run: %w", withCause(pctx, pctx.Err()))
		default:
			res, err := a.Run(pctx, dst, sc, 1)
			if err == nil {
				err = checkResults(res, 1)
			}
			if err != nil {
				so.err = withCause(pctx, err)
				continue
			}
			so.results = res
		}
	}
	return out
}

// withCause adds ctx's cause to err when ctx is done and err does not
// already say it.
func withCause(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(err, cause) {
		return err
	}
	return fmt.Errorf("%w (%w)", err, cause)
}

// checkResults tells why res are not runs results of one scenario.
func checkResults(res []Result, runs int) error {
	if len(res) != runs {
		return fmt.Errorf("agent returned %d results for %d runs", len(res), runs)
	}
	for i, x := range res {
		if x.Iters < 1 {
			return fmt.Errorf("run %d: %d iterations: want at least 1", i+1, x.Iters)
		}
		if len(x.Values) == 0 {
			return fmt.Errorf("run %d: no value", i+1)
		}
		for u, v := range x.Values {
			if err := checkUnit(u); err != nil {
				return fmt.Errorf("run %d: %w", i+1, err)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("run %d: %s is %v: want a finite value", i+1, u, v)
			}
		}
		for u, d := range x.Units {
			if err := checkUnit(u); err != nil {
				return fmt.Errorf("run %d: %w", i+1, err)
			}
			if d != "higher" && d != "lower" {
				return fmt.Errorf("run %d: unit %s: direction %q: want higher or lower", i+1, u, d)
			}
		}
	}
	return nil
}
