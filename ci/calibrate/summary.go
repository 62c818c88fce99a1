package main

import (
	"fmt"
	"io"
	"strings"
)

// The README's performance summary: one row per perftest tool (the
// scenario name's first word: write_lat, send_bw, …), merged over the
// tool's scenarios (transports, sizes, rdma_cm) and rendered from every
// stored calibration.
//
// For each calibration c and tool t:
//
//   - R(c,t) = the median of every like-for-like per-pair ratio (L1/P1,
//     L2/P2; streams B1/P1, B2/P2) of t's scenarios in c, for the
//     scenario's headline figure (its first: p50 = perftest's t_typical,
//     or the sender's bandwidth);
//   - A(c,t) = the median of perftest's own per-pair ratio P2/P1 over
//     the same scenarios and pairs: perftest against itself, the same
//     statistic.
//
// The row prints the median and min–max of R over the calibrations and
// the same of A. Its verdict is "inside" when the median of R lies
// within A's min–max (rdmabench differs from perftest no more than
// perftest's own calibrations differ from each other), OUTSIDE when it
// does not, and "—" with fewer than minPooledAA calibrations.

// toolOf is the perftest tool of a scenario name ("send_lat UC 8 B" →
// "send_lat").
func toolOf(scenario string) string {
	tool, _, _ := strings.Cut(scenario, " ")
	return tool
}

// toolSummary is one row of the summary.
type toolSummary struct {
	tool      string
	figures   []string // the headline figures merged (p50; bandwidth)
	scenarios []string // every scenario merged, in first-seen order
	like, aa  spread   // over the calibrations: R and A
	n         int      // calibrations with a ratio
}

// verdict is the row's verdict (the rule above).
func (s toolSummary) verdict() string {
	if !s.like.ok || !s.aa.ok || s.n < minPooledAA {
		return "—"
	}
	if s.like.median >= s.aa.min && s.like.median <= s.aa.max {
		return "inside"
	}
	return "OUTSIDE"
}

// summarizeTools merges recs (oldest first) per perftest tool, tools in
// the order first seen.
func summarizeTools(recs []record) []toolSummary {
	var order []string
	byTool := map[string]*toolSummary{}
	perCal := map[string]*[2][]float64{} // tool → R, A per calibration
	seen := func(list []string, s string) []string {
		for _, x := range list {
			if x == s {
				return list
			}
		}
		return append(list, s)
	}
	for _, rec := range recs {
		like, aa := map[string][]float64{}, map[string][]float64{}
		for _, s := range rec.Scenarios {
			if len(s.Figures) == 0 {
				continue
			}
			f := s.Figures[0]
			r := summarize(s.Name, f)[0]
			if len(r.likeRatios) == 0 || len(r.perftestAARatios) == 0 {
				continue // no rdmabench contestant in this figure
			}
			t := toolOf(s.Name)
			ts := byTool[t]
			if ts == nil {
				ts = &toolSummary{tool: t}
				byTool[t] = ts
				perCal[t] = &[2][]float64{}
				order = append(order, t)
			}
			ts.figures = seen(ts.figures, f.Label)
			ts.scenarios = seen(ts.scenarios, s.Name)
			like[t] = append(like[t], r.likeRatios...)
			aa[t] = append(aa[t], r.perftestAARatios...)
		}
		for t, l := range like {
			pc := perCal[t]
			pc[0] = append(pc[0], median(l))
			pc[1] = append(pc[1], median(aa[t]))
			byTool[t].n++
		}
	}
	var out []toolSummary
	for _, t := range order {
		ts := byTool[t]
		ts.like, ts.aa = spreadOf(perCal[t][0]), spreadOf(perCal[t][1])
		out = append(out, *ts)
	}
	return out
}

// medBand is "1.12 (1.06–1.17)": the median and the min–max.
func medBand(s spread) string {
	if !s.ok {
		return "—"
	}
	return fmt.Sprintf("%.2f (%s)", s.median, s.band())
}

// summaryColumns are the columns of the summary.
var summaryColumns = []string{"perftest tool", "figure", "scenarios merged", "calibrations",
	"rdmabench ÷ perftest: median (min–max)", "perftest ÷ perftest (A/A): median (min–max)", "verdict"}

// renderSummary writes the summary of recs as a Markdown table, with
// what each column is under it.
func renderSummary(w io.Writer, recs []record) {
	var lines [][]string
	for _, s := range summarizeTools(recs) {
		lines = append(lines, []string{s.tool, strings.Join(s.figures, ", "), fmt.Sprint(len(s.scenarios)),
			fmt.Sprint(s.n), medBand(s.like), medBand(s.aa), s.verdict()})
	}
	fmt.Fprintf(w, "From all %d stored calibrations in docs/calibration/ (%s).\n\n", len(recs), dateRange(recs))
	writeTable(w, summaryColumns, lines, true)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Per calibration, rdmabench ÷ perftest is the median of every like-for-like per-pair ratio (L1/P1, L2/P2; streams B1/P1, B2/P2)")
	fmt.Fprintln(w, "of the tool's scenarios, and perftest ÷ perftest the median of P2/P1 over the same pairs (perftest against itself);")
	fmt.Fprintln(w, "each column gives the median and min–max of that per-calibration value over the calibrations.")
	fmt.Fprintf(w, "verdict: inside when rdmabench's median lies within perftest's A/A min–max, else OUTSIDE (— below %d calibrations).\n", minPooledAA)
	fmt.Fprintln(w, "figure p50 = perftest's t_typical against our cycle-p50-ns; bandwidth = the sender's BW average against MB/s. Above 1: rdmabench measured more.")
}

// dateRange is "2026-12-03 – 2026-12-04": the first and last
// calibration's dates.
func dateRange(recs []record) string {
	if len(recs) == 0 {
		return ""
	}
	first, last := recs[0].Time[:10], recs[len(recs)-1].Time[:10]
	if first == last {
		return first
	}
	return first + " to " + last
}

// RenderSummary renders the README's summary from every calibration
// stored in dir.
func RenderSummary(dir string) (string, error) {
	recs, err := load(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	renderSummary(&b, recs)
	return b.String(), nil
}
