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
// configuration) and the replication labels rdma-process and rdma-boot
// (see Replication). A benchmark whose configuration differs is reported as
// missing with the differing keys; list them in -ignore-config to compare
// across, e.g., firmware versions on purpose.
//
// Statistics: every result line is one run. For each unit
// present on both sides the gate prints the median with a 95% confidence
// interval and the two-sided Mann-Whitney U test of the row alone
// (benchmath.AssumeNothing; "assume=" unit metadata is not used). A unit's
// direction comes from "Unit <unit> better=lower|higher" lines in either
// file plus benchfmt's built-ins (ns/op, B/op, allocs/op lower; MB/s
// higher). Port counter units ("<counter>/run") are printed only in runs
// where the counter moved: a run without one counts as 0.
//
// Decision: one test per benchmark, of its deciding unit. Latency
// benchmarks (the name's first element ends in "Lat") are decided by
// p50-ns, the median latency of their operations; everything else by its
// headline rate: MB/s, else msgs/s (own patterns), ops/s, ns/op.
// -decide overrides it per family ("SendLat=p99-ns"). One run's ns/op,
// msgs/s, MB/s and cpu-ns/op are largely one measurement: testing them
// as separate tests spent the correction's power on copies, and deciding
// by whichever unit was tightest let a slowdown that showed in another
// unit pass (issue #41). The other gated units are still tested, each on
// its own at the level a lone benchmark needs, and one that is
// significantly worse by more than its threshold is printed loudly as
// WORSE, with its interval; it does not change the exit status.
//
// The deciding unit gets the one-sided test that NEW is worse: the exact
// Wilcoxon signed-rank test on the pairs' log ratios where the runs are
// paired and correlated (below), else the Mann-Whitney U test. The
// benchmarks' p-values are corrected across with the Holm–Šidák
// step-down procedure at -alpha (the smallest at 1−(1−alpha)^(1/m), m
// benchmarks). A benchmark is a REGRESSION when it is significant AND
// its deciding unit's median is worse by more than the unit's threshold
// (-threshold, default 5%; per unit -unit-threshold, defaults
// p99.9-ns=15%, p99.99-ns=off, max-ns=off). Worse is a slowdown in every
// unit: new/old − 1 of a time, old/new − 1 of a rate, so that 25% slower
// means the same for p50-ns and MB/s (a rate 20% lower). The chance that
// two runs of the same build fail is at most alpha when the samples are
// independent (see replication); -no-correction tests every benchmark at
// alpha alone.
//
// Replication (-replicate): what one sample of a test is. make compare's
// runs (-paired; auto picks runs) are made a second apart in one boot,
// both builds' processes taking turns, so a run is a sample; but a
// process keeps offsets for its life (buffer placement, QP numbers, which
// vCPU got which thread), and with one process a side such an offset is
// indistinguishable from a change of the build. make compare therefore
// runs each benchmark from several processes a side (COMPARE_PROCS,
// ci/interleave.sh PROCS; each run's process is its rdma-process line),
// and the gate checks, per benchmark, that the process pairs agree: the
// pairs' log ratios grouped by the processes that made them, Kruskal–
// Wallis with a permutation p-value. Where they disagree (p ≤ 0.001) by
// offsets that could carry the benchmark past its threshold (spread above
// threshold·√k/3.09 over k process pairs; half that unpaired, over both
// sides' processes), the runs are not independent samples and the
// benchmark is UNDECIDED; smaller offsets are reported, not acted on. The
// report prints the spread of the process pairs' offsets beyond their
// runs', per benchmark and over all. Stored files (no -paired; auto
// picks boots) were made minutes or reboots apart: each side's runs are
// collapsed to one median per boot (the rdma-boot line every run
// carries), and the boots are the samples. A side with runs of one boot
// (or files without rdma-boot lines) cannot decide: exit 3, naming what
// is missing. -replicate processes collapses per process likewise.
//
// Paired runs (-paired, which make compare passes): OLD's i-th run of a
// benchmark and NEW's i-th were made next to each other. Where that
// pairing holds information — the Spearman correlation of the deciding
// unit's adjacent runs is at least PairRho (0.5); ρ does not move when
// NEW is shifted or scaled, so a regression cannot change the choice —
// the benchmark is tested on the pairs (smallest p 2^−n), elsewhere
// unpaired (smallest p 1/C(2n, n)).
//
// UNDECIDED: a benchmark whose test cannot reach its level even if its
// samples did not overlap at all (MinP > level), one whose deciding unit
// cannot see the slowdown -detect asks for (default 25%: its
// "detectable", below, exceeds it), and one whose processes disagree. A
// gate that cannot see 25% does not print PASS for it: exit 3 (unless
// -allow-undecided).
//
// Power: every gated row's "detectable" is the slowdown above which the
// gate fails for sure when nothing else changed: NEW's samples moved to
// OLD's median times 1+w (rates divided by it) with their own spread
// (paired: the pairs' log ratios centred on their median and moved by
// log(1+w)) give a one-sided p ≤ the level of a lone benchmark, and w
// exceeds the threshold. The summary prints each benchmark's detectable
// in its deciding unit, and the median and largest over the benchmarks.
//
// Self-check (-expect-slow REGEX; make compare SLOW=...): NEW was made
// worse on purpose in the benchmarks REGEX matches. The gate then exits
// 0 only if every pick is named or UNDECIDED and no other benchmark is
// named, and prints each pick with its deciding unit's change.
//
// B/op and allocs/op are not tests: they count memory, not time. A row
// fails when its median grew by more than an absolute threshold (B/op=64
// bytes, since the runtime's own allocations move it by a few dozen bytes;
// allocs/op=0.5, one more allocation per operation); the table shows
// their change in the unit, never "+Inf%".
//
// A deciding row that passes only for lack of significance although its
// median is worse by more than the threshold is listed as "not
// significant".
//
// Exit status: 0 no regression; 1 regression(s) or benchmarks missing in
// NEW (unless -allow-missing), each named; 2 unreadable or empty input,
// usage error, or nothing gated to compare; 3 undecided benchmarks and
// no regression. `go run` reports every non-zero status as 1 ("exit
// status N" on stderr): scripts that need the distinction build the
// binary (go build -o gate ./ci/gate), as ci/compare.sh does.
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
	"github.com/rdmabench/rdmabench/internal/results"
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
	replicate := fs.String("replicate", "auto", "the unit of replication: runs, processes (rdma-process lines), boots (rdma-boot lines), or auto: runs with -paired, boots without (stored files)")
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
	if opt.Decide, err = results.ParseDecide(*decide); err != nil {
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
	switch *replicate {
	case "auto":
		opt.Replicate = gate.ByBoot
		if opt.Paired {
			opt.Replicate = gate.ByRun
		}
	case gate.ByRun, gate.ByProcess, gate.ByBoot:
		opt.Replicate = *replicate
	default:
		fmt.Fprintf(stderr, "gate: -replicate %q: want auto, runs, processes or boots\n", *replicate)
		return gate.ExitInput
	}
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
