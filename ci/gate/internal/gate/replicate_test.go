package gate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// processSets builds make compare's shape: n paired runs of one latency
// benchmark from 3 processes a side (run i from process i mod 3), each
// pair in a state of the guest shared by both its runs (log-normal, 30%),
// each run's p50 log-normal around it with spread sd, and NEW's process
// j off by offset[j].
func processSets(t *testing.T, rng *rand.Rand, n int, sd float64, offset [3]float64) (*Set, *Set) {
	t.Helper()
	var o, c strings.Builder
	for _, b := range []*strings.Builder{&o, &c} {
		b.WriteString("rdma-device: rxe0\nUnit p50-ns better=lower\n")
	}
	for i := range n {
		p := i % 3
		state := 20000 * math.Exp(0.3*rng.NormFloat64())
		ov := state * math.Exp(sd*rng.NormFloat64())
		cv := state * math.Exp(sd*rng.NormFloat64()) * (1 + offset[p])
		fmt.Fprintf(&o, "rdma-process: old%d\nBenchmarkWriteLat/size=8-2 1000 %.0f p50-ns\n", p+1, ov)
		fmt.Fprintf(&c, "rdma-process: new%d\nBenchmarkWriteLat/size=8-2 1000 %.0f p50-ns\n", p+1, cv)
	}
	oset, err := ReadSet(strings.NewReader(o.String()), "old", nil)
	require.NoError(t, err)
	cset, err := ReadSet(strings.NewReader(c.String()), "new", nil)
	require.NoError(t, err)
	return oset, cset
}

// Processes that disagree make a benchmark UNDECIDED only where their
// offsets could carry it past the threshold: a process 20% off is
// UNDECIDED, offsets of ±1.5% that the check sees (runs 0.3% apart) are
// not. With runs 10% apart each test errs at its level, so there the
// properties are rates over 100 draws: no offsets, at most 5 named; a
// real 25% slowdown, at least 95 named or UNDECIDED. Seeded, printed.
func TestProcessOffsets(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 41))
	// alpha 0.001: about the level of one of make compare's 47 benchmarks.
	opt := Options{Alpha: 0.001, Threshold: 0.05, Paired: true, Detect: 0.25, skipPower: true}
	const draws = 100
	for _, tt := range []struct {
		name   string
		sd     float64
		offset [3]float64
		// at least min of the draws are differ (ProcessesDiffer),
		// named (a regression) and undecided, at most max.
		minDiffer, maxDiffer, minNamedOrUndecided, maxNamed int
	}{
		{"one process 20% slower", 0.003, [3]float64{0, 0, 0.20}, draws, draws, draws, 0},
		{"offsets of 1.5%, seen but too small to matter", 0.003, [3]float64{0.015, -0.015, 0}, 0, 0, 0, 0},
		{"no offsets", 0.10, [3]float64{}, 0, 5, 0, 5},
		{"a real 25% slowdown", 0.10, [3]float64{0.25, 0.25, 0.25}, 0, 5, 95, draws},
	} {
		t.Run(tt.name, func(t *testing.T) {
			differ, named, undecided := 0, 0, 0
			// Now and then a draw's pairs correlate too little (ρ < 0.5)
			// and the test is unpaired, over 6 processes: drawn again.
			for done, tries := 0, 0; done < draws; tries++ {
				require.Less(t, tries, 2*draws, "draws that come out paired")
				old, cur := processSets(t, rng, 30, tt.sd, tt.offset)
				rep := Compare(old, cur, opt)
				require.Len(t, rep.Families, 1)
				f := rep.Families[0]
				if !f.Paired {
					continue
				}
				done++
				require.Equal(t, 3, f.ProcessPairs)
				if f.ProcessesDiffer {
					differ++
				}
				if len(rep.Regressions()) > 0 {
					named++
				} else if f.Undecided {
					undecided++
				}
				if tt.sd < 0.01 {
					assert.LessOrEqual(t, f.ProcessP, ProcessLevel, "the check sees offsets this large (spread %.2f%%)", 100*f.ProcessSD)
				}
			}
			t.Logf("%d draws: %d processes differ, %d named, %d UNDECIDED", draws, differ, named, undecided)
			assert.GreaterOrEqual(t, differ, tt.minDiffer)
			assert.LessOrEqual(t, differ, tt.maxDiffer)
			assert.GreaterOrEqual(t, named+undecided, tt.minNamedOrUndecided)
			assert.LessOrEqual(t, named, tt.maxNamed)
		})
	}
}

func TestOffsetsMatter(t *testing.T) {
	for _, tt := range []struct {
		sd, threshold float64
		k             int
		paired, want  bool
	}{
		{0.027, 0.05, 3, true, false}, // the bound is 5%·√3/3.09 ≈ 2.8%
		{0.030, 0.05, 3, true, true},
		{0.030, 0.05, 4, true, false}, // more pairs average more out
		{0.050, 0.10, 3, true, false},
		{0.027, 0.05, 6, false, true}, // unpaired, 3 a side: 2.8%·√(6)/(2·√3) is the bound
		{0.019, 0.05, 6, false, false},
		{math.NaN(), 0.05, 3, true, true},
		{0.001, off, 3, true, true}, // no threshold: any offset matters
		{0.001, 0.05, 1, true, true},
	} {
		assert.Equal(t, tt.want, offsetsMatter(tt.sd, tt.k, tt.paired, tt.threshold), "sd %g, k %d, paired %v, threshold %g", tt.sd, tt.k, tt.paired, tt.threshold)
	}
}
