package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/changepoint"
	"github.com/rdmabench/rdmabench/internal/history"
)

var powerDraws = flag.Int("power.draws", 25, "TestPower: steps drawn per series and step size")

// realRuns are the stored real series: each file is one boot of the
// qemu guest running the same benchmarks again and again, each run its
// own process (docs/notes/history-2026-12-06-power.md says how they were
// made), split at its "history-run: N" lines.
func realRuns(t testing.TB) map[string][]history.Series {
	files, err := filepath.Glob("testdata/rxe-runs-*.txt")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := map[string][]history.Series{}
	for _, f := range files {
		out[filepath.Base(f)] = loadRuns(t, f)
	}
	return out
}

// loadRuns stores every run of file in a new local store, as make bench
// would have run after run, and loads the series back.
func loadRuns(t testing.TB, file string) []history.Series {
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	l, err := history.OpenLocal(filepath.Join(t.TempDir(), "history.db"))
	require.NoError(t, err)
	defer l.Close()
	ctx := context.Background()
	for i, run := range splitRuns(b) {
		started := time.Time{}
		for _, line := range strings.Split(string(run), "\n") {
			if v, ok := strings.CutPrefix(line, "history-started: "); ok {
				started, err = time.Parse(time.RFC3339, v)
				require.NoError(t, err)
			}
		}
		_, err := history.Put(ctx, l, fmt.Sprintf("%s#%d", file, i+1), run, history.Labels{Host: "guest", RunTime: started})
		require.NoError(t, err, "run %d of %s", i+1, file)
	}
	s, err := history.Load(ctx, l, "", history.Options{})
	require.NoError(t, err)
	return s
}

// splitRuns cuts a collection file at its "history-run:" lines.
func splitRuns(b []byte) [][]byte {
	var runs [][]byte
	for _, part := range bytes.Split(b, []byte("history-run: ")) {
		if bytes.Contains(part, []byte("\nBenchmark")) {
			runs = append(runs, append([]byte("history-run: "), part...))
		}
	}
	return runs
}

// worsen makes the runs from at on worse by f: a latency or time ×(1+f),
// a rate ÷(1+f) (the same run made f slower).
func worsen(x []float64, at int, f float64, higher bool) []float64 {
	y := append([]float64(nil), x...)
	for i := at; i < len(y); i++ {
		if higher {
			y[i] /= 1 + f
		} else {
			y[i] *= 1 + f
		}
	}
	return y
}

// power is the measured detection on one file's series.
type power struct {
	series, noisy, runs, falseAlarms int
	// worst is the series with the most false alarms, and its count
	worst        string
	worstFA      int
	minRuns      int
	drawn, found map[float64]int
	// judgeable: the draws whose series, judged on the runs before the
	// step, was neither too noisy nor too often slow (changepoint's
	// TooNoisy, TooSlow) and had a full baseline (its last change point
	// at least MinBaseline runs before the step), and those of them found
	judgeable, foundJudgeable map[float64]int
}

// measurePower: on every series, the false alarms of the unmodified
// series, then for each step size draws steps at random runs, each
// with at least 13 runs before it (the fewest a 3-run confirmation
// needs for the Mann-Whitney level) and 5 after; a step is found when
// Detect, given the runs up to the 5th from the step on (the step's own
// run counted), puts a worse change within 2 runs of it.
func measurePower(series []history.Series, steps []float64, draws int, r *rand.Rand) power {
	c := changepoint.Default
	p := power{drawn: map[float64]int{}, found: map[float64]int{}, judgeable: map[float64]int{}, foundJudgeable: map[float64]int{}}
	const before, within = 13, 5
	for _, s := range series {
		x := s.Bests()
		if len(x) < before+within {
			continue
		}
		p.series++
		res := changepoint.Detect(x, s.HigherBetter, c)
		if res.TooNoisy {
			p.noisy++
		}
		p.runs += len(x)
		p.falseAlarms += len(res.Changes)
		if len(res.Changes) > p.worstFA {
			p.worst, p.worstFA = s.Name, len(res.Changes)
		}
		if p.minRuns == 0 || len(x) < p.minRuns {
			p.minRuns = len(x)
		}
		for _, f := range steps {
			for range draws {
				at := before + r.IntN(len(x)-before-within+1)
				y := worsen(x, at, f, s.HigherBetter)[:at+within]
				prior := changepoint.Detect(x[:at], s.HigherBetter, c)
				judgeable := !prior.TooNoisy && !prior.TooSlow
				if k := len(prior.Changes); k > 0 && prior.Changes[k-1].At > at-c.MinBaseline {
					judgeable = false // its baseline restarted too recently
				}
				p.drawn[f]++
				if judgeable {
					p.judgeable[f]++
				}
				for _, ch := range changepoint.Detect(y, s.HigherBetter, c).Changes {
					if ch.Worse && ch.At >= at-2 && ch.At <= at+2 {
						p.found[f]++
						if judgeable {
							p.foundJudgeable[f]++
						}
						break
					}
				}
			}
		}
	}
	return p
}

// TestPower measures the change-point detection on the stored real
// series: steps of 10%, 25% and 50% at random runs, and the false alarms
// of the unmodified series. Issue #45's bar is a 25% step found within 5
// runs at least 90% of the time with at most 1 false alarm per 100 runs
// per series; docs/history.md states the figures this prints. The bar is
// met on one held-out boot of three (boot 5: 91–92%; boots 3 and 4:
// about 68% and 79%: docs/history.md), so what is asserted is the
// false-alarm bar and, as a guard against the method getting worse,
// floors a margin below the figures measured on 2026-12-06/07 (100 draws
// a series, two seeds): 25% steps 88% (boot 2), 66–68% (boot 3), 79%
// (boot 4), 91–93% (boot 5).
func TestPower(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (-power.draws %d)", seed, *powerDraws)
	r := rand.New(rand.NewPCG(seed, 45))
	steps := []float64{0.10, 0.25, 0.50}
	floor := map[string]float64{"rxe-runs-2026-12-06-boot2-count5.txt": 0.80, "rxe-runs-2026-12-06-boot3-count5.txt": 0.58,
		"rxe-runs-2026-12-06-boot4-count5.txt": 0.70, "rxe-runs-2026-12-07-boot5-count5.txt": 0.85}
	for file, series := range realRuns(t) {
		p := measurePower(series, steps, *powerDraws, r)
		require.Positive(t, p.series, file)
		t.Logf("%s: %d series of %d+ runs, %d runs in all, %d too noisy to judge; false alarms %d (%.2f per 100 runs; most in one series: %d, %s)",
			file, p.series, p.minRuns, p.runs, p.noisy, p.falseAlarms, 100*float64(p.falseAlarms)/float64(p.runs), p.worstFA, p.worst)
		for _, f := range steps {
			t.Logf("%s: %.0f%% steps found within 5 runs: %d of %d (%.1f%%); where the series was judgeable before the step: %d of %d (%.1f%%; %.1f%% of the draws)", file, 100*f, p.found[f], p.drawn[f], 100*float64(p.found[f])/float64(p.drawn[f]),
				p.foundJudgeable[f], p.judgeable[f], 100*float64(p.foundJudgeable[f])/float64(p.judgeable[f]), 100*float64(p.judgeable[f])/float64(p.drawn[f]))
		}
		if p.minRuns < 60 {
			t.Logf("%s: fewer than 60 runs a series: figures stated, nothing asserted", file)
			continue
		}
		assert.LessOrEqual(t, float64(p.falseAlarms), float64(p.runs)/100, "%s: at most 1 false alarm per 100 runs", file)
		if f, ok := floor[file]; ok {
			assert.GreaterOrEqual(t, float64(p.found[0.25]), f*float64(p.drawn[0.25]), "%s: 25%% steps found, floor %.0f%%", file, 100*f)
		}
		if p.found[0.25] < 9*p.drawn[0.25]/10 {
			t.Logf("%s: issue #45's bar (25%% steps found 90%% of the time) NOT met", file)
		}
	}
}
