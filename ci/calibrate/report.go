package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// commonNotes are the definitions that differ in every scenario.
var commonNotes = []string{
	"A ratio above 1 means rdmabench measured a higher latency or a higher bandwidth.",
	"MB/s = 10^6 bytes/s: perftest's BW average (MiB/s = 2^20 bytes/s, labelled [MB/sec] before perftest PR #257) × 1.048576.",
	"perftest times with the TSC (cycles ÷ MHz from /proc/cpuinfo or its own calibration); rdmabench with Go's monotonic clock.",
	"perftest's p50 is its t_typical (median of the samples left after dropping the 2 largest), its p99 the nearest rank of that trimmed array;",
	"  rdmabench's p50-ns/p99-ns are quantiles of every sample in an HDR histogram (3 significant digits).",
}

// printTable writes the comparison.
func printTable(w io.Writer, c config, rows []result) {
	header := []string{"scenario", "figure", "perftest", "perftest column", "rdmabench", "rdmabench metric", "ratio", "ratio range"}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		lines = append(lines, []string{
			r.sc.name,
			r.fig.label,
			fmt.Sprintf("%.2f %s", r.perftest, r.fig.display),
			fmt.Sprintf("%s %s %s", r.sc.program, r.sc.side, r.col),
			fmt.Sprintf("%.2f %s", r.rdmabench, r.fig.display),
			r.fig.unit,
			fmt.Sprintf("%.2f", r.ratios.median),
			fmt.Sprintf("%.2f–%.2f", r.ratios.min, r.ratios.max),
		})
	}
	if c.markdown {
		fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
		fmt.Fprintln(w, strings.Repeat("|---", len(header))+"|")
		for _, l := range lines {
			fmt.Fprintln(w, "| "+strings.Join(l, " | ")+" |")
		}
	} else {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, l := range lines {
			fmt.Fprintln(tw, strings.Join(l, "\t"))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n%d interleaved pairs per scenario (perftest once and the benchmark once, perftest first in odd pairs and second in even ones), %d iterations per run (perftest -n %d, rdmabench -test.count 1 -test.benchtime %dx), device %s.\n",
		c.runs, c.iters, c.iters, c.iters, c.dev)
	fmt.Fprintln(w, "perftest, rdmabench = median of that side's runs; ratio = median over the pairs of rdmabench ÷ perftest (need not equal the quotient of the two medians); ratio range = min–max of those per-pair ratios.")
	for _, n := range commonNotes {
		fmt.Fprintln(w, n)
	}
	fmt.Fprintln(w, "\nPer scenario (perftest options; what differs; watched port counters that moved, from sysfs):")
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.sc.name] {
			continue
		}
		seen[r.sc.name] = true
		fmt.Fprintf(w, "  %s: %s %s vs %s — %s", r.sc.name, r.sc.program, strings.Join(r.sc.args, " "), r.sc.bench, r.sc.differs)
		fmt.Fprintf(w, "\n    retransmission/error counters moved (totals over the runs): perftest: %s; rdmabench: %s\n",
			orNone(r.ptCount), orNone(r.counters))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
