// Command gate is rdmabench's benchmark regression gate: it compares two
// Go benchmark result files (OLD, NEW) with golang.org/x/perf's benchfmt
// and benchmath and exits non-zero when NEW is significantly worse.
//
// Usage:
//
//	go run ./ci/gate [flags] OLD NEW
//
// Pairing: results are paired by full benchmark name (including
// sub-benchmark keys and the -GOMAXPROCS suffix) and by every file
// configuration line (goos, goarch, pkg, rdma-device, rdma-fw, kernel,
// ...) except those named by -ignore-config (default "cpu,rdma-node-guid":
// the CPU model string and the device's GUID identify a machine, not a
// configuration). A benchmark whose configuration differs is reported as
// missing with the differing keys; list them in -ignore-config to compare
// across, e.g., firmware versions on purpose.
//
// Statistics: every result line is one sample (one run). For each unit
// present on both sides the gate prints the median with a 95% confidence
// interval and the two-sided Mann-Whitney U test of the row alone
// (benchmath.AssumeNothing; "assume=" unit metadata is not used). A unit's
// direction comes from "Unit <unit> better=lower|higher" lines in either
// file plus benchfmt's built-ins (ns/op, B/op, allocs/op lower; MB/s
// higher). Port counter units ("<counter>/run") are printed only in runs
// where the counter moved: a run without one counts as 0.
//
// Decision: one test per benchmark. Its gated units — every unit with a
// direction (ns/op, MB/s and the Unit lines': p50-ns ... p99.9-ns,
// msgs/s, msgs/s/thread, ops/s, cpu-ns/op, delivered-msgs/s,
// lost-msgs/op), except B/op and allocs/op (see below) — each get the
// one-sided U test that NEW is worse; units that rank
// the runs identically (MB/s and msgs/s are ns/op inverted) count as one
// test, and rows constant on both sides as none. The benchmark's p-value
// is Holm's first step within it, k·min(p) for k distinct tests; the
// benchmarks' p-values are corrected across with the Holm–Šidák step-down
// procedure at -alpha (the smallest at 1−(1−alpha)^(1/m), m benchmarks).
// A row is a REGRESSION when its benchmark is significant, the row is
// significant within it (Holm-adjusted p ≤ the benchmark's level) AND its
// median is worse by more than the unit's threshold (-threshold, default
// 5%; per unit -unit-threshold, defaults p99.9-ns=15%, p99.99-ns=off,
// max-ns=off because tail quantiles rest on a handful of operations).
// Units without a direction, or with threshold off, are shown but not
// gated. The chance that two runs of the same build fail is at most alpha
// (runs independent between benchmarks); -no-correction tests every
// benchmark at alpha alone.
//
// Why this procedure: a regression usually slows one benchmark (a code
// path), not many, so power must not depend on other rows moving. The
// earlier Benjamini–Hochberg over all ~420 rows of the default matrix
// needed about 19 rows at the smallest possible p before any counted,
// more than one benchmark has, so a lone slower benchmark passed. The
// choice among four procedures was made by simulation on the default
// matrix (internal/gate's TestChooseProcedure, runs drawn from the rxe
// results in testdata): at 8 runs per side, one benchmark 20% worse was
// caught in 21 of 47 comparisons by Holm within the benchmark, 11 by a
// rank sum over its units (O'Brien; outlier-prone units such as
// p99.9-ns dilute the steady ones), 9 by ns/op alone, 12 by
// Benjamini–Hochberg over all rows; none failed two samples of the same
// build more than 2 in 47 times. At 10 runs (and 16, in a longer
// simulation) Benjamini–Hochberg over rows catches about as many, but
// with few runs it cannot decide a lone benchmark. A Westfall–Young maxT permutation test over a
// benchmark's units (which keeps their correlation instead of paying
// Holm's factor) caught exactly as many as Holm (132 of 141 at 10 runs),
// so the simpler rule stayed.
//
// Paired runs (-paired, which make compare passes): OLD's i-th run of a
// benchmark and NEW's i-th were made next to each other (ci/interleave.sh:
// blocks of runs alternating ABBA within the benchmark). Where that
// pairing holds information — the Spearman correlation of the adjacent
// runs of the benchmark's ns/op is at least PairRho (0.5); ρ does not move
// when NEW is shifted or scaled, so a regression cannot change the
// choice — every row of the benchmark is tested with the exact Wilcoxon
// signed-rank test on the pairs' log ratios (smallest p 2^−n); elsewhere
// with the U test above (smallest p 1/C(2n, n)). The report lists, per
// benchmark, the test, ρ, p and its level.
//
// UNDECIDED: a benchmark whose test cannot reach the level it was tested
// at even if its runs did not overlap at all (k·MinP(n1, n2) > level;
// MinP = 1/C(n1+n2, n1), 2^−n paired) is UNDECIDED; so is one that cannot
// see the slowdown -detect asks for (default 25%): its smallest
// "detectable" (below) over its rows exceeds it. A gate that cannot see
// 25% does not print PASS for it. The report says, per undecided
// benchmark, why, and what it can see. Undecided benchmarks exit 3
// (unless -allow-undecided): too few or too noisy runs cannot show that
// nothing regressed.
//
// Power: for every gated row the table's "detectable" column gives the
// worsening above which the gate fails for sure when nothing else
// changed: NEW's runs, moved to OLD's median times 1+w (rates 1−w) with
// their own spread (paired: the pairs' log ratios centred on their median
// and moved by log(1+w)), give a one-sided p ≤ level/k, and w exceeds the
// threshold. The summary names, per unit, the benchmark with the largest
// such value, and how many benchmarks can see -detect. What these lines
// claimed on real same-build make compare runs is stored in testdata and
// held there by internal/gate's realruns_test.go (docs/compare.md).
//
// B/op and allocs/op are not tests: they count memory, not time. A row
// fails when its median grew by more than an absolute threshold (B/op=64
// bytes, since the runtime's own allocations move it by a few dozen bytes;
// allocs/op=0.5, one more allocation per operation); the table shows
// their change in the unit, never "+Inf%".
//
// A row that passes only for lack of significance although its median is
// worse by more than the threshold is listed as "suspect" (it does not
// fail).
//
// Exit status: 0 no regression; 1 regression(s) or benchmarks missing in
// NEW (unless -allow-missing), each named; 2 unreadable or empty input,
// usage error, or nothing gated to compare; 3 undecided rows and no
// regression. `go run` reports every non-zero status as 1 ("exit status
// N" on stderr): scripts that need the distinction build the binary
// (go build -o gate ./ci/gate), as ci/compare.sh does.
//
// This command is the flags, the files and the printing; the decision is
// ci/gate/internal/gate's, reading the files internal/results'.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/rdmabench/rdmabench/ci/gate/internal/gate"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command; it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	alpha := fs.Float64("alpha", 0.05, "significance level: a difference counts only if p ≤ alpha")
	threshold := fs.String("threshold", "5%", "relative worsening of the median that counts as a regression")
	unitThr := fs.String("unit-threshold", "", "per-unit thresholds overriding the defaults, e.g. 'p99.9-ns=15%,max-ns=off' (defaults: "+gate.DefaultUnitText()+")")
	ignore := fs.String("ignore-config", "cpu,rdma-node-guid", "comma-separated file configuration keys not used for pairing")
	allowMissing := fs.Bool("allow-missing", false, "do not fail when a benchmark of OLD is missing in NEW")
	allowUndecided := fs.Bool("allow-undecided", false, "do not fail (exit 3) when there are too few runs to decide")
	paired := fs.Bool("paired", false, "OLD's and NEW's runs of each benchmark were made in adjacent pairs, in file order (make compare): test correlated benchmarks paired")
	detect := fs.String("detect", "25%", "the worsening every benchmark must be able to see: one that cannot is UNDECIDED (exit 3), not a pass; off: no requirement")
	decide := fs.String("decide", "", "deciding units per family overriding the defaults (p50-ns for *Lat, else MB/s, msgs/s, ops/s), e.g. 'SendLat=p99-ns'")
	expectSlow := fs.String("expect-slow", "", "self-check: NEW was made worse on purpose in the benchmarks this regexp matches (Benchmark… names without the -N suffix); exit 0 only if each is named or UNDECIDED and no other benchmark is named, 1 otherwise")
	noCorrection := fs.Bool("no-correction", false, "test every benchmark at -alpha on its own instead of the Holm–Šidák correction over all benchmarks")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gate [flags] OLD NEW\n\nExit: 0 ok, 1 regression/missing, 2 bad input or usage, 3 undecided (too few runs).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return gate.ExitOK
		}
		return gate.ExitInput
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return gate.ExitInput
	}
	opt, err := gate.NewOptions(*alpha, *threshold, *unitThr)
	if err != nil {
		fmt.Fprintf(stderr, "gate: %v\n", err)
		return gate.ExitInput
	}
	opt.NoCorrection = *noCorrection
	if opt.Decide, err = gate.ParseDecide(*decide); err != nil {
		fmt.Fprintf(stderr, "gate: -decide: %v\n", err)
		return gate.ExitInput
	}
	var picked *regexp.Regexp
	if *expectSlow != "" {
		if picked, err = regexp.Compile(*expectSlow); err != nil {
			fmt.Fprintf(stderr, "gate: -expect-slow %q: %v\n", *expectSlow, err)
			return gate.ExitInput
		}
	}
	opt.Paired = *paired
	if opt.Detect, err = gate.ParsePercent(*detect); err != nil {
		fmt.Fprintf(stderr, "gate: -detect: %v\n", err)
		return gate.ExitInput
	}
	ign := make(map[string]bool)
	for k := range strings.SplitSeq(*ignore, ",") {
		if k = strings.TrimSpace(k); k != "" {
			ign[k] = true
		}
	}
	return compareFiles(fs.Arg(0), fs.Arg(1), ign, opt, *allowMissing, *allowUndecided, picked, stdout, stderr)
}

// compareFiles reads both files, prints the report and returns the exit
// status.
func compareFiles(oldPath, newPath string, ignore map[string]bool, opt gate.Options, allowMissing, allowUndecided bool, picked *regexp.Regexp, stdout, stderr io.Writer) int {
	old, err := gate.ReadFile(oldPath, ignore)
	if err != nil {
		fmt.Fprintf(stderr, "gate: OLD: %v\n", err)
		return gate.ExitInput
	}
	cur, err := gate.ReadFile(newPath, ignore)
	if err != nil {
		fmt.Fprintf(stderr, "gate: NEW: %v\n", err)
		return gate.ExitInput
	}
	rep := gate.Compare(old, cur, opt)
	if err := rep.WriteTable(stdout, oldPath, newPath); err != nil {
		fmt.Fprintf(stderr, "gate: write report: %v\n", err)
		return gate.ExitInput
	}
	rep.WriteSummary(stdout)
	code := rep.ExitCode(allowMissing, allowUndecided)
	fmt.Fprintf(stdout, "result: %s (exit %d)\n", rep.Outcome(code), code)
	if picked == nil || code == gate.ExitInput {
		return code
	}
	sc := rep.CheckSelf(picked)
	sc.Write(stdout, rep)
	if !sc.Holds() {
		return gate.ExitRegression
	}
	return gate.ExitOK
}
