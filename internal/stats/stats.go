// Package stats holds the few order statistics that rdmabench's tools
// share (the regression gate, calibrate, the fabric's blame), so that
// each is defined once.
package stats

import (
	"math"
	"slices"
)

// Median is the median of v: its middle value, the mean of the middle
// two for an even count, NaN for none. v is not changed.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return MedianSorted(s)
}

// MedianSorted is the median of the sorted, non-empty s.
func MedianSorted(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// QuantileSorted is the q-quantile (0 ≤ q ≤ 1) of the sorted s,
// interpolated linearly between its order statistics (Hyndman and Fan's
// type 7, R's default); NaN for an empty s.
func QuantileSorted(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	x := q * float64(len(s)-1)
	i := int(x)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (x-float64(i))*(s[i+1]-s[i])
}
