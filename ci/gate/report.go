package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Label describes the verdict of row r for the table.
func (r Row) Label() string {
	switch r.Verdict {
	case NoChange:
		if r.Suspect() {
			return fmt.Sprintf("ok: not significant, but median worse by %s > %s (noisy? more runs?)", pct(r.Worse()), pct(r.Threshold))
		}
		return "ok: no significant change"
	case Improved:
		return "ok: improved"
	case WorseWithin:
		return fmt.Sprintf("ok: worse, but ≤ %s", pct(r.Threshold))
	case Unknown:
		return "not gated: direction unknown"
	case Disabled:
		return "not gated: threshold off"
	case Undecided:
		return fmt.Sprintf("UNDECIDED: too few runs (smallest possible p=%.2g > alpha %g)", MinP(r.Cmp.N1, r.Cmp.N2), r.Cmp.Alpha)
	case Regression:
		return fmt.Sprintf("REGRESSION: worse by %s > %s", pct(r.Worse()), pct(r.Threshold))
	}
	return "?"
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
	fmt.Fprintf(w, "  p: two-sided Mann-Whitney U test, n = runs OLD+NEW; regression = significant and worse by more than the threshold\n")
	fmt.Fprintf(w, "  significant: %s\n", r.significanceText())
	fmt.Fprintf(w, "  thresholds: %s\n", r.thresholdText())

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	config := "\x00" // impossible value: forces the first header
	for _, row := range r.Rows {
		if row.Key.Config != config {
			config = row.Key.Config
			fmt.Fprintf(tw, "\nconfig: %s\n", strings.ReplaceAll(config, "\n", " "))
			fmt.Fprintf(tw, "name\tunit\told\t±\tnew\t±\tdelta\tp, n\tverdict\n")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			row.Key.Name, row.Unit,
			FormatValue(row.Old.Center), row.Old.PctRangeString(),
			FormatValue(row.New.Center), row.New.PctRangeString(),
			signedPct(row.Delta), row.Cmp.String(), row.Label())
	}
	return tw.Flush()
}

func signedPct(f float64) string {
	if f > 0 && !math.IsInf(f, 1) {
		return "+" + pct(f)
	}
	return pct(f)
}

// significanceText states which p-values count as significant.
func (r *Report) significanceText() string {
	if r.Opt.NoCorrection {
		return fmt.Sprintf("p ≤ alpha %g for each of the %d decidable gated rows (no multiple-comparison correction)", r.Opt.Alpha, r.Tested)
	}
	cut := "none"
	if r.Cutoff > 0 {
		cut = fmt.Sprintf("p ≤ %.3g", r.Cutoff)
	}
	return fmt.Sprintf("Benjamini-Hochberg at alpha %g over the %d decidable gated rows: %s", r.Opt.Alpha, r.Tested, cut)
}

func (r *Report) thresholdText() string {
	parts := []string{"default " + pct(r.Opt.Threshold)}
	for _, u := range sortedUnits(r.Opt.UnitThresholds) {
		t := r.Opt.UnitThresholds[u]
		if t == Off {
			parts = append(parts, u+" off")
		} else {
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
			FormatValue(row.Old.Center), FormatValue(row.New.Center), signedPct(row.Delta), row.Cmp.String())
	}
	for _, row := range r.Rows {
		if row.Suspect() {
			fmt.Fprintf(w, "suspect (not significant, does not fail): %s %s: %s → %s (%s, %s)\n", row.Key.Name, row.Unit,
				FormatValue(row.Old.Center), FormatValue(row.New.Center), signedPct(row.Delta), row.Cmp.String())
		}
	}
	for _, m := range r.Missing {
		fmt.Fprintf(w, "MISSING in NEW: %s\n", m)
	}
	for _, k := range r.Added {
		fmt.Fprintf(w, "new in NEW (not gated): %s\n", k.Name)
	}
	for _, row := range und {
		fmt.Fprintf(w, "UNDECIDED: %s %s: n=%d+%d runs; no p ≤ %g is possible below %s; run more (-count)\n",
			row.Key.Name, row.Unit, row.Cmp.N1, row.Cmp.N2, r.Opt.Alpha, minRunsText(r.Opt.Alpha))
	}
	if len(r.UnknownUnits) > 0 {
		fmt.Fprintf(w, "not gated, direction unknown (declare with a \"Unit <unit> better=lower|higher\" line): %s\n",
			strings.Join(r.UnknownUnits, ", "))
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(w, "note: %s\n", warn)
	}
}

// minRunsText says how many runs per side make p ≤ alpha possible.
func minRunsText(alpha float64) string {
	for n := 1; n <= 50; n++ {
		if MinP(n, n) <= alpha {
			return fmt.Sprintf("%d runs per side", n)
		}
	}
	return "50 runs per side"
}
