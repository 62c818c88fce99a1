package stats

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd, unsorted", []float64{5, 1, 3}, 3},
		{"even: mean of the middle two", []float64{4, 1, 3, 2}, 2.5},
		{"repeats", []float64{2, 2, 9, 2}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.v...)
			assert.Equal(t, tt.want, Median(tt.v))
			assert.Equal(t, in, tt.v, "v is not changed")
		})
	}
	assert.True(t, math.IsNaN(Median(nil)), "none: NaN")
}

func TestQuantileSorted(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5}
	for q, want := range map[float64]float64{0: 1, 0.25: 2, 0.5: 3, 0.75: 4, 1: 5, 0.875: 4.5} {
		assert.InDelta(t, want, QuantileSorted(s, q), 1e-12, "q=%g", q)
	}
	assert.Equal(t, 7.0, QuantileSorted([]float64{7}, 0.75))
	assert.True(t, math.IsNaN(QuantileSorted(nil, 0.5)))
}
