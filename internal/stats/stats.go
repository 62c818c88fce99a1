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
