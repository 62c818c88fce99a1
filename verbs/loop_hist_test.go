//go:build linux && cgo

package verbs

import (
	"math/rand/v2"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistMatchesHdrhistogramGo records the same values through the C
// loops' bucket arithmetic and through hdrhistogram-go, for the geometry
// rdmatest uses and two others, and compares the counts arrays entry by
// entry: the C counts are imported as they are, so one index off would
// shift every percentile.
func TestHistMatchesHdrhistogramGo(t *testing.T) {
	for _, g := range []struct {
		lowest, highest int64
		sig             int
	}{{1, int64(100 * time.Second), 3}, {1, 3_600_000_000, 2}, {1000, int64(time.Hour), 4}} {
		geo, err := NewHistGeometry(g.lowest, g.highest, g.sig)
		require.NoError(t, err)
		h := hdrhistogram.New(g.lowest, g.highest, g.sig)
		want := h.Export().Counts
		require.Len(t, want, geo.CountsLen(), "counts length for %+v", g)

		r := rand.New(rand.NewPCG(1, uint64(g.sig)))
		vs := []int64{g.lowest, g.lowest + 1, 2047, 2048, 2049, 4095, 4096, 1 << 20, g.highest - 1, g.highest}
		for range 20000 {
			vs = append(vs, g.lowest+r.Int64N(1<<uint(r.IntN(37)+1)))
		}
		var over int64
		for _, v := range vs {
			if v > g.highest {
				over++
				v = g.highest
			}
			require.NoError(t, h.RecordValue(v))
		}
		got := make([]int64, geo.CountsLen())
		assert.Equal(t, over, histAdd(geo, got, vs))
		assert.Equal(t, h.Export().Counts, got, "geometry %+v", g)
		imported := hdrhistogram.Import(&hdrhistogram.Snapshot{LowestTrackableValue: g.lowest,
			HighestTrackableValue: g.highest, SignificantFigures: int64(g.sig), Counts: got})
		assert.Equal(t, h.ValueAtQuantile(99), imported.ValueAtQuantile(99))
		assert.Equal(t, h.Max(), imported.Max())
	}
}

func TestHistGeometryRefusesBadArguments(t *testing.T) {
	for _, g := range [][3]int64{{0, 100, 3}, {1, 1, 3}, {1, 100, 0}, {1, 100, 6}} {
		_, err := NewHistGeometry(g[0], g[1], int(g[2]))
		assert.Error(t, err, "%v", g)
	}
}
