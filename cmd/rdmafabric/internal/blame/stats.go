package blame

import (
	"math"
	"slices"
	"sort"
)

// madScale turns a median absolute deviation into an estimate of the
// standard deviation of normal noise.
const madScale = 1.4826

// minOthers is how many other values an outlier test needs.
const minOthers = 2

// median is the median of v (the mean of the middle two for an even
// count), NaN for none; v is not changed.
func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return medianSorted(s)
}

// medianSorted is the median of the sorted s.
func medianSorted(s []float64) float64 {
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return s[n/2-1]/2 + s[n/2]/2
}

// medianWithout is the median of the sorted s without its element i.
func medianWithout(s []float64, i int) float64 {
	at := func(j int) float64 {
		if j >= i {
			return s[j+1]
		}
		return s[j]
	}
	n := len(s) - 1
	if n%2 == 1 {
		return at(n / 2)
	}
	return at(n/2-1)/2 + at(n/2)/2
}

// outlierTest holds, for each of a set of values, the typical value of
// the others and the threshold below which it is an outlier.
type outlierTest struct {
	typical   []float64 // median of the other values
	threshold []float64 // −Inf when there are too few others
}

// leaveOneOut judges each v[i] against the other values: the threshold
// is the lower of m − k·1.4826·MAD and m·(1 − minDrop), with m and MAD
// the median and median absolute deviation of the others. It takes
// O(n log n): leaving one value out moves the median to one of at most
// three places.
func leaveOneOut(v []float64, k, minDrop float64) outlierTest {
	t := outlierTest{typical: make([]float64, len(v)), threshold: make([]float64, len(v))}
	s := slices.Clone(v)
	slices.Sort(s)
	devs := make(map[float64][]float64) // other values' median → sorted |s − it|
	for i, x := range v {
		if len(v)-1 < minOthers {
			t.typical[i], t.threshold[i] = x, math.Inf(-1)
			continue
		}
		m := medianWithout(s, sort.SearchFloat64s(s, x))
		d, ok := devs[m]
		if !ok {
			d = make([]float64, len(s))
			for j, y := range s {
				d[j] = math.Abs(y - m)
			}
			slices.Sort(d)
			devs[m] = d
		}
		mad := medianWithout(d, sort.SearchFloat64s(d, math.Abs(x-m)))
		t.typical[i] = m
		t.threshold[i] = min(m-k*madScale*mad, m*(1-minDrop))
	}
	return t
}
