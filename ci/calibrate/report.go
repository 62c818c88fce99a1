package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// remainingDifferences are the differences between perftest and the
// like-for-like contestants that no option removes, printed once under
// every table.
var remainingDifferences = []string{
	"Statistics: perftest sorts its iters−1 samples, drops the 2 largest and reports t_typical = the median of the rest (mean of the middle two) and 99% percentile = the sample of rank ceil(0.99·n) of that trimmed array; " +
		"rdmabench keeps every sample (also iters−1 for cycle-p50-ns/cycle-p99-ns) in an HDR histogram (1 ns … 100 s, 3 significant digits) and reports the highest value equivalent to the sample of rank round(q·n), up to 0.1% above it.",
	"Clock: perftest reads the TSC and divides by /proc/cpuinfo's MHz unless its own sample disagrees by 2% (-F: without the CPU-frequency warning); rdmabench read CLOCK_MONOTONIC in ns in every calibration stored before issue #43 (2026-12-06), and since then reads the same counter where the kernel's clocksource is tsc, its frequency measured against CLOCK_MONOTONIC_RAW (rdma-clock, rdma-clock-mhz lines; -rdma.clock).",
	"Clock reads a round trip: perftest reads the clock once, at the post (its sample: post → next post); rdmabench's loops read it at the post and where they see the answer, also in the like-for-like runs, which keep the post → answer sample (p50-ns) beside perftest's. The answer's read lies between the answer and the next post, inside perftest's sample: under TCG it was 0.6 points of write_lat's fast-phase level (issue #43, docs/notes/perf-2026-12-07-write-lat-split.md); a TSC read is about 25 cycles on a real CPU.",
	"Halving: RTT/2 on both for SEND and WRITE ping-pong (ib_send_lat, ib_write_lat; SendLat, WriteLat); the full round trip on both for READ and atomics.",
	"Units: perftest prints µs and MiB/s (2^20 B/s; [MB/sec] before perftest PR #257); the tables show µs and MB/s = 10^6 B/s (perftest's value × 1.048576).",
	"Code around the loop: perftest's loops (run_iter_lat*, run_iter_bw) run in a C process; rdmabench's (verbs/loop.c) in a Go process, whose runtime threads share the machine (the C-only control runs the same loop without Go).",
	"Setup: each tool's own buffers, registrations and QP attributes (one QP per side, inline off: -I 0 / inline=false, busy polling on both); perftest exchanges its QP data over TCP on 127.0.0.1, rdmabench in one process; in the rdma_cm scenarios both connect through the connection manager instead (perftest -R, rdmabench -rdma.cm).",
	"Receiver bandwidth: perftest's ib_send_bw server row against rdmabench's recv-MB/s, both from the receiver's first poll that returned receives to the end of its last (compared since 2026-12-03; older calibrations show perftest's row only, as \"receiver bandwidth (perftest only)\"); on UC and UD a lost message stalls perftest's server, while our sink counts what arrived.",
	"Own definition (O, not perftest's): post → the answer seen (SEND: its receive completion; WRITE: the answer's last byte in memory; READ, atomics: the completion polled), 1 WR in 32 signaled, receives reposted in batches, one warm-up round trip; shown to tell how far our definition lies from perftest's.",
}

// liveColumns are the columns of one calibration's table.
var liveColumns = []string{"scenario", "figure", "perftest", "rdmabench", "ratio", "ratio range",
	"perftest A/A", "rdmabench A/A", "own-definition ratio", "vs perftest A/A"}

// cells formats r as a table line; calibrations, when not "", is the
// rendered table's column of that name.
func (r row) cells(calibrations string) []string {
	val := func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return fmt.Sprintf("%.2f %s", v, r.unit)
	}
	ratio := func(v float64) string {
		if math.IsNaN(v) {
			return "—"
		}
		return fmt.Sprintf("%.2f", v)
	}
	med, verdict := "—", "—"
	if r.like.ok {
		med = ratio(r.like.median)
		if r.perftestAA.ok {
			verdict = "OUTSIDE"
			if r.inside() {
				verdict = "inside"
			}
		}
	}
	out := []string{r.scenario, r.figure, val(r.perftest), val(r.rdmabench), med, r.like.band(),
		r.perftestAA.band(), r.oursAA.band(), ratio(r.own)}
	if calibrations != "" {
		out = append(out, calibrations)
	}
	return append(out, verdict)
}

// writeTable writes a table as Markdown or as aligned text.
func writeTable(w io.Writer, header []string, lines [][]string, markdown bool) {
	if markdown {
		fmt.Fprintln(w, "| "+strings.Join(header, " | ")+" |")
		fmt.Fprintln(w, strings.Repeat("|---", len(header))+"|")
		for _, l := range lines {
			fmt.Fprintln(w, "| "+strings.Join(l, " | ")+" |")
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(l, "\t"))
	}
	tw.Flush()
}

// printTable writes one calibration's table, its definitions, the
// remaining differences and the per-scenario notes.
func printTable(w io.Writer, rec *record, markdown bool) {
	var lines [][]string
	for _, r := range rec.rows() {
		lines = append(lines, r.cells(""))
	}
	writeTable(w, liveColumns, lines, markdown)
	fmt.Fprintf(w, "\n%d pairs per scenario, %d iterations per run (perftest -n %d; rdmabench -test.count 1 -test.benchtime %dx), device %s; %s.\n",
		rec.Runs, rec.Iters, rec.Iters, rec.Iters, rec.Device, cpusText(rec.CPUs))
	for _, l := range columnNotes {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "\nRemaining differences between the tools:")
	for _, d := range remainingDifferences {
		fmt.Fprintf(w, "  - %s\n", d)
	}
	fmt.Fprintln(w, "\nPer scenario (perftest options vs the benchmark; what the like-for-like runs share; watched port counters that moved, from sysfs):")
	for _, s := range rec.Scenarios {
		fmt.Fprintf(w, "  %s: %s vs %s — %s\n", s.Name, s.Perftest, s.Bench, s.Differs)
		for _, f := range s.Figures {
			var ours []string
			if f.LikeMetric != "" {
				ours = append(ours, "like-for-like "+f.LikeMetric)
			}
			if f.OwnMetric != "" {
				ours = append(ours, "own "+f.OwnMetric)
			}
			if len(ours) == 0 {
				ours = append(ours, "no rdmabench figure")
			}
			fmt.Fprintf(w, "    %s: %s; %s\n", f.Label, f.PerftestColumn, strings.Join(ours, ", "))
		}
		fmt.Fprintf(w, "    retransmission/error counters moved (totals over the runs): perftest: %s; rdmabench: %s\n",
			orNone(s.PerftestCounters), orNone(s.BenchCounters))
	}
}

// columnNotes define the columns of one calibration's table.
var columnNotes = []string{
	"Contestants, in one rotation per pair (pair i starts with the i-th): latency P1 L1 P2 L2 O (and, for write_lat with -control, the C-only control: C with our definition, CL like for like, cping -S); bandwidth P1 B1 P2 B2.",
	"  P1, P2: perftest; L1, L2: the benchmark like-for-like (-rdma.signal-all -rdma.warmup 0: cycle-p50-ns, cycle-p99-ns); O: the benchmark's own definition (default flags: p50-ns, p99-ns); B1, B2: the benchmark's stream (MB/s).",
	"perftest = median of P1; rdmabench = median of L1 (B1); ratio = median of L1/P1 and L2/P2 (B1/P1, B2/P2) pooled over the pairs, ratio range their min–max;",
	"perftest A/A = min–max of P2/P1 over the pairs, rdmabench A/A = of L2/L1 (B2/B1); own-definition ratio = median of O/P1 (the control's row: C/P1; the like-for-like control's ratio: median of CL/P1);",
	"vs perftest A/A: inside when the ratio lies within perftest's A/A band (rdmabench differs from perftest no more than perftest from itself), else OUTSIDE. A ratio above 1: rdmabench measured more (latency or bandwidth).",
}

// cpusText says where the contestants ran, from the benchmark's rdma-cpus
// line.
func cpusText(line string) string {
	cpus, err := parseCPUs(line)
	if err != nil {
		return "CPUs: " + line
	}
	return fmt.Sprintf("the benchmark's rdma-cpus %s: %s", line, pinText(cpus))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
