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
// Statistics: every result line is one sample. For each unit present on
// both sides the gate computes the median with a 95% confidence interval
// and the two-sided Mann-Whitney U test (benchmath.AssumeNothing; "assume="
// unit metadata is not used). A unit's direction comes from "Unit <unit>
// better=lower|higher" lines in either file plus benchfmt's built-ins
// (ns/op, B/op, allocs/op lower; MB/s higher). Port counter units
// ("<counter>/run") are printed only in runs where the counter moved: a
// run without one counts as 0. A p-value is significant when it passes
// the Benjamini-Hochberg procedure at -alpha over all gated rows that can
// reach -alpha (-no-correction: p ≤ -alpha for each row alone; one
// comparison tests dozens of rows, and without a correction two runs of
// the same build fail about every other time). A row is a REGRESSION when
// it is significant AND the median is worse by more than the unit's threshold
// (-threshold, default 5%; per unit -unit-threshold, defaults p99.9-ns=15%,
// p99.99-ns=off, max-ns=off because tail quantiles rest on a handful of
// operations). Units without a direction, or with threshold off, are
// shown but not gated.
//
// A row is UNDECIDED when the sample sizes make p ≤ alpha impossible
// (smallest possible p = 2/C(n1+n2, n1); at alpha 0.05 that needs 4 runs
// per side). Undecided rows fail with exit 3 unless -allow-undecided:
// too few runs cannot show that nothing regressed.
//
// A row that passes only because p > alpha although its median is worse
// by more than the threshold is listed as "suspect" (it does not fail).
//
// Exit status: 0 no regression; 1 regression(s) or benchmarks missing in
// NEW (unless -allow-missing), each named; 2 unreadable or empty input,
// usage error, or nothing gated to compare; 3 undecided rows and no
// regression. `go run` reports every non-zero status as 1 ("exit status
// N" on stderr): scripts that need the distinction build the binary
// (go build -o gate ./ci/gate), as ci/compare.sh does.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
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
	unitThr := fs.String("unit-threshold", "", "per-unit thresholds overriding the defaults, e.g. 'p99.9-ns=15%,max-ns=off' (defaults: "+defaultUnitText()+")")
	ignore := fs.String("ignore-config", "cpu,rdma-node-guid", "comma-separated file configuration keys not used for pairing")
	allowMissing := fs.Bool("allow-missing", false, "do not fail when a benchmark of OLD is missing in NEW")
	allowUndecided := fs.Bool("allow-undecided", false, "do not fail (exit 3) when there are too few runs to decide")
	noCorrection := fs.Bool("no-correction", false, "test every row at -alpha on its own instead of the Benjamini-Hochberg correction over all gated rows")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: gate [flags] OLD NEW\n\nExit: 0 ok, 1 regression/missing, 2 bad input or usage, 3 undecided (too few runs).\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitInput
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return ExitInput
	}
	opt, err := options(*alpha, *threshold, *unitThr)
	if err != nil {
		fmt.Fprintf(stderr, "gate: %v\n", err)
		return ExitInput
	}
	opt.NoCorrection = *noCorrection
	ign := make(map[string]bool)
	for k := range strings.SplitSeq(*ignore, ",") {
		if k = strings.TrimSpace(k); k != "" {
			ign[k] = true
		}
	}
	return gate(fs.Arg(0), fs.Arg(1), ign, opt, *allowMissing, *allowUndecided, stdout, stderr)
}

// options validates the flags and builds Options.
func options(alpha float64, threshold, unitThr string) (Options, error) {
	if !(alpha > 0 && alpha < 1) {
		return Options{}, fmt.Errorf("-alpha %g: want 0 < alpha < 1", alpha)
	}
	t, err := ParsePercent(threshold)
	if err != nil {
		return Options{}, fmt.Errorf("-threshold: %w", err)
	}
	user, err := ParseUnitThresholds(unitThr)
	if err != nil {
		return Options{}, fmt.Errorf("-unit-threshold: %w", err)
	}
	ut := maps.Clone(DefaultUnitThresholds)
	maps.Copy(ut, user)
	return Options{Alpha: alpha, Threshold: t, UnitThresholds: ut}, nil
}

func defaultUnitText() string {
	var parts []string
	for _, u := range sortedUnits(DefaultUnitThresholds) {
		if t := DefaultUnitThresholds[u]; t == Off {
			parts = append(parts, u+"=off")
		} else {
			parts = append(parts, u+"="+pct(t))
		}
	}
	return strings.Join(parts, ",")
}

// gate reads both files, prints the report and returns the exit status.
func gate(oldPath, newPath string, ignore map[string]bool, opt Options, allowMissing, allowUndecided bool, stdout, stderr io.Writer) int {
	old, err := ReadFile(oldPath, ignore)
	if err != nil {
		fmt.Fprintf(stderr, "gate: OLD: %v\n", err)
		return ExitInput
	}
	cur, err := ReadFile(newPath, ignore)
	if err != nil {
		fmt.Fprintf(stderr, "gate: NEW: %v\n", err)
		return ExitInput
	}
	rep := Compare(old, cur, opt)
	if err := rep.WriteTable(stdout, oldPath, newPath); err != nil {
		fmt.Fprintf(stderr, "gate: write report: %v\n", err)
		return ExitInput
	}
	rep.WriteSummary(stdout)
	code := rep.ExitCode(allowMissing, allowUndecided)
	fmt.Fprintf(stdout, "result: %s (exit %d)\n", resultText(code, rep), code)
	return code
}

func resultText(code int, rep *Report) string {
	switch code {
	case ExitOK:
		return "PASS: no regression"
	case ExitRegression:
		return fmt.Sprintf("FAIL: %d regressions, %d missing in NEW", len(rep.Regressions()), len(rep.Missing))
	case ExitUndecided:
		return fmt.Sprintf("CANNOT DECIDE: %d rows with too few runs (use more -count or -allow-undecided)", len(rep.Undecided()))
	}
	return "ERROR: nothing gated to compare (no shared benchmark with a unit of known direction and a threshold)"
}
