package main

// calibrate -phases DIR: the phases of a ping-pong (issue #27,
// docs/performance.md "Phases"). On rxe under TCG a latency run's
// samples do not scatter around one value: the loop sits at one of a few
// levels (write_lat 8 B: about 11, 17 and 21 µs per half round trip) for
// hundreds to thousands of iterations, then jumps to another, in
// perftest's runs as in ours. A run's p50 is then whichever level holds
// its middle sample, and two tools' p50s differ by what share of their
// run each level got as much as by the levels themselves. -phases
// separates the two: it splits every run's samples at the given bounds
// and prints, per tool, each phase's share of the samples and its level
// (the median of the samples in it), and, against perftest in the same
// round, the ratio of each level and of the p50s; with more than one
// contestant, each against cping (or the first) in the same round too.
// Every ratio's median comes with its 95% confidence interval.
//
// DIR holds one file per run, named TOOL.ROUND.txt (make calibrate-phases
// writes them): TOOL perftest is perftest's client output with -U (every
// sample, "#, usec" then "i, value" lines, as perftest prints them:
// halved for SEND and WRITE); TOOL.ROUND.hlog is a benchmark's cycle
// histogram log (-rdma.hlog); any other TOOL.ROUND.txt is a cping -S
// output, read from its cycle histogram (perftest's sample, halved or
// not alike). Every value is in µs.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/perf/benchmath"
)

// phasePerftest is the tool name of perftest's files in a -phases
// directory.
const phasePerftest = "perftest"

// phasePairBase is the contestant the others are paired with, where it
// ran: the C-only control with our loop.
const phasePairBase = "cping"

// aaRow is printPhases' row of perftest against its next round.
const aaRow = "\x00perftest-next"

// minPhaseShare is the least share of a run's samples a phase needs for
// its level to count in that run.
const minPhaseShare = 0.05

// weighted is one value (µs) with its count.
type weighted struct {
	v float64
	n int64
}

// dist is a run's samples, ascending.
type dist struct {
	s     []weighted
	total int64
}

func newDist(s []weighted) dist {
	slices.SortFunc(s, func(a, b weighted) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	d := dist{s: s}
	for _, w := range s {
		d.total += w.n
	}
	return d
}

// quantile is the value of rank ceil(q·total) (1-based), q in (0, 1].
func (d dist) quantile(q float64) float64 {
	return quantileOf(d.s, int64(math.Ceil(q*float64(d.total))))
}

func quantileOf(s []weighted, rank int64) float64 {
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for _, w := range s {
		if seen += w.n; seen >= rank {
			return w.v
		}
	}
	return math.NaN()
}

// phase returns the share of d's samples in [lo, hi) and their median
// (NaN when none).
func (d dist) phase(lo, hi float64) (share, level float64) {
	var in []weighted
	var n int64
	for _, w := range d.s {
		if w.v >= lo && w.v < hi {
			in = append(in, w)
			n += w.n
		}
	}
	if n == 0 {
		return 0, math.NaN()
	}
	return float64(n) / float64(d.total), quantileOf(in, (n+1)/2)
}

// readPerftestSamples reads perftest -U's every sample (µs).
func readPerftestSamples(r io.Reader) (dist, error) {
	sc := bufio.NewScanner(r)
	var s []weighted
	in := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "#, usec" {
			in = true
			continue
		}
		if !in {
			continue
		}
		i, v, ok := strings.Cut(line, ", ")
		if !ok {
			if len(s) > 0 {
				break
			}
			continue
		}
		if _, err := strconv.Atoi(i); err != nil {
			break
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return dist{}, fmt.Errorf("perftest sample line %q: want \"i, µs\"", line)
		}
		s = append(s, weighted{x, 1})
	}
	if err := sc.Err(); err != nil {
		return dist{}, err
	}
	if len(s) == 0 {
		return dist{}, fmt.Errorf("no samples: want perftest's -U output (\"#, usec\" then one \"i, µs\" line per sample)")
	}
	return newDist(s), nil
}

// readControlDist reads a cping -S output's cycle histogram (µs).
func readControlDist(r io.Reader) (dist, error) {
	h, err := controlHist(r, true)
	if err != nil {
		return dist{}, err
	}
	var s []weighted
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			s = append(s, weighted{float64(b.To) / 1000, b.Count})
		}
	}
	return newDist(s), nil
}

// readHlogDist reads an .hlog file's intervals, merged (µs): the cycle
// histogram a benchmark wrote under -rdma.hlog DIR/cycles.
func readHlogDist(r io.Reader) (dist, error) {
	rd := hdrhistogram.NewHistogramLogReader(r)
	var s []weighted
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			return dist{}, err
		}
		if h == nil {
			break
		}
		for _, b := range h.Distribution() {
			if b.Count > 0 {
				s = append(s, weighted{float64(b.To) / 1000, b.Count})
			}
		}
	}
	if len(s) == 0 {
		return dist{}, errors.New("no samples in the .hlog file")
	}
	return newDist(s), nil
}

// phaseRuns are a -phases directory's runs: per tool, per round.
type phaseRuns struct {
	tools  []string // perftest first, then the others sorted
	rounds []int    // ascending
	runs   map[string]map[int]dist
}

// loadPhases reads every TOOL.ROUND.txt (perftest's -U output, or a
// cping -S output) and TOOL.ROUND.hlog (a benchmark's cycle histogram)
// in dir.
func loadPhases(dir string) (*phaseRuns, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	hlogs, err := filepath.Glob(filepath.Join(dir, "*.hlog"))
	if err != nil {
		return nil, err
	}
	files = append(files, hlogs...)
	pr := &phaseRuns{runs: map[string]map[int]dist{}}
	rounds := map[int]bool{}
	for _, f := range files {
		ext := filepath.Ext(f)
		base := strings.TrimSuffix(filepath.Base(f), ext)
		dot := strings.LastIndexByte(base, '.')
		round, err := strconv.Atoi(base[dot+1:])
		if dot <= 0 || err != nil || round < 0 {
			return nil, fmt.Errorf("%s: want a name TOOL.ROUND%s (ROUND a number ≥ 0)", f, ext)
		}
		tool := base[:dot]
		fh, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		var d dist
		switch {
		case ext == ".hlog":
			d, err = readHlogDist(fh)
		case tool == phasePerftest:
			d, err = readPerftestSamples(fh)
		default:
			d, err = readControlDist(fh)
		}
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if pr.runs[tool] == nil {
			pr.runs[tool] = map[int]dist{}
			pr.tools = append(pr.tools, tool)
		}
		pr.runs[tool][round] = d
		rounds[round] = true
	}
	if pr.runs[phasePerftest] == nil {
		return nil, fmt.Errorf("%s: no %s.ROUND.txt files (perftest -U outputs)", dir, phasePerftest)
	}
	slices.SortFunc(pr.tools, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == phasePerftest:
			return -1
		case b == phasePerftest:
			return 1
		}
		return strings.Compare(a, b)
	})
	for r := range rounds {
		pr.rounds = append(pr.rounds, r)
	}
	slices.Sort(pr.rounds)
	return pr, nil
}

// parseBounds reads -phase-bounds: ascending values in µs, > 0.
func parseBounds(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) || (len(out) > 0 && v <= out[len(out)-1]) {
			return nil, fmt.Errorf("-phase-bounds %q: want ascending values in µs above 0, separated by commas (e.g. 14,19), not %q", s, f)
		}
		out = append(out, v)
	}
	return out, nil
}

// printPhases writes the phase table of pr, split at bounds (µs).
func printPhases(w io.Writer, pr *phaseRuns, bounds []float64) {
	edges := append(append([]float64{0}, bounds...), math.Inf(1))
	name := func(i int) string {
		if i == len(edges)-2 {
			return fmt.Sprintf("≥ %g µs", edges[i])
		}
		return fmt.Sprintf("%g–%g µs", edges[i], edges[i+1])
	}
	fmt.Fprintf(w, "%d rounds; per phase: share of the samples (mean over runs ± its standard error), level = median of the runs' medians in it (runs with ≥ %.0f%% there)\n",
		len(pr.rounds), minPhaseShare*100)
	for _, tool := range pr.tools {
		runs := pr.runs[tool]
		var cells []string
		var p50s []float64
		for i := 0; i < len(edges)-1; i++ {
			var shares, levels []float64
			for _, r := range pr.rounds {
				d, ok := runs[r]
				if !ok {
					continue
				}
				sh, lv := d.phase(edges[i], edges[i+1])
				shares = append(shares, sh)
				if sh >= minPhaseShare {
					levels = append(levels, lv)
				}
			}
			m, se := meanSE(shares)
			lv := "—"
			if len(levels) > 0 {
				lv = fmt.Sprintf("%.2f µs (%d)", median(levels), len(levels))
			}
			cells = append(cells, fmt.Sprintf("%s: %.2f ± %.2f, %s", name(i), m, se, lv))
		}
		for _, r := range pr.rounds {
			if d, ok := runs[r]; ok {
				p50s = append(p50s, d.quantile(0.5))
			}
		}
		fmt.Fprintf(w, "  %-12s %2d runs  %s; p50 median of runs %.2f µs\n", tool, len(p50s), strings.Join(cells, "; "), median(p50s))
	}
	base := pr.runs[phasePerftest]
	// perftest against itself: each round against the next one, the same
	// statistics (its A/A: how far the ratios scatter with no difference
	// between the tools).
	next := map[int]dist{}
	for i, r := range pr.rounds[:max(len(pr.rounds)-1, 0)] {
		if d, ok := base[pr.rounds[i+1]]; ok {
			next[r] = d
		}
	}
	rows := append([]string{aaRow}, pr.tools[1:]...)
	for _, tool := range rows {
		if tool == aaRow {
			printRatioRow(w, "perftest / perftest, next round (A/A)", base, next, pr.rounds, edges, name)
			continue
		}
		printRatioRow(w, tool+" / perftest, same round", base, pr.runs[tool], pr.rounds, edges, name)
	}
	// Contestants against one of them, round by round (issue #43: a
	// build that changes one thing against the one it changes, without
	// perftest's own scatter between them): against cping, the C-only
	// control with our loop, where it ran, else the first of them.
	if len(pr.tools) > 2 {
		base := pr.tools[1]
		if slices.Contains(pr.tools, phasePairBase) {
			base = phasePairBase
		}
		for _, tool := range pr.tools[1:] {
			if tool != base {
				printRatioRow(w, tool+" / "+base+", same round", pr.runs[base], pr.runs[tool], pr.rounds, edges, name)
			}
		}
	}
}

// printRatioRow writes one row of ratios: runs ÷ base in the same round,
// per phase (rounds where both had the phase) and for the p50.
func printRatioRow(w io.Writer, label string, base, runs map[int]dist, rounds []int, edges []float64, name func(int) string) {
	levels := make([][]float64, len(edges)-1) // per phase, one ratio per round where both had it
	var p50 []float64
	for _, r := range rounds {
		a, okA := base[r]
		b, okB := runs[r]
		if !okA || !okB {
			continue
		}
		p50 = append(p50, b.quantile(0.5)/a.quantile(0.5))
		for i := range levels {
			sa, la := a.phase(edges[i], edges[i+1])
			sb, lb := b.phase(edges[i], edges[i+1])
			if sa >= minPhaseShare && sb >= minPhaseShare {
				levels[i] = append(levels[i], lb/la)
			}
		}
	}
	var cells []string
	for i, ratios := range levels {
		cells = append(cells, fmt.Sprintf("%s %s", name(i), ratioSpread(ratios)))
	}
	fmt.Fprintf(w, "  %s: levels %s; p50 %s\n", label, strings.Join(cells, ", "), ratioSpread(p50))
}

// ratioSpread is "median (n, min–max, CI lo–hi)" of v, the CI the
// median's distribution-free 95% confidence interval (benchmath's
// AssumeNothing: order statistics; "CI —" below 6 values), or "— (0)".
func ratioSpread(v []float64) string {
	sp := spreadOf(v)
	if !sp.ok {
		return "— (0)"
	}
	ci := "CI —"
	sum := benchmath.AssumeNothing.Summary(benchmath.NewSample(v, &benchmath.DefaultThresholds), 0.95)
	if !math.IsInf(sum.Lo, 0) && !math.IsInf(sum.Hi, 0) {
		ci = fmt.Sprintf("CI %.3f–%.3f", sum.Lo, sum.Hi)
	}
	return fmt.Sprintf("%.3f (%d, %s, %s)", sp.median, len(v), sp.band(), ci)
}

// meanSE is v's mean and the standard error of that mean (0 for fewer
// than 2 values).
func meanSE(v []float64) (mean, se float64) {
	if len(v) == 0 {
		return math.NaN(), 0
	}
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(v)-1)) / math.Sqrt(float64(len(v)))
}
