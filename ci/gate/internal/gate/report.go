package gate

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchmath"
)

// Label describes the verdict of row r for the table.
func (r Row) Label() string {
	switch r.Verdict {
	case NoChange:
		if r.Constant {
			return "ok: constant on both sides (not a test)"
		}
		if r.Abs {
			return fmt.Sprintf("ok: within %s", absText(r.Unit, r.Threshold))
		}
		if r.Suspect() {
			return fmt.Sprintf("ok: not significant, but median worse by %s > %s (noisy? more runs?)", pct(r.Worse()), pct(r.Threshold))
		}
		return "ok: no significant change"
	case Improved:
		return "ok: improved"
	case WorseWithin:
		return fmt.Sprintf("ok: worse, but ≤ %s", r.thresholdText())
	case AlsoWorse:
		return fmt.Sprintf("WORSE by %s (not the deciding unit: does not fail)", r.worseText())
	case Unknown:
		return "not gated: direction unknown"
	case Disabled:
		return "not gated: threshold off"
	case Undecided:
		if r.blind > 0 {
			return fmt.Sprintf("UNDECIDED: the benchmark sees only %s, more than -detect", seesText(r.blind))
		}
		return "UNDECIDED: too few runs for the benchmark's test"
	case Regression:
		return fmt.Sprintf("REGRESSION: worse by %s > %s", r.worseText(), r.thresholdText())
	}
	return "?"
}

// worseText is Worse as a percentage, or in the unit for Abs rows.
func (r Row) worseText() string {
	if r.Abs {
		return absText(r.Unit, r.Worse())
	}
	return pct(r.Worse())
}

func (r Row) thresholdText() string {
	if r.Abs {
		return absText(r.Unit, r.Threshold)
	}
	return pct(r.Threshold)
}

// deltaText is the change of the medians: relative, or in the unit for
// Abs rows and when OLD's median is 0 (never "+Inf%").
func (r Row) deltaText() string {
	if r.Abs || r.Old.Center == 0 {
		d := r.New.Center - r.Old.Center
		s := FormatValue(d)
		if d > 0 {
			s = "+" + s
		}
		return s + " " + r.Unit
	}
	return signedPct(r.Delta)
}

// pText is the table's p column: the two-sided U test of the row alone,
// or for a paired row the two-sided signed-rank test of its pairs.
func (r Row) pText() string {
	if !r.Paired {
		return r.Cmp.String()
	}
	return fmt.Sprintf("p=%.3f n=%d pairs", min(1, 2*min(r.PWorse, r.PBetter)), len(r.old))
}

// detectableText is Detectable for the table: "-" for rows not gated.
func (r Row) detectableText() string {
	switch {
	case r.Family < 0 && !r.Abs:
		return "-"
	case r.Detectable == off:
		return "none"
	case r.Abs:
		return ">" + absText(r.Unit, r.Detectable)
	}
	return ">" + pct(r.Detectable)
}

// absText formats an amount of an absolute unit, e.g. "64 B/op".
func absText(unit string, v float64) string {
	return FormatValue(v) + " " + unit
}

// pct formats a fraction as a percentage.
func pct(f float64) string {
	return strconv.FormatFloat(f*100, 'f', 1, 64) + "%"
}

// FormatValue prints v in the benchmark's own unit with up to four
// significant digits and without exponent for everyday magnitudes.
func FormatValue(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000 || v == math.Trunc(v):
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// WriteTable prints the explanation header and one line per row,
// grouped by configuration like benchstat.
func (r *Report) WriteTable(w io.Writer, oldPath, newPath string) error {
	fmt.Fprintf(w, "gate: OLD=%s NEW=%s\n", oldPath, newPath)
	fmt.Fprintf(w, "  values: median over runs (one per result line) in the unit the benchmark printed (ns = nanoseconds, MB/s = 10^6 bytes/s);\n")
	fmt.Fprintf(w, "  ±: %.0f%% confidence interval of the median, as %% of the median; delta = (new−old)/old of the medians;\n", Confidence*100)
	fmt.Fprintf(w, "  p: two-sided Mann-Whitney U test of the row alone, n = runs OLD+NEW, or for a paired benchmark (-paired) the signed-rank test of its n pairs (shown; the decision is per benchmark)\n")
	fmt.Fprintf(w, "  decides: the benchmark's deciding unit (p50-ns for latency benchmarks, else MB/s, msgs/s, ops/s; -decide); the other units are tested and shown, and one significantly worse is named WORSE, but does not fail the gate\n")
	fmt.Fprintf(w, "  replication: one sample is %s\n", r.replicationText())
	fmt.Fprintf(w, "  significant: %s\n", r.significanceText())
	fmt.Fprintf(w, "  regression: the deciding unit significantly worse, and its median worse by more than the threshold;\n")
	fmt.Fprintf(w, "    B/op and allocs/op (not tests): the median grew by more than the threshold in the unit\n")
	fmt.Fprintf(w, "  thresholds: %s\n", r.thresholdText())
	fmt.Fprintf(w, "  detectable: a worsening of the row above this fails the gate for sure when nothing else changed (given n and the spread); below it, it can pass\n")

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	config := "\x00" // impossible value: forces the first header
	for _, row := range r.Rows {
		if row.Key.Config != config {
			config = row.Key.Config
			fmt.Fprintf(tw, "\nconfig: %s\n", strings.ReplaceAll(config, "\n", " "))
			fmt.Fprintf(tw, "name\tunit\t\told\t±\tnew\t±\tdelta\tp, n\tdetectable\tverdict\n")
		}
		role := ""
		if row.Deciding {
			role = "decides"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			row.Key.Name, row.Unit, role,
			FormatValue(row.Old.Center), row.Old.PctRangeString(),
			FormatValue(row.New.Center), row.New.PctRangeString(),
			row.deltaText(), row.pText(), row.detectableText(), row.Label())
	}
	return tw.Flush()
}

func signedPct(f float64) string {
	if f > 0 && !math.IsInf(f, 1) {
		return "+" + pct(f)
	}
	return pct(f)
}

// significanceText states how a benchmark is tested and corrected.
func (r *Report) significanceText() string {
	test := "one test per benchmark: the one-sided test (NEW worse) of its deciding unit"
	if r.Opt.NoCorrection {
		return fmt.Sprintf("%s, each of the %d benchmarks at p ≤ alpha %g (no multiple-comparison correction)", test, len(r.Families), r.Opt.Alpha)
	}
	return fmt.Sprintf("%s; Holm–Šidák over the %d benchmarks at alpha %g: a lone slower benchmark needs p ≤ %.3g", test, len(r.Families), r.Opt.Alpha, r.Lone)
}

func (r *Report) thresholdText() string {
	parts := []string{"default " + pct(r.Opt.Threshold)}
	for _, u := range slices.Sorted(maps.Keys(r.Opt.UnitThresholds)) {
		t := r.Opt.UnitThresholds[u]
		switch {
		case t == off:
			parts = append(parts, u+" off")
		case absUnits[u]:
			parts = append(parts, u+" "+absText(u, t))
		default:
			parts = append(parts, u+" "+pct(t))
		}
	}
	return strings.Join(parts, ", ")
}

// WriteSummary prints counts and names every regression, missing, new,
// undecided benchmark and ungated unit.
func (r *Report) WriteSummary(w io.Writer) {
	regs, und := r.Regressions(), r.Undecided()
	fmt.Fprintf(w, "\nsummary: %d rows, %d gated; %d regressions, %d undecided, %d missing in NEW, %d new in NEW\n",
		len(r.Rows), r.Gated(), len(regs), len(und), len(r.Missing), len(r.Added))
	for _, row := range regs {
		fmt.Fprintf(w, "REGRESSION: %s %s: %s → %s (%s, %s)\n", row.Key.Name, row.Unit,
			FormatValue(row.Old.Center), FormatValue(row.New.Center), row.deltaText(), row.Cmp.String())
	}
	for _, row := range r.AlsoWorseRows() {
		fmt.Fprintf(w, "WORSE (not the deciding unit %s; does not fail, look at it): %s %s: %s → %s (%s, %s, detectable %s)\n",
			r.Families[row.Family].Unit, row.Key.Name, row.Unit, rangeText(row.Old), rangeText(row.New), row.deltaText(), row.pText(), row.detectableText())
	}
	for _, row := range r.Rows {
		if row.Suspect() {
			fmt.Fprintf(w, "not significant, worse by more than %s: %s %s: %s → %s (%s, %s)\n", pct(row.Threshold), row.Key.Name, row.Unit,
				rangeText(row.Old), rangeText(row.New), row.deltaText(), row.pText())
		}
	}
	for _, m := range r.Missing {
		fmt.Fprintf(w, "MISSING in NEW: %s\n", m)
	}
	for _, k := range r.Added {
		fmt.Fprintf(w, "new in NEW (not gated): %s\n", k.Name)
	}
	if r.Replication == ByBoot || r.Replication == ByProcess {
		for i, side := range []string{"OLD", "NEW"} {
			if r.groups[i] < 2 {
				fmt.Fprintf(w, "CANNOT DECIDE: %s holds runs of %d %s (the %s lines): this comparison's unit is the %s (runs of one share its state: a stored file's runs were made minutes or reboots from the other side's), so each side needs runs from at least %d %s (a make bench after each of that many reboots, appended to one file), or compare builds with make compare (one boot, paired runs, -replicate runs)\n",
					side, r.groups[i], one(r.Replication, r.groups[i]), replicationKey(r.Replication), one(r.Replication, 1), RunsNeeded(1, r.Lone), r.Replication)
			}
		}
	}
	for _, f := range r.Families {
		switch {
		case f.ProcessesDiffer:
			fmt.Fprintf(w, "UNDECIDED: %s: its %d processes (or pairs of them) disagree (Kruskal–Wallis permutation p=%.2g ≤ %g; between-process spread ≈ %s): runs of one process share an offset, so they are not independent samples; run more processes (PROCS) or a quieter machine\n",
				f.Key.Name, f.ProcessPairs, f.ProcessP, ProcessLevel, pct(f.ProcessSD))
		case f.Blind:
			fmt.Fprintf(w, "UNDECIDED: %s: n=%d+%d runs, %s: its %s sees only %s, more than -detect %s (too noisy: more runs, or a quieter machine)\n",
				f.Key.Name, f.N1, f.N2, f.testName(), f.Unit, seesText(f.Detectable), pct(r.Opt.Detect))
		case f.Undecided:
			fmt.Fprintf(w, "UNDECIDED: %s: n=%d+%d %s: its smallest possible p %.2g > %.3g (the level it was tested at); needs %d %s per side\n",
				f.Key.Name, f.N1, f.N2, r.unitName(), f.minP(), f.Level, RunsNeeded(1, f.Level), r.unitName())
		}
	}
	r.writeDecidable(w)
	r.writeProcesses(w)
	r.writePower(w)
	if len(r.UnknownUnits) > 0 {
		fmt.Fprintf(w, "not gated, direction unknown (declare with a \"Unit <unit> better=lower|higher\" line): %s\n",
			strings.Join(r.UnknownUnits, ", "))
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "note: %s\n", warn)
	}
}

// writeDecidable prints how many benchmarks can see -detect, and which
// test each benchmark got when the runs are paired.
func (r *Report) writeDecidable(w io.Writer) {
	if len(r.Families) == 0 || r.Opt.skipPower {
		return
	}
	ds := make([]float64, 0, len(r.Families))
	paired := 0
	for _, f := range r.Families {
		ds = append(ds, f.Detectable)
		if f.Paired {
			paired++
		}
	}
	slices.Sort(ds)
	if d := r.Opt.Detect; d > 0 && d != off {
		fmt.Fprintf(w, "decidable: %d of %d benchmarks see a slowdown of %s (-detect) in their deciding unit; smallest slowdown seen for sure, median over the benchmarks %s, largest %s\n",
			r.Decidable(), len(r.Families), pct(d), pct(ds[len(ds)/2]), pct(ds[len(ds)-1]))
	}
	fmt.Fprintf(w, "benchmarks: %d tested paired (Wilcoxon signed-rank on the adjacent runs' log ratios, Spearman ρ ≥ %.2g), %d unpaired (Mann-Whitney U); each by its deciding unit:\n",
		paired, PairRho, len(r.Families)-paired)
	for _, f := range r.Families {
		fmt.Fprintf(w, "  %s: decides by %s, %s, ρ=%.2f, p=%.3g at level %.3g, sees %s\n", f.Key.Name, f.Unit, f.testName(), f.Rho, f.P, f.Level, seesText(f.Detectable))
	}
}

// seesText says what slowdown a benchmark (or row) sees for sure.
func seesText(d float64) string {
	if d == off {
		return "no slowdown at all"
	}
	return "slowdowns above " + pct(d)
}

// Decidable counts the benchmarks that can see the slowdown -detect asks
// for (without -detect: those with enough runs to reach their level).
// A benchmark with too few runs sees nothing: it is not decidable.
func (r *Report) Decidable() int {
	n := 0
	for _, f := range r.Families {
		if !f.Undecided {
			n++
		}
	}
	return n
}

// testName names the family's test.
func (f *Family) testName() string {
	if f.Paired {
		return "paired signed-rank"
	}
	return "unpaired U"
}

// writePower prints, per gated unit, the largest worsening that would
// have passed unnoticed: the benchmark whose row has the largest
// Detectable, and the median over the benchmarks.
func (r *Report) writePower(w io.Writer) {
	byUnit := map[string][]Row{}
	var units []string
	for _, row := range r.Rows {
		if !row.Deciding {
			continue
		}
		if _, ok := byUnit[row.Unit]; !ok {
			units = append(units, row.Unit)
		}
		byUnit[row.Unit] = append(byUnit[row.Unit], row)
	}
	if len(units) > 0 {
		fmt.Fprintf(w, "power (a regression confined to one benchmark, given the runs and the observed spread):\n")
	}
	for _, u := range units {
		rows := byUnit[u]
		worst := rows[0]
		ds := make([]float64, len(rows))
		for i, row := range rows {
			ds[i] = row.Detectable
			if row.Detectable > worst.Detectable {
				worst = row
			}
		}
		slices.Sort(ds)
		runs := fmt.Sprintf("%d %s per side", worst.Cmp.N1, r.unitName())
		if worst.Cmp.N1 != worst.Cmp.N2 {
			runs = fmt.Sprintf("%d+%d %s", worst.Cmp.N1, worst.Cmp.N2, r.unitName())
		}
		if worst.Detectable == off {
			fmt.Fprintf(w, "  with %s, no %s regression of %s could fail the gate (too few runs, or values ≤ 0)\n", runs, u, worst.Key.Name)
			continue
		}
		limit := pct(worst.Detectable)
		if worst.Detectable == worst.Threshold {
			limit += " (the threshold)"
		}
		fmt.Fprintf(w, "  with %s, a %s regression under %s of %s would pass unnoticed (median over %d benchmarks: %s)\n",
			runs, u, limit, worst.Key.Name, len(rows), pct(ds[len(ds)/2]))
	}
}

// Outcome says in words what the exit status code (ExitCode) of the
// report means: PASS, FAIL with the counts, CANNOT DECIDE with why, or
// nothing to compare.
func (r *Report) Outcome(code int) string {
	switch code {
	case ExitOK:
		return "PASS: no regression"
	case ExitRegression:
		return fmt.Sprintf("FAIL: %d regressions, %d missing in NEW", len(r.Regressions()), len(r.Missing))
	case ExitUndecided:
		blind, few, procs := 0, 0, 0
		for _, f := range r.Families {
			switch {
			case f.ProcessesDiffer:
				procs++
			case f.Blind:
				blind++
			case f.Undecided:
				few++
			}
		}
		why := fmt.Sprintf("%d with too few runs", few)
		if d := r.Opt.Detect; d > 0 && d != off {
			why = fmt.Sprintf("%d too noisy to see %s, %s", blind, pct(d), why)
		}
		if procs > 0 {
			why += fmt.Sprintf(", %d whose processes disagree", procs)
		}
		return fmt.Sprintf("CANNOT DECIDE: no regression found, but %d of %d benchmarks are UNDECIDED (%s; -allow-undecided accepts this)",
			few+blind+procs, len(r.Families), why)
	}
	return "ERROR: nothing gated to compare (no shared benchmark with a unit of known direction and a threshold)"
}

// rangeText is a summary's median with its confidence interval, e.g.
// "1234 [1200, 1250]".
func rangeText(s benchmath.Summary) string {
	return fmt.Sprintf("%s [%s, %s]", FormatValue(s.Center), FormatValue(s.Lo), FormatValue(s.Hi))
}

// unitName names the gate's unit of replication in messages: "runs", or
// what Options.Replicate collapsed the runs to.
func (r *Report) unitName() string {
	if r.Replication != "" {
		return r.Replication
	}
	return "runs"
}

// writeProcesses prints, for paired runs from several processes a side,
// how far the processes' offsets spread beyond their runs' (the process
// component of the variance, per benchmark).
func (r *Report) writeProcesses(w io.Writer) {
	var sds []float64
	worst, differ := -1, 0
	for i, f := range r.Families {
		if math.IsNaN(f.ProcessSD) || f.ProcessPairs < 2 {
			continue
		}
		sds = append(sds, f.ProcessSD)
		if worst < 0 || f.ProcessSD > r.Families[worst].ProcessSD {
			worst = i
		}
		if f.ProcessesDiffer {
			differ++
		}
	}
	if len(sds) == 0 {
		return
	}
	slices.Sort(sds)
	f := r.Families[worst]
	fmt.Fprintf(w, "processes: %d benchmarks with runs from several processes; spread of the processes' offsets beyond their runs' (deciding unit; paired: of process pairs): median %s, largest %s (%s, %d groups, p=%.2g); %d disagree at p ≤ %g (UNDECIDED)\n",
		len(sds), pct(sds[len(sds)/2]), pct(f.ProcessSD), f.Key.Name, f.ProcessPairs, f.ProcessP, differ, ProcessLevel)
}

// one is the unit of replication units, singular for n = 1 ("boot").
func one(units string, n int) string {
	if n != 1 {
		return units
	}
	return map[string]string{ByBoot: "boot", ByProcess: "process", ByRun: "run"}[units]
}

// replicationKey is the configuration line that labels a unit.
func replicationKey(by string) string {
	if by == ByBoot {
		return BootKey
	}
	return ProcessKey
}
