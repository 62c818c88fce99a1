package blame

import (
	"math"
	"slices"
	"sort"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// madScale turns a median absolute deviation into an estimate of the
// standard deviation of normal noise.
const madScale = 1.4826

// minOthers is how many other values an outlier test needs.
const minOthers = 2

// median is the median of v (the mean of the middle two for an even
// count), NaN for none; v is not changed.
func median(v []float64) float64 { return stats.Median(v) }

// medianSorted is the median of the sorted s.
func medianSorted(s []float64) float64 { return stats.MedianSorted(s) }

// medianWithout is the median of the sorted s without its element i.
func medianWithout(s []float64, i int) float64 { return medianSkipping(s, i) }

// medianSkipping is the median of sorted s without the elements at the
// distinct positions skip (ascending).
func medianSkipping(s []float64, skip ...int) float64 {
	at := func(j int) float64 {
		for _, k := range skip {
			if j >= k {
				j++
			}
		}
		return s[j]
	}
	n := len(s) - len(skip)
	if n%2 == 1 {
		return at(n / 2)
	}
	return at(n/2-1)/2 + at(n/2)/2
}

// positions returns the positions in sorted s of the values xs (a value
// given twice takes the next equal element), ascending.
func positions(s []float64, xs ...float64) []int {
	var out []int
	for _, x := range xs {
		p := sort.SearchFloat64s(s, x)
		for slices.Contains(out, p) {
			p++
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// outlierTest holds, for each of a set of values, the typical value of
// the others and the threshold below which it is an outlier.
type outlierTest struct {
	typical   []float64 // median of the other values
	threshold []float64 // −Inf when there are too few others
}

// leaveOneOut judges each v[i] against the other values: the threshold
// is the lower of m·exp(−k·1.4826·MAD) and m·(1 − minDrop), with m the
// median of the others and MAD the median absolute deviation of their
// logarithms from log m. The spread is taken on the log scale because
// the values are rates and ratios, whose noise is a factor: a linear
// m − k·1.4826·MAD reached zero or below as soon as the others spread
// by 2× (4 healthy links at 4.3–7.5 ms in a CI faults pass), and then
// nothing could be named, not even a link 10× slower. A non-positive
// m keeps the linear bound.
func leaveOneOut(v []float64, k, minDrop float64) outlierTest {
	return leaveOut(v, nil, k, minDrop, 1)
}

// leaveOut is leaveOneOut that also leaves out of v[i]'s others the
// value v[with[i]] when with is given and with[i] ≥ 0: a link's reverse
// direction, slowed by the same cable, is no evidence of what a typical
// link does; and whose threshold is at most m·floor (floor ≤ 1: the
// run-to-run noise, where it is larger than the others' spread). It takes O(n log n): leaving values out moves the median
// to one of a few places, whose deviations are sorted once each.
func leaveOut(v []float64, with []int, k, minDrop, floor float64) outlierTest {
	t := outlierTest{typical: make([]float64, len(v)), threshold: make([]float64, len(v))}
	s := slices.Clone(v)
	slices.Sort(s)
	devs := make(map[float64][]float64) // other values' median → sorted |s − it|
	for i, x := range v {
		out := []float64{x}
		if with != nil && with[i] >= 0 {
			out = append(out, v[with[i]])
		}
		if len(v)-len(out) < minOthers {
			t.typical[i], t.threshold[i] = x, math.Inf(-1)
			continue
		}
		m := medianSkipping(s, positions(s, out...)...)
		dev := func(y float64) float64 { return logDev(y, m) }
		d, ok := devs[m]
		if !ok {
			d = make([]float64, len(s))
			for j, y := range s {
				d[j] = dev(y)
			}
			slices.Sort(d)
			devs[m] = d
		}
		dout := make([]float64, len(out))
		for j, y := range out {
			dout[j] = dev(y)
		}
		mad := medianSkipping(d, positions(d, dout...)...)
		t.typical[i] = m
		noise := m * math.Exp(-k*madScale*mad)
		if !(m > 0) {
			noise = m - k*madScale*mad
		}
		t.threshold[i] = min(noise, m*(1-minDrop))
		if m > 0 {
			t.threshold[i] = min(t.threshold[i], m*floor)
		}
	}
	return t
}

// runSigma is a metric's run-to-run noise: the standard deviation of
// the logarithm of one run's value about its link's median, from the
// links whose median is at or above the median link (faults only make
// links worse, and a fault's own spread, such as a fixed delay's, says
// nothing of how much a healthy link moves). Robust: 1.4826 times the
// median absolute deviation, pooled over those links' runs and widened
// by √(r/(r−1)) for the median's own pull towards its runs (r runs a
// link). 0 with fewer than 2 runs a link.
func runSigma(runs map[Link][]float64, better int) float64 {
	var logs [][]float64
	var meds []float64
	for _, r := range runs {
		var lr []float64
		for _, x := range r {
			if x > 0 {
				lr = append(lr, float64(better)*math.Log(x))
			}
		}
		if len(lr) >= 2 {
			logs = append(logs, lr)
			meds = append(meds, median(lr))
		}
	}
	if len(logs) == 0 {
		return 0
	}
	mid := median(meds)
	var devs []float64
	links := 0
	for i, lr := range logs {
		if meds[i] < mid {
			continue
		}
		links++
		for _, x := range lr {
			devs = append(devs, math.Abs(x-meds[i]))
		}
	}
	r := float64(len(devs)) / float64(links)
	return madScale * median(devs) * math.Sqrt(r/(r-1))
}

// logDev is |log y − log m| for a positive m: +Inf for y ≤ 0 (nothing
// is further below); |y − m| when m is not positive (no log scale).
func logDev(y, m float64) float64 {
	switch {
	case !(m > 0):
		return math.Abs(y - m)
	case !(y > 0):
		return math.Inf(1)
	}
	return math.Abs(math.Log(y) - math.Log(m))
}
