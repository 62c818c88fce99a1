package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"golang.org/x/perf/benchmath"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSignificanceBenjaminiHochberg(t *testing.T) {
	row := func(p float64) Row {
		return Row{Better: -1, Threshold: 0.05, Cmp: cmpWith(p, 6, 6)}
	}
	rows := []Row{row(0.001), row(0.008), row(0.039), row(0.041), row(0.6)}
	tested, cut := significance(rows, Options{Alpha: 0.05})
	assert.Equal(t, 5, tested)
	// k/m·alpha: 0.01, 0.02, 0.03, 0.04, 0.05; the largest k with
	// p_(k) ≤ k/m·alpha is k=2 (0.008 ≤ 0.02; 0.039 > 0.03, 0.041 > 0.04).
	assert.Equal(t, 0.008, cut)
	_, cut = significance(rows, Options{Alpha: 0.05, NoCorrection: true})
	assert.Equal(t, 0.05, cut)
	_, cut = significance([]Row{row(0.3), row(0.2)}, Options{Alpha: 0.05})
	assert.Zero(t, cut, "nothing significant")

	undecidable := Row{Better: -1, Threshold: 0.05, Cmp: cmpWith(0.1, 3, 3)}
	unknown := Row{Better: 0, Cmp: cmpWith(0.001, 6, 6)}
	tested, _ = significance([]Row{row(0.001), undecidable, unknown}, Options{Alpha: 0.05})
	assert.Equal(t, 1, tested, "only gated rows that can reach alpha are counted")
}

// simulate writes a results file: benches benchmarks × units units, runs
// lines each, values 1000 × (1 + noise·N(0,1)), bench 0 scaled by slow.
func simulate(rng *rand.Rand, benches, units, runs int, noise, slow float64) string {
	var b strings.Builder
	for u := range units {
		fmt.Fprintf(&b, "Unit u%d-ns better=lower\n", u)
	}
	for range runs {
		for i := range benches {
			fmt.Fprintf(&b, "BenchmarkSim/case=%d-2 100", i)
			for u := range units {
				v := 1000 * (1 + noise*rng.NormFloat64())
				if i == 0 {
					v *= slow
				}
				fmt.Fprintf(&b, " %.1f u%d-ns", v, u)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Two runs of the same build: with 8 benchmarks × 7 units at 6 runs
// each, testing every row at 0.05 fails most comparisons; the corrected
// gate fails about alpha of them. A real 20% slowdown of one benchmark is
// still found.
func TestCorrectionFalseAlarmsAndPower(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 200
	fails := map[bool]int{}
	found := 0
	for range trials {
		old, err := ReadSet(strings.NewReader(simulate(rng, 8, 7, 6, 0.2, 1)), "old", nil)
		require.NoError(t, err)
		same, err := ReadSet(strings.NewReader(simulate(rng, 8, 7, 6, 0.2, 1)), "new", nil)
		require.NoError(t, err)
		for _, nc := range []bool{false, true} {
			if Compare(old, same, Options{Alpha: 0.05, Threshold: 0.05, NoCorrection: nc}).ExitCode(false, false) == ExitRegression {
				fails[nc]++
			}
		}
		base, err := ReadSet(strings.NewReader(simulate(rng, 8, 7, 6, 0.05, 1)), "base", nil)
		require.NoError(t, err)
		slow, err := ReadSet(strings.NewReader(simulate(rng, 8, 7, 6, 0.05, 1.2)), "slow", nil)
		require.NoError(t, err)
		if rep := Compare(base, slow, Options{Alpha: 0.05, Threshold: 0.05}); rep.ExitCode(false, false) == ExitRegression &&
			strings.HasPrefix(rep.Regressions()[0].Key.Name, "Sim/case=0") {
			found++
		}
	}
	t.Logf("same build: %d/%d fail with correction, %d/%d without; 20%% slowdown found %d/%d", fails[false], trials, fails[true], trials, found, trials)
	assert.LessOrEqual(t, fails[false], trials/10, "corrected: about alpha of identical comparisons fail")
	assert.GreaterOrEqual(t, fails[true], trials/2, "uncorrected: most identical comparisons fail (the reason for the correction)")
	assert.GreaterOrEqual(t, found, trials*9/10, "a 20% slowdown of one benchmark is still caught")
}

// cmpWith is a comparison with p-value p over n1+n2 runs.
func cmpWith(p float64, n1, n2 int) (c benchmath.Comparison) {
	c.P, c.N1, c.N2 = p, n1, n2
	return c
}
