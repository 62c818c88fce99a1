package main

import (
	"fmt"
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// kind is what a contestant runs.
type kind int

const (
	kindPerftest    kind = iota // the scenario's perftest program, server and client
	kindLike                    // the benchmark with perftest's definition (latency: -rdma.signal-all -rdma.warmup 0)
	kindOwn                     // the benchmark with its own latency definition (default flags)
	kindControl                 // the C-only control (ci/cping), our own definition
	kindControlLike             // the C-only control with perftest's work and sample (cping -S)
)

// contestant is one run of every pair.
type contestant struct {
	id   string // P1, P2, L1, L2, O, B1, B2, C, CL
	kind kind
}

// likeFlags make a latency benchmark do perftest's work: every WR
// signaled and awaited, receives reposted per message, no warm-up (the
// benchmark then reports cycle-p50-ns/cycle-p99-ns, perftest's sample).
var likeFlags = []string{"-rdma.signal-all", "-rdma.warmup", "0"}

// contestants lists a scenario's contestants in the first pair's order;
// pair i starts with contestant i mod len (rotate). perftest runs twice
// (P1, P2) and so does the like-for-like benchmark (L1, L2 for latency,
// B1, B2 for streams), so that both tools' run-to-run noise in the same
// session is measured (the A/A bands); each like-for-like run follows its
// perftest run. Latency scenarios add our own definition (O) and, with
// control, the C-only control under our definition (C) and under
// perftest's (CL).
func contestants(s scenario, control bool) []contestant {
	if !s.latency() {
		return []contestant{{"P1", kindPerftest}, {"B1", kindLike}, {"P2", kindPerftest}, {"B2", kindLike}}
	}
	cs := []contestant{{"P1", kindPerftest}, {"L1", kindLike}, {"P2", kindPerftest}, {"L2", kindLike}, {"O", kindOwn}}
	if control {
		cs = append(cs, contestant{"C", kindControl}, contestant{"CL", kindControlLike})
	}
	return cs
}

// rotate returns the order of pair i (0-based): the contestants starting
// with the i-th, so that none always goes first (whatever the first run
// of a pair pays or gains is shared).
func rotate(cs []contestant, i int) []contestant {
	k := i % len(cs)
	return append(slices.Clone(cs[k:]), cs[:k]...)
}

// measures tells whether a contestant of kind k has a value for f.
func measures(k kind, f figure) bool {
	switch k {
	case kindLike, kindControlLike:
		return f.like != ""
	case kindOwn, kindControl:
		return f.own != ""
	}
	return true
}

// spread is the median, minimum and maximum of some ratios; ok is false
// when there are none.
type spread struct {
	median, min, max float64
	ok               bool
}

// band is s's min–max as "0.97–1.06" (two decimals), or "—" when s is
// not ok.
func (s spread) band() string {
	if !s.ok {
		return "—"
	}
	return fmt.Sprintf("%.2f–%.2f", s.min, s.max)
}

// spreadOf summarises q (any order; nil: not ok).
func spreadOf(q []float64) spread {
	if len(q) == 0 {
		return spread{}
	}
	return spread{median: median(q), min: slices.Min(q), max: slices.Max(q), ok: true}
}

// quotients returns num[i] ÷ den[i] for every pair i (the shorter
// length; nil when either is missing).
func quotients(num, den []float64) []float64 {
	n := min(len(num), len(den))
	if n == 0 {
		return nil
	}
	q := make([]float64, n)
	for i := range n {
		q[i] = num[i] / den[i]
	}
	return q
}

// row is one line of a table: one figure of one scenario, summarised
// from its contestants' per-pair values.
type row struct {
	scenario, figure string
	unit             string  // display unit
	perftest         float64 // median of P1
	rdmabench        float64 // median of L1 or B1 (the control's row: of C); NaN: none
	like             spread  // pooled L1/P1 and L2/P2 (or B1/P1 and B2/P2) over the pairs
	perftestAA       spread  // P2/P1 over the pairs
	oursAA           spread  // L2/L1 (or B2/B1) over the pairs
	own              float64 // median of O/P1 (the control's row: C/P1); NaN: none
	// likeRatios, perftestAARatios, oursAARatios are the per-pair
	// ratios, kept for pooling over calibrations.
	likeRatios, perftestAARatios, oursAARatios []float64
}

// inside tells whether the like-for-like ratio lies within perftest's
// own A/A band: whether rdmabench differs from perftest by no more than
// perftest differs from itself.
func (r row) inside() bool {
	return r.like.ok && r.perftestAA.ok && r.like.median >= r.perftestAA.min && r.like.median <= r.perftestAA.max
}

// summarize makes the rows of one figure from its contestants' per-pair
// values (contestant id → value of pair i): the figure's row and, when
// the C-only control ran, the control's rows (own definition: C; like
// for like: CL, whose ratio is CL/P1 per pair).
func summarize(scenario string, f figureRecord) []row {
	v := f.Values
	nan := math.NaN()
	r := row{scenario: scenario, figure: f.Label, unit: f.Unit, perftest: median(v["P1"]), rdmabench: nan, own: nan}
	r.perftestAARatios = quotients(v["P2"], v["P1"])
	r.perftestAA = spreadOf(r.perftestAARatios)
	for _, ids := range [][2]string{{"L1", "L2"}, {"B1", "B2"}} {
		a, b := v[ids[0]], v[ids[1]]
		if len(a) == 0 {
			continue
		}
		r.rdmabench = median(a)
		r.likeRatios = append(quotients(a, v["P1"]), quotients(b, v["P2"])...)
		r.like = spreadOf(r.likeRatios)
		r.oursAARatios = quotients(b, a)
		r.oursAA = spreadOf(r.oursAARatios)
	}
	if o := quotients(v["O"], v["P1"]); o != nil {
		r.own = median(o)
	}
	rows := []row{r}
	if c := v["C"]; len(c) > 0 {
		rows = append(rows, row{scenario: controlName(scenario), figure: f.Label, unit: f.Unit,
			perftest: r.perftest, rdmabench: median(c), perftestAA: r.perftestAA, perftestAARatios: r.perftestAARatios,
			own: median(quotients(c, v["P1"]))})
	}
	if cl := v["CL"]; len(cl) > 0 {
		cr := row{scenario: controlLikeName(scenario), figure: f.Label, unit: f.Unit,
			perftest: r.perftest, rdmabench: median(cl), perftestAA: r.perftestAA, perftestAARatios: r.perftestAARatios, own: nan}
		cr.likeRatios = quotients(cl, v["P1"])
		cr.like = spreadOf(cr.likeRatios)
		rows = append(rows, cr)
	}
	return rows
}

// median is the middle value (mean of the middle two for an even
// count; NaN for none).
func median(v []float64) float64 { return stats.Median(v) }
