package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// Confidence is the confidence level of the median intervals printed.
const Confidence = 0.95

// Off is the threshold value that disables gating of a unit.
var Off = math.Inf(1)

// DefaultUnitThresholds are the per-unit thresholds used unless
// overridden by -unit-threshold. Tail percentiles rest on few samples:
// a quantile q from N operations is decided by the N·(1−q) slowest ones,
// so p99.99-ns of a few thousand operations is essentially the maximum,
// and max-ns is a single operation (one scheduler hiccup moves it).
var DefaultUnitThresholds = map[string]float64{
	"p99.9-ns":  0.15,
	"p99.99-ns": Off,
	"max-ns":    Off,
}

// Options configures a comparison.
type Options struct {
	// Alpha is the significance level: a difference counts only if the
	// Mann-Whitney U test gives p ≤ Alpha.
	Alpha float64
	// Threshold is the relative worsening of the median (0.05 = 5%) that
	// must be exceeded for a regression, for units not in UnitThresholds.
	Threshold float64
	// UnitThresholds overrides Threshold per unit as written
	// (e.g. "p99-ns"); Off disables gating of that unit.
	UnitThresholds map[string]float64
	// NoCorrection tests every row at Alpha on its own. By default the
	// gate applies the Benjamini-Hochberg procedure over all decidable
	// gated rows (see Compare), because one comparison tests dozens of
	// rows: at p ≤ 0.05 each, two runs of the same build would fail about
	// every other time.
	NoCorrection bool
}

// threshold returns the threshold for unit.
func (o Options) threshold(unit string) float64 {
	if t, ok := o.UnitThresholds[unit]; ok {
		return t
	}
	return o.Threshold
}

// Verdict is the outcome for one (benchmark, unit) pair.
type Verdict int

// Verdicts, from best to worst for the gate.
const (
	// NoChange: p > alpha, no significant difference.
	NoChange Verdict = iota
	// Improved: p ≤ alpha and the median moved in the better direction.
	Improved
	// WorseWithin: p ≤ alpha, worse, but not by more than the threshold.
	WorseWithin
	// Unknown: the unit has no known better direction; not gated.
	Unknown
	// Disabled: the unit's threshold is off; not gated.
	Disabled
	// Undecided: too few runs for p ≤ alpha to be possible at all.
	Undecided
	// Regression: p ≤ alpha and worse by more than the threshold.
	Regression
)

// Row is the comparison of one unit of one benchmark.
type Row struct {
	Key  Key
	Unit string // as written, e.g. "p99-ns"
	// Better is +1 if higher is better, -1 if lower, 0 if unknown.
	Better   int
	Old, New benchmath.Summary
	Cmp      benchmath.Comparison
	// Delta is (new median − old median) / old median.
	Delta float64
	// Threshold is the fraction applied to this row (Off if disabled).
	Threshold float64
	Verdict   Verdict
}

// Worse reports how much worse new is than old as a fraction (negative
// when better); 0 if the direction is unknown.
func (r Row) Worse() float64 {
	return -float64(r.Better) * r.Delta
}

// Suspect reports a row that passes only for lack of significance: its
// median is worse by more than the threshold but p > alpha (noise or too
// few runs). It does not fail the gate; it is listed.
func (r Row) Suspect() bool {
	return r.Verdict == NoChange && r.Worse() > r.Threshold
}

// Report is the result of comparing two result sets.
type Report struct {
	Opt  Options
	Rows []Row
	// Missing lists benchmarks (or single units of a benchmark) present
	// in OLD but absent from NEW, with a hint when only the
	// configuration differs.
	Missing []string
	// Added lists benchmarks present only in NEW.
	Added []Key
	// UnknownUnits lists units shown but not gated for lack of a
	// better= direction.
	UnknownUnits []string
	// Warnings collects distinct statistical and parsing warnings.
	Warnings []string
	// Tested is the number of rows the significance correction ran over
	// (gated and decidable), and Cutoff the largest p-value that counts
	// as significant (Alpha without correction; 0 when none does).
	Tested int
	Cutoff float64
}

// Compare pairs the benchmarks of old and cur (NEW) and compares each unit.
func Compare(old, cur *Set, opt Options) *Report {
	rep := &Report{Opt: opt}
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
			if IsCounter(u) && !slices.Contains(units, u) {
				units = append(units, u) // moved only in NEW: compared with OLD's zeros
			}
		}
		for _, unit := range units {
			nvals, ok := nb.samples(unit)
			if !ok {
				rep.Missing = append(rep.Missing, fmt.Sprintf("%s: unit %s", key.Name, unit))
				continue
			}
			ovals, _ := ob.samples(unit)
			tidy := ob.Tidy[unit]
			if tidy == "" {
				tidy = nb.Tidy[unit]
			}
			so := benchmath.NewSample(ovals, &thr)
			sn := benchmath.NewSample(nvals, &thr)
			row := Row{
				Key:       key,
				Unit:      unit,
				Better:    meta.GetBetter(tidy),
				Old:       benchmath.AssumeNothing.Summary(so, Confidence),
				New:       benchmath.AssumeNothing.Summary(sn, Confidence),
				Cmp:       benchmath.AssumeNothing.Compare(so, sn),
				Threshold: opt.threshold(unit),
			}
			warn(so.Warnings)
			warn(sn.Warnings)
			warn(row.Old.Warnings)
			warn(row.New.Warnings)
			if !identicalConstant(so.Values, sn.Values) {
				// The U test reports "all samples are equal" for e.g.
				// 0 allocs/op on both sides: P=1 is right, no note needed.
				warn(row.Cmp.Warnings)
			}
			row.Delta = relDelta(row.Old.Center, row.New.Center)
			rep.Rows = append(rep.Rows, row)
		}
	}
	rep.Tested, rep.Cutoff = significance(rep.Rows, opt)
	for i := range rep.Rows {
		row := &rep.Rows[i]
		row.Verdict = verdict(*row, opt.Alpha, rep.Cutoff)
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

// MinP returns the smallest p-value the two-sided Mann-Whitney U test
// can produce for sample sizes n1 and n2: 2/C(n1+n2, n1), reached when
// the samples do not overlap at all (ties only make it larger).
func MinP(n1, n2 int) float64 {
	if n1 == 0 || n2 == 0 {
		return 1
	}
	// C(n1+n2, n1) computed incrementally to stay exact for small n.
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// decidable tells rows that are gated and could reach p ≤ alpha.
func decidable(r Row, alpha float64) bool {
	return r.Better != 0 && r.Threshold != Off && MinP(r.Cmp.N1, r.Cmp.N2) <= alpha
}

// significance returns how many rows are tested and the p-value cutoff.
// Without correction the cutoff is alpha. With it (the default), the
// Benjamini-Hochberg step-up procedure runs over the m decidable gated
// rows: sorted by p, the largest k with p_(k) ≤ k/m·alpha gives the
// cutoff p_(k) (0 when there is none). When nothing changed at all, this
// keeps the chance that any row is flagged at alpha (BH controls the
// family-wise error under the global null), where testing m rows at
// alpha each would flag about m·alpha/2 in the worse direction. A real
// regression moves several rows of its benchmark at once (ns/op, msgs/s,
// MB/s, percentiles), which is the case the step-up procedure keeps
// power for. Rows that cannot reach p ≤ alpha with their run counts are
// not counted in m (they are UNDECIDED instead).
func significance(rows []Row, opt Options) (tested int, cutoff float64) {
	var ps []float64
	for _, r := range rows {
		if decidable(r, opt.Alpha) {
			ps = append(ps, r.Cmp.P)
		}
	}
	if opt.NoCorrection {
		return len(ps), opt.Alpha
	}
	slices.Sort(ps)
	m := float64(len(ps))
	for k := len(ps); k >= 1; k-- {
		if ps[k-1] <= float64(k)/m*opt.Alpha {
			return len(ps), ps[k-1]
		}
	}
	return len(ps), 0
}

// verdict classifies a row; a p-value counts as significant when it is at
// most cutoff (see significance).
func verdict(r Row, alpha, cutoff float64) Verdict {
	switch {
	case r.Better == 0:
		return Unknown
	case r.Threshold == Off:
		return Disabled
	case MinP(r.Cmp.N1, r.Cmp.N2) > alpha:
		return Undecided
	case r.Cmp.P > cutoff:
		return NoChange
	case r.Worse() > r.Threshold:
		return Regression
	case r.Worse() > 0:
		return WorseWithin
	}
	return Improved
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

// ParsePercent parses a threshold such as "5%", "5" (both 5%) or "off".
func ParsePercent(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return Off, nil
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("threshold %q: want a non-negative percentage like 5%% or off", s)
	}
	return v / 100, nil
}

// ParseUnitThresholds parses "unit=pct,unit=off,..." into a map.
func ParseUnitThresholds(s string) (map[string]float64, error) {
	m := make(map[string]float64)
	for item := range strings.SplitSeq(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		unit, val, ok := strings.Cut(item, "=")
		if !ok || strings.TrimSpace(unit) == "" {
			return nil, fmt.Errorf("unit threshold %q: want unit=percent", item)
		}
		t, err := ParsePercent(val)
		if err != nil {
			return nil, fmt.Errorf("unit %s: %w", unit, err)
		}
		m[strings.TrimSpace(unit)] = t
	}
	return m, nil
}

// Regressions returns the rows with verdict Regression.
func (r *Report) Regressions() []Row { return r.with(Regression) }

// Undecided returns the gated rows that had too few runs.
func (r *Report) Undecided() []Row { return r.with(Undecided) }

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

// sortedUnits returns the keys of m in order.
func sortedUnits(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
