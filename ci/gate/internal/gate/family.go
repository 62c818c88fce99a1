package gate

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// Family is the test of one benchmark: the one-sided test of its
// deciding unit (see Decider), corrected across the benchmarks. Its other
// gated units are tested too, each on its own, and reported (Row.Verdict
// AlsoWorse when one is significantly worse), but they do not decide: one
// run's ns/op, msgs/s, MB/s and cpu-ns/op are largely one measurement,
// and counting them as separate tests spent the correction's power on
// copies (issue #41).
type Family struct {
	Key Key
	// Unit is the deciding unit, as written (e.g. "p50-ns", "MB/s").
	Unit string
	// Row is the index in Report.Rows of the deciding unit's row.
	Row int
	// Rows are the indices in Report.Rows of every gated relative row of
	// the benchmark, the deciding one included.
	Rows []int
	// N1 and N2 are the runs of OLD and NEW.
	N1, N2 int
	// P and PBetter are the deciding unit's one-sided p-values that NEW
	// is slower, respectively faster.
	P, PBetter float64
	// Level is the Holm–Šidák level P was compared with.
	Level float64
	// Significant: P ≤ Level in the step-down procedure (NEW slower).
	Significant bool
	// Improved: PBetter ≤ Report.Lone (shown only).
	Improved bool
	// Undecided: even runs that do not overlap at all could not reach
	// Level (MinP(N1, N2) > Level), or (Blind) the deciding unit cannot
	// see the worsening Options.Detect asks for.
	Undecided bool
	// Paired: the rows were tested with the signed-rank test on the
	// adjacent runs' log ratios (Options.Paired and Rho ≥ PairRho);
	// otherwise with the Mann-Whitney U test.
	Paired bool
	// Rho is the Spearman correlation of the adjacent OLD and NEW runs of
	// the deciding unit (NaN when the runs are not paired).
	Rho float64
	// Detectable is the deciding unit's Row.Detectable: a slowdown of the
	// benchmark above it, in that unit, fails the gate for sure.
	Detectable float64
	// Blind: Detectable > Options.Detect, and not Significant.
	Blind bool
	// ProcessPairs counts the groups of runs by process (ci/interleave.sh
	// PROCS; 0 without rdma-process lines): pairs of processes (OLD's,
	// NEW's) where the runs are paired, else the processes of both sides. ProcessP is the check that they agree (see processCheck;
	// NaN when not made), ProcessSD the spread of their mean log ratios
	// beyond their runs' (a fraction).
	ProcessPairs        int
	ProcessP, ProcessSD float64
	// ProcessesDiffer: ProcessP ≤ ProcessLevel, and offsets of
	// ProcessSD could carry the benchmark past its threshold (see
	// offsetsMatter). The runs of one process share an offset, so they
	// are not the unit: the benchmark is UNDECIDED (never a regression or
	// a pass on them).
	ProcessesDiffer bool
}

// minP is the smallest p-value the family's test can produce.
func (f *Family) minP() float64 {
	if f.Paired {
		return MinPPaired(f.N1)
	}
	return MinP(f.N1, f.N2)
}

// testBenchmarks groups the gated relative rows into one Family per
// benchmark, tests each by its deciding unit, and corrects across them
// with the Holm–Šidák step-down procedure. Every other gated row is
// tested on its own at the level of a lone benchmark (Report.Lone).
func (r *Report) testBenchmarks(old, cur *Set) {
	byKey := map[Key][]int{}
	var keys []Key
	for i, row := range r.Rows {
		if row.Better == 0 || row.Threshold == off || row.Abs || row.Constant {
			continue
		}
		if _, ok := byKey[row.Key]; !ok {
			keys = append(keys, row.Key)
		}
		byKey[row.Key] = append(byKey[row.Key], i)
	}
	for _, k := range keys {
		rows := byKey[k]
		d := r.decider(k, rows)
		paired, rho := r.pairing(r.Rows[d])
		for _, i := range rows {
			row := &r.Rows[i]
			row.Family = len(r.Families)
			row.Deciding = i == d
			if paired && len(row.old) == len(row.cur) {
				row.Paired = true
				row.PWorse, row.PBetter = pairedSided(row.old, row.cur, row.Better)
			}
		}
		dr := r.Rows[d]
		r.Families = append(r.Families, Family{Key: k, Unit: dr.Unit, Row: d, Rows: rows,
			N1: len(dr.old), N2: len(dr.cur), P: dr.PWorse, PBetter: dr.PBetter, Paired: paired, Rho: rho})
	}

	r.Lone = r.level(len(r.Families), 0)
	r.stepDown()
	for i := range r.Families {
		f := &r.Families[i]
		f.Improved = f.PBetter <= r.Lone
		f.Undecided = !f.Significant && f.minP() > f.Level
		r.processCheck(f, old.Benches[f.Key], cur.Benches[f.Key])
		if f.ProcessP <= ProcessLevel && offsetsMatter(f.ProcessSD, f.ProcessPairs, f.Paired, r.Rows[f.Row].Threshold) {
			f.ProcessesDiffer, f.Significant, f.Improved, f.Undecided = true, false, false, true
		}
		if r.Opt.skipPower {
			continue
		}
		for _, i := range f.Rows {
			row := &r.Rows[i]
			row.Detectable = r.detectable(*row, r.Lone)
		}
		f.Detectable = r.Rows[f.Row].Detectable
		if d := r.Opt.Detect; d > 0 && d != off && !f.Significant && !f.Undecided && f.Detectable > d {
			f.Blind, f.Undecided = true, true
			r.Rows[f.Row].blind = f.Detectable
		}
	}
	for i := range r.Rows {
		if row := &r.Rows[i]; row.Abs {
			row.Detectable = row.Threshold
		}
	}
}

// stepDown sets the families' Level and Significant: Holm–Šidák, the
// smallest p first at 1−(1−alpha)^(1/m), the next at 1−(1−alpha)^(1/(m−1)),
// and so on, stopping at the first p above its level (without
// correction: every family at alpha).
func (r *Report) stepDown() {
	m := len(r.Families)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmpFloat(r.Families[a].P, r.Families[b].P)
	})
	stopped := false
	lvl := r.level(m, 0)
	for j, fi := range order {
		f := &r.Families[fi]
		if !stopped {
			lvl = r.level(m, j)
		}
		f.Level = lvl
		f.Significant = !stopped && f.P <= lvl
		if !f.Significant && !r.Opt.NoCorrection {
			stopped = true // step-down: no larger p is tested
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// level is the Holm–Šidák level of step j (from 0) among m tests:
// 1−(1−alpha)^(1/(m−j)); alpha without correction.
func (r *Report) level(m, j int) float64 {
	if r.Opt.NoCorrection || m-j <= 1 {
		return r.Opt.Alpha
	}
	return -math.Expm1(math.Log1p(-r.Opt.Alpha) / float64(m-j))
}

// slowed returns NEW's samples of row as if NEW were slower by the
// fraction w (as Row.Worse measures it) with its observed spread: OLD's
// median times each NEW run's ratio to NEW's median, times 1+w for
// lower-is-better units and divided by 1+w for higher-is-better ones.
// Rows with non-positive values are returned as they are.
func slowed(row Row, w float64) []float64 {
	if !positive(row.old) || !positive(row.cur) {
		return row.cur
	}
	f := 1 + w
	if row.Better > 0 {
		f = 1 / (1 + w)
	}
	scale := row.Old.Center / row.New.Center * f
	out := make([]float64, len(row.cur))
	for i, v := range row.cur {
		out[i] = v * scale
	}
	return out
}

func positive(vals []float64) bool {
	for _, v := range vals {
		if !(v > 0) {
			return false
		}
	}
	return true
}

// oneSided returns the one-sided Mann-Whitney U p-values that cur is
// worse, respectively better, than old for a unit of direction better
// (+1 higher is better, −1 lower is better); 1, 1 without a direction or
// when the test cannot be done (e.g. all values equal).
func oneSided(old, cur []float64, better int) (pWorse, pBetter float64) {
	return worseP(old, cur, better), worseP(old, cur, -better)
}

// worseP returns oneSided's pWorse alone. With ties the test's exact
// distribution is built anew for each call, so detectable's bisection,
// which needs only this side, must not pay for the other.
func worseP(old, cur []float64, better int) float64 {
	alt := stats.LocationLess // NEW larger: worse for a time
	switch {
	case better == 0:
		return 1
	case better > 0:
		alt = stats.LocationGreater // NEW smaller: worse for a rate
	}
	res, err := stats.MannWhitneyUTest(old, cur, alt)
	if err != nil {
		return 1
	}
	return res.P
}

// detectable returns the smallest slowdown w of row (as Row.Worse
// measures it) that would fail the gate for sure when nothing else
// changed: NEW worse by w with its observed spread (see slowed) gives a
// one-sided p ≤ level (the family's level over its tests, the Bonferroni
// bound of Holm's first step), and w exceeds the threshold. Found by
// bisection; off when no worsening can (too few runs, or values ≤ 0).
func (r *Report) detectable(row Row, level float64) float64 {
	detected := func(w float64) bool {
		return worseP(row.old, slowed(row, w), row.Better) <= level
	}
	if row.Paired {
		// The pairs' log ratios, centred on their median (the observed
		// difference removed), then moved by w.
		d := logRatios(row.old, row.cur, row.Better, 0)
		if d == nil {
			return off
		}
		med := median(d)
		detected = func(w float64) bool {
			s := math.Log1p(w) // slower by w: log(new/old) of a time, log(old/new) of a rate
			moved := make([]float64, len(d))
			for i, v := range d {
				moved[i] = v - med + s
			}
			p, _ := signedRank(moved)
			return p <= level
		}
	}
	hi := 1e6 // up to a million times slower
	if !positive(row.old) || !positive(row.cur) || !detected(hi) {
		return off
	}
	lo := 0.0
	// Bisect on log(1+w) down to a part in a million of 1+w, far finer
	// than the report prints (about 24 steps).
	for (1+hi)/(1+lo) > 1+1e-6 {
		mid := math.Sqrt((1+lo)*(1+hi)) - 1
		if detected(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return max(hi, row.Threshold)
}

// MinP returns the smallest p-value the one-sided Mann-Whitney U test can
// produce for sample sizes n1 and n2: 1/C(n1+n2, n1), reached when the
// samples do not overlap at all (ties only make it larger). A
// permutation test of the runs, such as a family's, cannot go lower.
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	// C(n1+n2, n1) computed incrementally to stay exact for small n.
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return 1 / c
}

// RunsNeeded returns the smallest number of runs per side with which a
// benchmark of tests distinct tests can reach level
// (tests·MinP(n, n) ≤ level).
func RunsNeeded(tests int, level float64) int {
	n := 1
	for float64(tests)*MinP(n, n) > level && n < 1000 {
		n++
	}
	return n
}
