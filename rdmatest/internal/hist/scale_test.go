package hist

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Scaling a histogram's counts by f moves every percentile by f, to the
// histogram's precision (3 significant digits, twice: the bucket of the
// value and of its product), and keeps the count.
func TestScaleCounts(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	r := NewRecorder()
	for range 20000 {
		// Two levels, as rxe's latency phases: 11 and 21 µs, with spread.
		v := 11000.0
		if rng.IntN(3) == 0 {
			v = 21000
		}
		r.Record(int64(v * (1 + 0.1*rng.NormFloat64()*0.5)))
	}
	counts := r.h.Export().Counts
	for _, f := range []float64{1.1, 1.25, 2} {
		s := NewRecorder()
		require.NoError(t, s.AddCounts(ScaleCounts(counts, f), r.Count(), 0))
		for _, p := range []float64{1, 50, 90, 99, 99.9, 100} {
			want := float64(r.Quantile(p)) * f
			assert.InEpsilon(t, want, float64(s.Quantile(p)), 0.003, "p%g at ×%g", p, f)
		}
	}
}
