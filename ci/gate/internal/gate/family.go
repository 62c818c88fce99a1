package gate

import (
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
)

// Family is the test of one benchmark: its gated rate and latency units
// (ns/op, MB/s, msgs/s, p50-ns, ...) combined into one decision by Holm's
// procedure within the benchmark.
type Family struct {
	Key Key
	// Rows are the indices in Report.Rows of the units combined.
	Rows []int
	// N1 and N2 are the runs of OLD and NEW.
	N1, N2 int
	// Tests is the number of distinct tests among the rows: units whose
	// runs rank identically (MB/s and msgs/s are ns/op inverted) count
	// once.
	Tests int
	// test maps each of Rows to its distinct test (0..Tests−1).
	test []int
	// P and PBetter are the one-sided p-values that NEW is slower,
	// respectively faster: Tests times the smallest of the rows' own
	// p-values (Bonferroni, the first step of Holm's procedure), at most 1.
	P, PBetter float64
	// Level is the Holm–Šidák level P was compared with.
	Level float64
	// Significant: P ≤ Level in the step-down procedure (NEW slower).
	Significant bool
	// Improved: PBetter ≤ Report.Lone (shown only).
	Improved bool
	// Undecided: even runs that do not overlap at all could not reach
	// Level (Tests·MinP(N1, N2) > Level), or (Blind) the benchmark
	// cannot see the worsening Options.Detect asks for.
	Undecided bool
	// Paired: the rows were tested with the signed-rank test on the
	// adjacent runs' log ratios (Options.Paired and Rho ≥ PairRho);
	// otherwise with the Mann-Whitney U test.
	Paired bool
	// Rho is the Spearman correlation of the adjacent OLD and NEW runs of
	// the primary unit (NaN when the runs are not paired).
	Rho float64
	// Detectable is the smallest of the rows' Detectable: a slowdown of
	// the whole benchmark (every unit worse by it) above it fails the
	// gate for sure.
	Detectable float64
	// Blind: Detectable > Options.Detect, and not Significant.
	Blind bool
}

// minP is the smallest p-value one of the family's tests can produce.
func (f *Family) minP() float64 {
	if f.Paired {
		return MinPPaired(f.N1)
	}
	return MinP(f.N1, f.N2)
}

// testBenchmarks groups the gated relative rows into one Family per
// benchmark (a row whose runs do not line up with its benchmark's runs is
// a family of its own), tests each, and corrects across them with the
// Holm–Šidák step-down procedure.
func (r *Report) testBenchmarks(old, cur *Set) {
	byKey := map[Key][]int{}
	var keys []Key
	for i, row := range r.Rows {
		if row.Better == 0 || row.Threshold == off || row.Abs || row.Constant {
			continue
		}
		if len(row.old) != old.Benches[row.Key].Runs || len(row.cur) != cur.Benches[row.Key].Runs {
			r.addFamily(row.Key, []int{i})
			continue
		}
		if _, ok := byKey[row.Key]; !ok {
			keys = append(keys, row.Key)
		}
		byKey[row.Key] = append(byKey[row.Key], i)
	}
	for _, k := range keys {
		rows := byKey[k]
		paired, rho := r.pairing(rows)
		if paired {
			for _, i := range rows {
				row := &r.Rows[i]
				row.Paired = true
				row.PWorse, row.PBetter = pairedSided(row.old, row.cur, row.Better)
			}
		}
		r.addFamily(k, rows)
		f := &r.Families[len(r.Families)-1]
		f.Paired, f.Rho = paired, rho
	}

	r.Lone = r.level(len(r.Families), 0)
	r.stepDown()
	for i := range r.Families {
		f := &r.Families[i]
		f.Improved = f.PBetter <= r.Lone
		f.Undecided = !f.Significant && float64(f.Tests)*f.minP() > f.Level
		if f.Significant {
			r.holm(f)
		}
		if r.Opt.skipPower {
			continue
		}
		f.Detectable = off
		for _, i := range f.Rows {
			row := &r.Rows[i]
			row.Detectable = r.detectable(*row, r.Lone/float64(f.Tests))
			f.Detectable = min(f.Detectable, row.Detectable)
		}
		if d := r.Opt.Detect; d > 0 && d != off && !f.Significant && !f.Undecided && f.Detectable > d {
			f.Blind, f.Undecided = true, true
			for _, i := range f.Rows {
				r.Rows[i].blind = f.Detectable
			}
		}
	}
	for i := range r.Rows {
		if row := &r.Rows[i]; row.Abs {
			row.Detectable = row.Threshold
		}
	}
}

// holm sets the rows' PAdj in a significant family: Holm's step-down
// adjusted p-values over its distinct tests (the smallest p times Tests,
// the next times Tests−1, ..., never decreasing), so that a row is
// significant when PAdj ≤ the family's Level.
func (r *Report) holm(f *Family) {
	p := make([]float64, f.Tests)
	for k, i := range f.Rows {
		p[f.test[k]] = r.Rows[i].PWorse // equal ranks: equal p
	}
	order := make([]int, f.Tests)
	for t := range order {
		order[t] = t
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmpFloat(p[a], p[b]) })
	adj := make([]float64, f.Tests)
	prev := 0.0
	for j, t := range order {
		prev = max(prev, min(1, float64(f.Tests-j)*p[t]))
		adj[t] = prev
	}
	for k, i := range f.Rows {
		r.Rows[i].PAdj = adj[f.test[k]]
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

// addFamily adds the family of rows (all of one benchmark, same runs).
func (r *Report) addFamily(key Key, rows []int) {
	f := Family{Key: key, Rows: rows, N1: len(r.Rows[rows[0]].old), N2: len(r.Rows[rows[0]].cur), P: 1, PBetter: 1, Rho: math.NaN()}
	var seen [][]float64
	for _, i := range rows {
		row := &r.Rows[i]
		row.Family = len(r.Families)
		f.P = min(f.P, row.PWorse)
		f.PBetter = min(f.PBetter, row.PBetter)
		rk := ranks(row)
		t := slices.IndexFunc(seen, func(s []float64) bool { return slices.Equal(s, rk) })
		if t < 0 {
			t = len(seen)
			seen = append(seen, rk)
		}
		f.test = append(f.test, t)
	}
	f.Tests = len(seen)
	f.P = min(1, f.P*float64(f.Tests))
	f.PBetter = min(1, f.PBetter*float64(f.Tests))
	r.Families = append(r.Families, f)
}

// ranks returns the rank of every run of row among both sides' runs
// (OLD first, ties averaged), oriented so that a higher rank is worse.
func ranks(row *Row) []float64 {
	pooled := append(slices.Clone(row.old), row.cur...)
	if row.Better > 0 {
		for i := range pooled {
			pooled[i] = -pooled[i]
		}
	}
	return midranks(pooled)
}

// level is the Holm–Šidák level of step j (from 0) among m tests:
// 1−(1−alpha)^(1/(m−j)); alpha without correction.
func (r *Report) level(m, j int) float64 {
	if r.Opt.NoCorrection || m-j <= 1 {
		return r.Opt.Alpha
	}
	return -math.Expm1(math.Log1p(-r.Opt.Alpha) / float64(m-j))
}

// slowed returns NEW's samples of row as if NEW were worse by the
// fraction w (as Row.Worse measures it) with its observed spread: OLD's
// median times each NEW run's ratio to NEW's median, times 1+w for
// lower-is-better units and 1−w for higher-is-better ones. Rows with
// non-positive values are returned as they are.
func slowed(row Row, w float64) []float64 {
	if !positive(row.old) || !positive(row.cur) {
		return row.cur
	}
	f := 1 + w
	if row.Better > 0 {
		f = 1 - w
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
	if better == 0 {
		return 1, 1
	}
	larger, err1 := stats.MannWhitneyUTest(old, cur, stats.LocationLess) // NEW larger
	smaller, err2 := stats.MannWhitneyUTest(old, cur, stats.LocationGreater)
	if err1 != nil || err2 != nil {
		return 1, 1
	}
	if better > 0 {
		return smaller.P, larger.P
	}
	return larger.P, smaller.P
}

// detectable returns the smallest worsening w of row (as Row.Worse
// measures it) that would fail the gate for sure when nothing else
// changed: NEW worse by w with its observed spread (see slowed) gives a
// one-sided p ≤ level (the family's level over its tests, the Bonferroni
// bound of Holm's first step), and w exceeds the threshold. Found by
// bisection; off when no worsening can (too few runs, or values ≤ 0).
func (r *Report) detectable(row Row, level float64) float64 {
	detected := func(w float64) bool {
		p, _ := oneSided(row.old, slowed(row, w), row.Better)
		return p <= level
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
			s := math.Log1p(w)
			if row.Better > 0 {
				s = -math.Log1p(-w)
			}
			moved := make([]float64, len(d))
			for i, v := range d {
				moved[i] = v - med + s
			}
			p, _ := signedRank(moved)
			return p <= level
		}
	}
	hi := 1e6 // lower is better: up to a million times slower
	if row.Better > 0 {
		hi = 1 - 1e-6 // rates: down to a millionth
	}
	if !positive(row.old) || !positive(row.cur) || !detected(hi) {
		return off
	}
	lo := 0.0
	for range 40 {
		mid := (lo + hi) / 2
		if row.Better < 0 {
			mid = math.Sqrt((1+lo)*(1+hi)) - 1 // bisect on log(1+w)
		}
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
