package gate

import (
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"

	"github.com/rdmabench/rdmabench/internal/results"
)

// Confidence is the confidence level of the median intervals printed.
const Confidence = 0.95

// Verdict is the outcome for one (benchmark, unit) pair.
type Verdict int

// Verdicts, from best to worst for the gate.
const (
	// NoChange: no significant difference (or, for B/op and allocs/op,
	// a change within the threshold).
	NoChange Verdict = iota
	// Improved: significantly better.
	Improved
	// WorseWithin: significantly worse, but not by more than the threshold.
	WorseWithin
	// AlsoWorse: a unit other than the benchmark's deciding one,
	// significantly worse on its own (p ≤ Report.Lone, the level of a
	// lone benchmark) by more than its threshold. It does not decide the
	// gate; the report names it loudly.
	AlsoWorse
	// Unknown: the unit has no known better direction; not gated.
	Unknown
	// Disabled: the unit's threshold is off; not gated.
	Disabled
	// Undecided: too few runs for the benchmark's test to reach its
	// corrected level at all.
	Undecided
	// Regression: significantly worse, by more than the threshold.
	Regression
)

// Row is the comparison of one unit of one benchmark.
type Row struct {
	Key  Key
	Unit string // as written, e.g. "p99-ns"
	// Better is +1 if higher is better, -1 if lower, 0 if unknown.
	Better   int
	Old, New benchmath.Summary
	// Cmp is the two-sided U test of this row alone (shown in the table).
	Cmp benchmath.Comparison
	// PWorse and PBetter are the one-sided U-test p-values of this row
	// that NEW is worse, respectively better, than OLD.
	PWorse, PBetter float64
	// Deciding: this row's unit decides its benchmark (Family.Unit).
	Deciding bool
	// Delta is (new median − old median) / old median.
	Delta float64
	// Abs marks a unit gated by absolute change (B/op, allocs/op);
	// Threshold is then in the unit itself (bytes, allocations).
	Abs bool
	// Constant: both sides hold one and the same value (0 allocs/op
	// against 0): shown, not a test.
	Constant bool
	// Threshold is the fraction (absolute amount when Abs) applied to
	// this row; +Inf if disabled.
	Threshold float64
	// Paired: PWorse and PBetter come from the signed-rank test of the
	// pairs (the benchmark's Family.Paired).
	Paired bool
	// blind is the benchmark's Family.Detectable when it is UNDECIDED
	// for seeing no less than -detect (0 otherwise).
	blind float64
	// Family is the index in Report.Families of the benchmark test the
	// row takes part in, -1 if none.
	Family int
	// Detectable is the worsening (as Worse measures it) above which this
	// row fails the gate for sure when nothing else changed, given the
	// run counts and the observed spread (see Report.detectable); +Inf
	// when no worsening can fail it.
	Detectable float64
	Verdict    Verdict
	// old and cur are the samples in file order, one per run.
	old, cur []float64
}

// Worse reports how much worse new is than old, as a slowdown: the time
// the medians say an operation takes, new over old, minus one (negative
// when better). For a lower-is-better unit (a time) that is its relative
// change; for a rate (higher is better) it is old/new − 1, so that a
// benchmark 25% slower is Worse 0.25 in ns/op, p50-ns, MB/s and msgs/s
// alike (its rate dropped by 20%). In the unit itself for Abs rows; 0 if
// the direction is unknown.
func (r Row) Worse() float64 {
	switch {
	case r.Abs:
		return -float64(r.Better) * (r.New.Center - r.Old.Center)
	case r.Better > 0 && r.Old.Center == r.New.Center:
		return 0
	case r.Better > 0 && r.New.Center <= 0:
		return math.Inf(1)
	case r.Better > 0:
		return r.Old.Center/r.New.Center - 1
	}
	return -float64(r.Better) * r.Delta
}

// Suspect reports a deciding row that passes only for lack of
// significance: its median is worse by more than the threshold, the
// benchmark can see -detect, but its test did not reject. It is listed.
func (r Row) Suspect() bool {
	return r.Deciding && r.Verdict == NoChange && r.Worse() > r.Threshold
}

// Report is the result of comparing two result sets.
type Report struct {
	Opt  Options
	Rows []Row
	// Missing lists benchmarks (or single gated units of a benchmark)
	// present in OLD but absent from NEW, with a hint when only the
	// configuration differs. An ungated unit (no direction, threshold
	// off) that NEW dropped is a warning instead; /run units are
	// zero-filled, never missing.
	Missing []string
	// Added lists benchmarks present only in NEW.
	Added []Key
	// UnknownUnits lists units shown but not gated for lack of a
	// better= direction.
	UnknownUnits []string
	// Warnings collects distinct statistical and parsing warnings.
	Warnings []string
	// Families are the benchmarks' tests, one per benchmark with gated
	// rate or latency units (see Compare).
	Families []Family
	// Replication names the unit of replication the tests counted:
	// "runs" (empty), or "boots" or "processes" when a stored file's
	// runs were collapsed to one median per boot or process (see
	// Collapse).
	Replication string
	groups      [2]int // OLD's and NEW's boots or processes (Replication)
	// Lone is the level a benchmark's p-value must reach when it is the
	// only one that changed: the first Holm–Šidák step, 1−(1−Alpha)^(1/m)
	// for m = len(Families) (Alpha without correction).
	Lone float64
}

// Compare pairs the benchmarks of old and cur (NEW) and compares each unit.
func Compare(old, cur *Set, opt Options) *Report {
	rep := &Report{Opt: opt}
	if by := opt.Replicate; by == ByBoot || by == ByProcess {
		rep.Replication = by
		rep.groups = [2]int{Groups(old, by), Groups(cur, by)}
		old, cur = Collapse(old, by), Collapse(cur, by)
	}
	meta := mergeUnits(old.Units, cur.Units)
	thr := benchmath.DefaultThresholds
	thr.CompareAlpha = opt.Alpha
	unknown := map[string]bool{}
	warned := map[string]bool{}
	warn := func(errs []error) {
		for _, e := range errs {
			if !warned[e.Error()] {
				warned[e.Error()] = true
				rep.Warnings = append(rep.Warnings, e.Error())
			}
		}
	}
	for _, s := range []*Set{old, cur} {
		for _, e := range s.SyntaxErrors {
			rep.Warnings = append(rep.Warnings, "malformed line ignored: "+e)
		}
	}

	for _, key := range old.Order {
		ob := old.Benches[key]
		nb, ok := cur.Benches[key]
		if !ok {
			rep.Missing = append(rep.Missing, missingHint(key, cur))
			continue
		}
		units := slices.Clone(ob.Units)
		for _, u := range nb.Units {
			if results.PerRun(u) && !slices.Contains(units, u) {
				units = append(units, u) // moved only in NEW: compared with OLD's zeros
			}
		}
		for _, unit := range units {
			nvals, ok := nb.samples(unit)
			if !ok {
				// A unit the gate would not gate (no direction, or its
				// threshold off) that NEW dropped is a note, not a
				// failure: there was nothing to compare.
				if meta.GetBetter(ob.Tidy[unit]) == 0 || opt.threshold(unit) == off {
					rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: unit %s is only in OLD (not gated)", key.Name, unit))
				} else {
					rep.Missing = append(rep.Missing, fmt.Sprintf("%s: unit %s", key.Name, unit))
				}
				continue
			}
			ovals, _ := ob.samples(unit)
			tidy := ob.Tidy[unit]
			if tidy == "" {
				tidy = nb.Tidy[unit]
			}
			// NewSample sorts in place: the family test needs run order.
			so := benchmath.NewSample(slices.Clone(ovals), &thr)
			sn := benchmath.NewSample(slices.Clone(nvals), &thr)
			row := Row{
				Key:       key,
				Unit:      unit,
				Better:    meta.GetBetter(tidy),
				Old:       benchmath.AssumeNothing.Summary(so, Confidence),
				New:       benchmath.AssumeNothing.Summary(sn, Confidence),
				Cmp:       benchmath.AssumeNothing.Compare(so, sn),
				Abs:       absUnits[unit],
				Constant:  identicalConstant(so.Values, sn.Values),
				Threshold: opt.threshold(unit),
				Family:    -1,
				old:       ovals,
				cur:       nvals,
			}
			row.PWorse, row.PBetter = 1, 1
			if row.Threshold != off && !row.Abs && !row.Constant {
				row.PWorse, row.PBetter = oneSided(ovals, nvals, row.Better)
			}
			warn(so.Warnings)
			warn(sn.Warnings)
			warn(row.Old.Warnings)
			warn(row.New.Warnings)
			if !row.Constant {
				// The U test reports "all samples are equal" for e.g.
				// 0 allocs/op on both sides: P=1 is right, no note needed.
				warn(row.Cmp.Warnings)
			}
			row.Delta = relDelta(row.Old.Center, row.New.Center)
			rep.Rows = append(rep.Rows, row)
		}
	}
	rep.testBenchmarks(old, cur)
	for i := range rep.Rows {
		row := &rep.Rows[i]
		row.Verdict = rep.verdict(*row)
		if row.Verdict == Unknown && !unknown[row.Unit] {
			unknown[row.Unit] = true
			rep.UnknownUnits = append(rep.UnknownUnits, row.Unit)
		}
	}
	for _, key := range cur.Order {
		if _, ok := old.Benches[key]; !ok {
			rep.Added = append(rep.Added, key)
		}
	}
	for _, u := range opt.Named {
		if !slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.Unit == u }) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("-unit-threshold names %s, which no benchmark of both files reports (a typo?): it has no effect", u))
		}
	}
	return rep
}

// mergeUnits combines the unit metadata of both files; NEW wins on
// conflicts (a direction change is visible in the NEW file's Unit lines).
func mergeUnits(old, cur benchfmt.UnitMetadataMap) benchfmt.UnitMetadataMap {
	m := make(benchfmt.UnitMetadataMap, len(old)+len(cur))
	for k, v := range old {
		m[k] = v
	}
	for k, v := range cur {
		m[k] = v
	}
	return m
}

// identicalConstant reports whether a and b (sorted) hold one value only.
func identicalConstant(a, b []float64) bool {
	return a[0] == a[len(a)-1] && b[0] == b[len(b)-1] && a[0] == b[0]
}

// relDelta returns (new−old)/old; 0 if both are 0, ±Inf if only old is 0.
func relDelta(old, cur float64) float64 {
	switch {
	case old == cur:
		return 0
	case old == 0:
		return math.Copysign(math.Inf(1), cur)
	}
	return (cur - old) / math.Abs(old)
}

// verdict classifies a row (after testBenchmarks).
func (r *Report) verdict(row Row) Verdict {
	switch {
	case row.Better == 0:
		return Unknown
	case row.Threshold == off:
		return Disabled
	case row.Constant:
		return NoChange
	case row.Abs:
		return absVerdict(row)
	case row.Family < 0:
		return NoChange // cannot happen: every gated relative row is in a family
	}
	f := r.Families[row.Family]
	if !row.Deciding {
		switch {
		case row.PWorse <= r.Lone && row.Worse() > row.Threshold:
			return AlsoWorse
		case row.PBetter <= r.Lone && row.Worse() < 0:
			return Improved
		}
		return NoChange
	}
	switch {
	case f.Significant && row.Worse() > row.Threshold:
		return Regression
	case f.Significant && row.Worse() > 0:
		return WorseWithin
	case f.Improved && row.Worse() < 0:
		return Improved
	case f.Undecided:
		return Undecided
	}
	return NoChange
}

// absVerdict classifies a B/op or allocs/op row by the change of its
// median in the unit itself.
func absVerdict(row Row) Verdict {
	switch w := row.Worse(); {
	case w > row.Threshold:
		return Regression
	case w < -row.Threshold:
		return Improved
	}
	return NoChange
}

func missingHint(key Key, cur *Set) string {
	for _, nk := range cur.Order {
		if nk.Name == key.Name {
			return fmt.Sprintf("%s (present in NEW with different configuration: %s; add such keys to -ignore-config to pair them)",
				key.Name, configDiff(key.Config, nk.Config))
		}
	}
	return key.Name
}

// Regressions returns the rows with verdict Regression.
func (r *Report) Regressions() []Row { return r.with(Regression) }

// Undecided returns the deciding rows of the benchmarks that cannot
// decide (too few runs, or unable to see -detect).
func (r *Report) Undecided() []Row { return r.with(Undecided) }

// AlsoWorseRows returns the rows of units other than the deciding ones
// that are significantly worse on their own (verdict AlsoWorse).
func (r *Report) AlsoWorseRows() []Row { return r.with(AlsoWorse) }

func (r *Report) with(v Verdict) []Row {
	var rows []Row
	for _, row := range r.Rows {
		if row.Verdict == v {
			rows = append(rows, row)
		}
	}
	return rows
}

// Gated reports how many rows were subject to the gate (known direction,
// threshold not off).
func (r *Report) Gated() int {
	return len(r.Rows) - len(r.with(Unknown)) - len(r.with(Disabled))
}

// Exit codes of the gate.
const (
	ExitOK         = 0 // no regression
	ExitRegression = 1 // regression(s) or missing benchmarks
	ExitInput      = 2 // unreadable/empty input, usage error, nothing comparable
	ExitUndecided  = 3 // too few runs to decide
)

// ExitCode maps the report to the gate's exit status.
func (r *Report) ExitCode(allowMissing, allowUndecided bool) int {
	switch {
	case r.Gated() == 0:
		return ExitInput
	case len(r.Regressions()) > 0, len(r.Missing) > 0 && !allowMissing:
		return ExitRegression
	case len(r.Undecided()) > 0 && !allowUndecided:
		return ExitUndecided
	}
	return ExitOK
}
