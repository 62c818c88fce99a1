package gate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSignedRank(t *testing.T) {
	for _, tt := range []struct {
		name          string
		d             []float64
		worse, better float64
	}{
		// Ranks 1, 2, 3: the 8 sign patterns' positive sums are
		// 0 1 2 3 3 4 5 6.
		{"all worse", []float64{0.1, 0.2, 0.3}, 1.0 / 8, 1},
		{"one better, the smallest", []float64{-0.1, 0.2, 0.3}, 2.0 / 8, 7.0 / 8},
		{"all better", []float64{-0.1, -0.2, -0.3}, 1, 1.0 / 8},
		{"ten worse", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 1.0 / 1024, 1},
		// Tied |d|: both get rank 1.5; 4 patterns, sums 0 1.5 1.5 3.
		{"ties", []float64{0.1, 0.1}, 1.0 / 4, 1},
		{"a zero is dropped", []float64{0, 0.5}, 1.0 / 2, 1},
		{"nothing left", []float64{0, 0}, 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, b := signedRank(tt.d)
			assert.InDelta(t, tt.worse, w, 1e-12, "pWorse")
			assert.InDelta(t, tt.better, b, 1e-12, "pBetter")
		})
	}
	assert.Equal(t, math.Ldexp(1, -16), MinPPaired(16))
}

func TestSpearman(t *testing.T) {
	assert.InDelta(t, 1, spearman([]float64{1, 5, 2, 9}, []float64{10, 50, 20, 90}), 1e-12)
	assert.InDelta(t, -1, spearman([]float64{1, 5, 2, 9}, []float64{9, 2, 5, 1}), 1e-12)
	assert.Equal(t, 0.0, spearman([]float64{1, 1, 1}, []float64{1, 2, 3}), "constant: no correlation")
	x := []float64{3, 1, 4, 1, 5, 9, 2, 6}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = 7 * v * v // monotone: ρ is unchanged by scale or shift
	}
	assert.InDelta(t, 1, spearman(x, y), 1e-12)
}

// pairedSets builds OLD and NEW with n runs of one latency benchmark
// whose speed swings from pair to pair by up to 2× (the guest's states),
// NEW's run of each pair f times OLD's, give or take jitter.
func pairedSets(t *testing.T, n int, f float64) (*Set, *Set) {
	return statedSets(t, n, f, func(i int) float64 { return 1 + float64((i*7)%n)/float64(n) })
}

// statedSets is pairedSets with the state of pair i (a speed factor)
// given.
func statedSets(t *testing.T, n int, f float64, state func(i int) float64) (*Set, *Set) {
	t.Helper()
	var o, c strings.Builder
	for _, b := range []*strings.Builder{&o, &c} {
		b.WriteString("rdma-device: rxe0\nUnit p50-ns better=lower\n")
	}
	for i := range n {
		state := 1 + float64((i*7)%n)/float64(n) // 1 … 2, shuffled
		jit := 1 + 0.004*float64((i*5)%3-1)      // ±0.4%
		ov, cv := 20000*state, 20000*state*f*jit
		fmt.Fprintf(&o, "BenchmarkWriteLat/size=8-2 1000 %.0f ns/op %.0f p50-ns\n", ov*1.5, ov)
		fmt.Fprintf(&c, "BenchmarkWriteLat/size=8-2 1000 %.0f ns/op %.0f p50-ns\n", cv*1.5, cv)
	}
	oset, err := ReadSet(strings.NewReader(o.String()), "old", nil)
	require.NoError(t, err)
	cset, err := ReadSet(strings.NewReader(c.String()), "new", nil)
	require.NoError(t, err)
	return oset, cset
}

// The pairing sees a 10% slowdown inside a 2× spread of states that the
// unpaired test cannot; without -paired the same runs pass.
func TestPairedCatchesWhatUnpairedCannot(t *testing.T) {
	old, cur := pairedSets(t, 16, 1.10)
	opt := Options{Alpha: 0.05, Threshold: 0.05, Paired: true, Detect: 0.25}
	rep := Compare(old, cur, opt)
	require.Len(t, rep.Families, 1)
	f := rep.Families[0]
	assert.True(t, f.Paired, "ρ=%.2f", f.Rho)
	assert.Greater(t, f.Rho, PairRho)
	assert.NotEmpty(t, rep.Regressions())
	assert.Equal(t, ExitRegression, rep.ExitCode(false, false))

	opt.Paired = false
	rep = Compare(old, cur, opt)
	assert.False(t, rep.Families[0].Paired)
	assert.Empty(t, rep.Regressions(), "unpaired: the states' spread hides 10%")
}

// A benchmark too noisy to see -detect is UNDECIDED (exit 3) and says what
// it can see; -detect off lets the same runs pass.
func TestDetectUndecided(t *testing.T) {
	// Unpaired: 5 of 16 pairs in a state 3× slower, NEW not slower.
	// (alpha 0.001: about the level of one of make compare's 47.)
	old, cur := statedSets(t, 16, 1.0, func(i int) float64 { return 1 + 2*float64(min(1, (i*7)%16/11)) })
	opt := Options{Alpha: 0.001, Threshold: 0.05, Detect: 0.25}
	rep := Compare(old, cur, opt)
	f := rep.Families[0]
	require.False(t, f.Paired)
	assert.True(t, f.Blind, "sees %.1f%%", 100*f.Detectable)
	assert.Greater(t, f.Detectable, 0.25)
	assert.Equal(t, ExitUndecided, rep.ExitCode(false, false))
	var out strings.Builder
	rep.WriteSummary(&out)
	assert.Contains(t, out.String(), "more than -detect 25.0%")
	assert.Contains(t, out.String(), "decidable: 0 of 1 benchmarks")

	opt.Detect = off
	rep = Compare(old, cur, opt)
	assert.Equal(t, ExitOK, rep.ExitCode(false, false))

	// Paired, the same runs see far below 25%: decidable, and a pass.
	opt.Detect, opt.Paired = 0.25, true
	rep = Compare(old, cur, opt)
	assert.False(t, rep.Families[0].Blind, "sees %.1f%%", 100*rep.Families[0].Detectable)
	assert.Equal(t, ExitOK, rep.ExitCode(false, false))
}
