package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perftestU is perftest -U's output for the given samples (µs): its
// header, one "i, value" line per sample, then its summary table.
func perftestU(v ...float64) string {
	var b strings.Builder
	b.WriteString(" #bytes #iterations    t_min[usec] ...\n#, usec\n")
	for i, x := range v {
		fmt.Fprintf(&b, "%d, %g\n", i+1, x)
	}
	b.WriteString("---------------------------------------------------------------------------------------\n")
	b.WriteString(" 8       5000          11.29          125.32       11.54    \t       12.97\n")
	return b.String()
}

// cpingCycles is a cping -S output whose cycle histogram holds n samples
// of each value (ns).
func cpingCycles(t *testing.T, values map[int64]int64) string {
	t.Helper()
	own := hdrhistogram.New(1, 100e9, 3)
	cyc := hdrhistogram.New(1, 100e9, 3)
	for v, n := range values {
		require.NoError(t, own.RecordValues(v, n))
		require.NoError(t, cyc.RecordValues(v, n))
	}
	var b strings.Builder
	b.WriteString(cpingCounts("cping-counts", own))
	b.WriteString(cpingCounts("cping-cycle-counts", cyc))
	b.WriteString("cping-elapsed-ns 123\n")
	for _, v := range []int64{1, 2048, 123456} {
		fmt.Fprintf(&b, "cping-probe %d %d\n", v, hdrIndex(v))
	}
	return b.String()
}

func TestPhaseSplit(t *testing.T) {
	// 60 samples at 11 µs, 30 at 17, 10 at 21: the p50 is the fast
	// level; 5 more slow ones than fast would move it by 6 µs.
	var v []float64
	for i := 0; i < 100; i++ {
		switch {
		case i < 60:
			v = append(v, 11+float64(i%3)*0.01)
		case i < 90:
			v = append(v, 17)
		default:
			v = append(v, 21)
		}
	}
	d, err := readPerftestSamples(strings.NewReader(perftestU(v...)))
	require.NoError(t, err)
	assert.Equal(t, int64(100), d.total)
	assert.InDelta(t, 11.02, d.quantile(0.5), 1e-9, "rank 50 of 100")
	for _, tt := range []struct {
		lo, hi, share, level float64
	}{
		{0, 14, 0.6, 11.01},
		{14, 19, 0.3, 17},
		{19, math.Inf(1), 0.1, 21},
	} {
		share, level := d.phase(tt.lo, tt.hi)
		assert.InDelta(t, tt.share, share, 1e-9, "%g–%g", tt.lo, tt.hi)
		assert.InDelta(t, tt.level, level, 1e-9, "%g–%g", tt.lo, tt.hi)
	}
	share, level := d.phase(30, 40)
	assert.Zero(t, share)
	assert.True(t, math.IsNaN(level))
}

func TestReadPerftestSamplesRefuses(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{" 8 5000 11.29 125.32 11.54\n", "no samples"},
		{"#, usec\n1, fast\n", `perftest sample line "1, fast"`},
		{"#, usec\n1, -3\n", `perftest sample line "1, -3"`},
	} {
		_, err := readPerftestSamples(strings.NewReader(tt.in))
		assert.ErrorContains(t, err, tt.want, tt.in)
	}
}

func TestParseBounds(t *testing.T) {
	b, err := parseBounds("14, 19")
	require.NoError(t, err)
	assert.Equal(t, []float64{14, 19}, b)
	for _, bad := range []string{"", "19,14", "0", "14,x", "14,14", "-1,3"} {
		_, err := parseBounds(bad)
		assert.ErrorContains(t, err, fmt.Sprintf("-phase-bounds %q", bad), bad)
	}
}

func TestPhases(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	// Round 1: perftest 70% at 11 µs, the control 30% at 11.5 µs;
	// round 2: both all at 21 µs and 21.5 µs.
	var r1 []float64
	for i := 0; i < 100; i++ {
		if i < 70 {
			r1 = append(r1, 11)
		} else {
			r1 = append(r1, 21)
		}
	}
	write("perftest.1.txt", perftestU(r1...))
	write("perftest.2.txt", perftestU(21, 21, 21, 21))
	write("cping.1.txt", cpingCycles(t, map[int64]int64{11500: 30, 21500: 70}))
	write("cping.2.txt", cpingCycles(t, map[int64]int64{21500: 4}))
	pr, err := loadPhases(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{"perftest", "cping"}, pr.tools)
	assert.Equal(t, []int{1, 2}, pr.rounds)

	var out bytes.Buffer
	printPhases(&out, pr, []float64{14})
	t.Logf("\n%s", out.String())
	for _, want := range []string{
		"2 rounds;",
		"perftest      2 runs  0–14 µs: 0.35 ± 0.35, 11.00 µs (1); ≥ 14 µs: 0.65 ± 0.35, 21.00 µs (2); p50 median of runs 16.00 µs",
		"cping         2 runs  0–14 µs: 0.15 ± 0.15, 11.50 µs (1); ≥ 14 µs: 0.85 ± 0.15, 21.50 µs (2)",
		// Levels within 5% of perftest's (the histogram's values are up
		// to 0.1% high: 11.503 / 11); the p50 of round 1 almost twice
		// perftest's (21.5 against 11), because of the shares.
		"cping / perftest, same round: levels 0–14 µs 1.046 (1, 1.05–1.05, CI —), ≥ 14 µs 1.024 (2, 1.02–1.02, CI —); p50 1.489 (2, 1.02–1.95, CI —)",
		// perftest's round 2 against its round 1: no fast phase in
		// round 2, the slow level the same, the p50 21 against 11.
		"perftest / perftest, next round (A/A): levels 0–14 µs — (0), ≥ 14 µs 1.000 (1, 1.00–1.00, CI —); p50 1.909 (1, 1.91–1.91, CI —)",
	} {
		assert.Contains(t, out.String(), want)
	}

	write("cping.x.txt", "")
	_, err = loadPhases(dir)
	assert.ErrorContains(t, err, "cping.x.txt: want a name TOOL.ROUND.txt")
	require.NoError(t, os.Remove(filepath.Join(dir, "cping.x.txt")))
	write("cping.3.txt", "nothing")
	_, err = loadPhases(dir)
	assert.ErrorContains(t, err, "cping.3.txt: cping: no cping-cycle-counts line")
	require.NoError(t, os.Remove(filepath.Join(dir, "cping.3.txt")))

	// A benchmark's cycle histogram (-rdma.hlog DIR/cycles), two
	// intervals merged: the same shares and levels as cping's in round 1.
	var hl bytes.Buffer
	lw := hdrhistogram.NewHistogramLogWriter(&hl)
	require.NoError(t, lw.OutputLogFormatVersion())
	for _, vals := range []map[int64]int64{{11500: 10, 21500: 30}, {11500: 20, 21500: 40}} {
		h := hdrhistogram.New(1, 100e9, 3)
		for v, n := range vals {
			require.NoError(t, h.RecordValues(v, n))
		}
		require.NoError(t, lw.OutputIntervalHistogram(h))
	}
	write("bench.1.hlog", hl.String())
	pr, err = loadPhases(dir)
	require.NoError(t, err)
	out.Reset()
	printPhases(&out, pr, []float64{14})
	assert.Contains(t, out.String(), "bench         1 runs  0–14 µs: 0.30 ± 0.00, 11.50 µs (1); ≥ 14 µs: 0.70 ± 0.00, 21.50 µs (1)")
	write("bench.2.hlog", "#[nothing]\n")
	_, err = loadPhases(dir)
	assert.ErrorContains(t, err, "bench.2.hlog: no samples")
	require.NoError(t, os.Remove(filepath.Join(dir, "bench.2.hlog")))

	empty := t.TempDir()
	write2 := filepath.Join(empty, "cping.1.txt")
	require.NoError(t, os.WriteFile(write2, []byte(cpingCycles(t, map[int64]int64{11000: 1})), 0o644))
	_, err = loadPhases(empty)
	assert.ErrorContains(t, err, "no perftest.ROUND.txt files")
}

// TestPhasesPairedRows draws rounds at random (seeded, printed): each
// round's level moves by up to ±15% as under TCG, cping sits a drawn
// factor above perftest and a second build a drawn factor below cping.
// The row of the second build against cping must hold that factor
// inside its confidence interval, and every interval its median.
func TestPhasesPairedRows(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644))
	}
	over := 1 + rng.Float64()*0.05  // cping ÷ perftest
	under := 1 - rng.Float64()*0.03 // ptloop ÷ cping
	rounds := 12 + rng.IntN(30)
	for r := 1; r <= rounds; r++ {
		level := 11 * (0.85 + 0.3*rng.Float64()) // µs
		var pt []float64
		for range 50 {
			pt = append(pt, level)
		}
		write(fmt.Sprintf("perftest.%d.txt", r), perftestU(pt...))
		ns := int64(math.Round(level * over * 1000))
		write(fmt.Sprintf("cping.%d.txt", r), cpingCycles(t, map[int64]int64{ns: 50}))
		write(fmt.Sprintf("ptloop.%d.txt", r), cpingCycles(t, map[int64]int64{int64(math.Round(float64(ns) * under)): 50}))
		// Sorted before cping: paired with cping all the same.
		write(fmt.Sprintf("alpha.%d.txt", r), cpingCycles(t, map[int64]int64{ns: 50}))
	}
	pr, err := loadPhases(dir)
	require.NoError(t, err)
	var out bytes.Buffer
	printPhases(&out, pr, []float64{30})
	t.Logf("%d rounds, cping ÷ perftest %.4f, ptloop ÷ cping %.4f\n%s", rounds, over, under, out.String())
	row := regexp.MustCompile(`ptloop / cping, same round: levels 0–30 µs ([0-9.]+) \(\d+, [0-9.]+–[0-9.]+, CI ([0-9.]+)–([0-9.]+)\)`)
	m := row.FindStringSubmatch(out.String())
	require.NotNil(t, m, "the paired row of ptloop against cping")
	assert.Contains(t, out.String(), "alpha / cping, same round: levels 0–30 µs 1.000 ")
	assert.NotContains(t, out.String(), "/ alpha, same round")
	med, lo, hi := parseF(t, m[1]), parseF(t, m[2]), parseF(t, m[3])
	// The histogram's bucket (at most 0.1%) and the print's rounding.
	assert.InDelta(t, under, med, 0.0025)
	assert.LessOrEqual(t, lo, med)
	assert.GreaterOrEqual(t, hi, med)
	assert.LessOrEqual(t, lo, under+0.0025)
	assert.GreaterOrEqual(t, hi, under-0.0025)
	for _, ci := range regexp.MustCompile(`([0-9.]+) \(\d+, [0-9.]+–[0-9.]+, CI ([0-9.]+)–([0-9.]+)\)`).FindAllStringSubmatch(out.String(), -1) {
		assert.LessOrEqual(t, parseF(t, ci[2]), parseF(t, ci[1]), ci[0])
		assert.GreaterOrEqual(t, parseF(t, ci[3]), parseF(t, ci[1]), ci[0])
	}
}

func parseF(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return f
}
