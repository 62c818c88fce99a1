// Package changepoint has one job: finding where a series of benchmark
// runs changed level, as runs arrive, and by how much.
//
// A series' value per run is the run's best result (history.Point.Best:
// the lowest time, the highest rate of its go test -count results). Why
// the best: on a noisy machine noise only ever adds time, so the best
// result is the most stable estimate of what the code can do (Chen and
// Revels, "Robust benchmarking in noisy environments", 2016; Julia's
// BenchmarkTools judges on the minimum). Under qemu TCG the noise is
// worse than a spread: runs land in a fast or a slow phase, 1.5–2× apart
// (docs/notes/history-2026-12-06-power.md), and a median jumps between
// them while the fast phase's level stays put to a few percent.
//
// The method (Detect), written down so that its figures can be checked
// (docs/history.md has them, measured on real runs):
//   - Walk the series run by run, as a nightly CI sees it. At each new
//     run n, the runs since the last change point are the baseline (up
//     to Window of them before a split), and each split that leaves
//     m = Confirm..Lookback runs after it is tried, the shortest first.
//   - The baseline's level is its Quantile (the fast phase's level: a
//     low quantile of times, the mirror for rates); its noise is the
//     relative spread (1.4826 × MAD) of the baseline's better half, the
//     fast phase alone. A noise above MaxNoise is too noisy to judge: no
//     test (the Go dashboard leaves out series too noisy to judge).
//   - The bar is the level moved by max(MinShift, Noise × noise) the
//     worse way. A step worse is found when every one of the m runs
//     after the split is beyond the bar: a slower fast phase puts its
//     runs there, and the slow phase's runs are there anyway. With no
//     change, that happens only when m runs in a row land in the slow
//     phase; its chance is estimated from the baseline, p = (runs of
//     the baseline beyond the bar + 1) / (baseline + 2), to the power m,
//     and must be at most Alpha. A series that is rarely slow so
//     confirms a step after Confirm runs, one often slow after more.
//     Sharper: a fast phase moved worse puts the runs after the split in
//     one narrow band, where the baseline has few runs, while a streak
//     of slow runs spreads over the slow phase; the chance of the band
//     with no change (bandChance) may confirm a step the streak's chance
//     alone could not.
//   - A step better is the mirror with a bar the other way, where the
//     slow phase does not help: at least half of the m runs must be
//     beyond it, with a binomial chance at most Alpha.
//   - After a change point the baseline starts again at it.
//   - A baseline with so many runs beyond its bar that Lookback of them
//     in a row are not rare enough (share^Lookback > Alpha) is too often
//     slow (Result.TooSlow): a step worse there may need more than
//     Lookback runs, or the band, to be confirmed. It is still tested;
//     a report must not call it "no change" without saying so.
package changepoint

import (
	"fmt"
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// Config sets Detect's windows and levels; Default is what rdmahistory
// uses and what docs/history.md's power figures were measured with.
type Config struct {
	// Window is the most baseline runs a test uses; MinBaseline the
	// fewest it needs.
	Window, MinBaseline int
	// Confirm is the fewest runs after a split that can confirm it;
	// Lookback the most (a step is looked for among the last Lookback
	// runs only).
	Confirm, Lookback int
	// Quantile of the baseline (of times; 1 − Quantile of rates) is its
	// level.
	Quantile float64
	// Alpha is the largest estimated chance, with no change, of what a
	// change point needs (see the package doc); MinShift the smallest
	// relative step called a change (0.05: 5%); Noise how many baseline
	// noise spreads a step must exceed; MaxNoise the noise above which
	// a baseline is too noisy to judge.
	Alpha, MinShift, Noise, MaxNoise float64
}

// Default is rdmahistory's configuration.
var Default = Config{Window: 20, MinBaseline: 10, Confirm: 3, Lookback: 5, Quantile: 0.25, Alpha: 0.005, MinShift: 0.05, Noise: 5, MaxNoise: 0.1}

// Validate refuses a configuration Detect cannot use, naming the value.
func (c Config) Validate() error {
	switch {
	case c.MinBaseline < 3 || c.Window < c.MinBaseline:
		return fmt.Errorf("changepoint: window %d, min baseline %d: want 3 ≤ min baseline ≤ window", c.Window, c.MinBaseline)
	case c.Confirm < 1 || c.Lookback < c.Confirm:
		return fmt.Errorf("changepoint: confirm %d, lookback %d: want 1 ≤ confirm ≤ lookback", c.Confirm, c.Lookback)
	case !(c.Quantile >= 0 && c.Quantile <= 0.5):
		return fmt.Errorf("changepoint: quantile %v: want 0..0.5", c.Quantile)
	case !(c.Alpha > 0 && c.Alpha < 1):
		return fmt.Errorf("changepoint: alpha %v: want 0 < alpha < 1", c.Alpha)
	case !(c.MinShift >= 0) || !(c.Noise >= 0) || !(c.MaxNoise > 0):
		return fmt.Errorf("changepoint: min shift %v, noise %v, max noise %v: want ≥ 0, ≥ 0, > 0", c.MinShift, c.Noise, c.MaxNoise)
	}
	return nil
}

// Change is one change point.
type Change struct {
	// At is the index of the first run at the new level.
	At int
	// Confirmed is the index of the run whose arrival confirmed it.
	Confirmed int
	// Before is the baseline's level; After the median of the runs
	// At..Confirmed; Shift is (After − Before) / Before.
	Before, After, Shift float64
	// Worse tells whether the step is worse for the series' direction.
	Worse bool
	// P is the estimated chance of the runs after the split with no
	// change; Noise the baseline's noise (relative).
	P, Noise float64
}

// Result is Detect's answer for one series.
type Result struct {
	Changes []Change
	// TooNoisy: the series' last baseline is noisier than MaxNoise, so
	// it was not judged there; Noise is that last baseline's noise.
	TooNoisy bool
	Noise    float64
	// TooSlow: the series' last baseline has so many runs beyond its
	// bar that Lookback runs in a row there are not rare enough
	// (Slow^Lookback > Alpha): a step worse may go unconfirmed within
	// Lookback runs (only the band can confirm it). Slow is that share,
	// (runs beyond the bar + 1) / (baseline + 2).
	TooSlow bool
	Slow    float64
}

// Detect walks x run by run (higherBetter tells the direction) and
// returns its change points in order. A rate of 0 (a dead link) is an
// infinitely slow run: a step to it is a change of −100%.
func Detect(x []float64, higherBetter bool, c Config) Result {
	// in "time" form: lower is better, a rate as its inverse
	t := make([]float64, len(x))
	for i, v := range x {
		t[i] = v
		if higherBetter {
			t[i] = 1 / v
		}
	}
	var res Result
	base := 0
	for n := 1; n <= len(t); n++ {
		ch, noise, slow, ok := test(t[:n], base, c)
		if noise >= 0 {
			res.Noise, res.TooNoisy = noise, noise > c.MaxNoise
		}
		if slow >= 0 {
			res.Slow, res.TooSlow = slow, math.Pow(slow, float64(c.Lookback)) > c.Alpha
		}
		if ok {
			if higherBetter { // back to the rate's own values
				ch.Before, ch.After = 1/ch.Before, 1/ch.After
				ch.Shift = (ch.After - ch.Before) / ch.Before
			}
			res.Changes = append(res.Changes, ch)
			base = ch.At
		}
	}
	return res
}

// test looks for a change among the last runs of t (lower is better),
// the baseline starting at base; it returns the change when there is
// one, and the noise and the share of runs beyond the worse bar of the
// first baseline it looked at (-1 for none).
func test(t []float64, base int, c Config) (ch Change, noise, slow float64, ok bool) {
	n := len(t)
	noise, slow = -1, -1
	for m := c.Confirm; m <= c.Lookback; m++ {
		at := n - m
		if at < base+c.MinBaseline {
			break
		}
		before := slices.Clone(t[max(base, at-c.Window):at])
		slices.Sort(before)
		after := t[at:n]
		level := stats.QuantileSorted(before, c.Quantile)
		s := lowNoise(before)
		if noise < 0 {
			noise = s
		}
		if !(s <= c.MaxNoise) || !(level > 0) || math.IsInf(level, 1) {
			continue // too noisy, or a baseline mostly dead (a rate of 0)
		}
		step := max(c.MinShift, c.Noise*s)
		nb := float64(len(before))
		// worse: every run after the split beyond the upper bar
		bar := level * (1 + step)
		pRun := (float64(len(before)-countBelow(before, bar)) + 1) / (nb + 2)
		if slow < 0 {
			slow = pRun
		}
		if slices.Min(after) >= bar {
			p := min(math.Pow(pRun, float64(m)), bandChance(before, after, bar, s))
			if p <= c.Alpha {
				return change(at, n, level, after, p, s, true), noise, slow, true
			}
		}
		// better: at least half of them beyond the lower bar
		low := level * (1 - step)
		j := countBelow(after, low)
		if 2*j >= m {
			pLow := (float64(countBelow(before, low)) + 1) / (nb + 2)
			if p := binomTail(m, j, pLow); p <= c.Alpha {
				return change(at, n, level, after, p, s, false), noise, slow, true
			}
		}
	}
	return Change{}, noise, slow, false
}

func change(at, n int, level float64, after []float64, p, noise float64, worse bool) Change {
	a := stats.Median(after)
	return Change{At: at, Confirmed: n - 1, Before: level, After: a, Shift: (a - level) / level, Worse: worse, P: p, Noise: noise}
}

// bandChance is the chance, with no change, of after as a whole when
// all of it is beyond bar: its runs sit in a narrow band [v, v·(1+h)]
// (v its fastest run, h twice the fast phase's width: 2 × max(2%,
// 2 × noise)) or beyond it. A fast phase moved worse puts its runs in
// such a band, where the baseline has few (the gap between its phases);
// a streak of slow-phase runs with no change spreads over the slow
// phase's 1.3–2×. Each run lands in the band with chance qA, beyond it
// with qT (from the baseline, as (count + 1) / (baseline + 2)); the
// chance of at least k of the m in the band is binomial, times the
// number of band positions between bar and the slowest run (the band is
// placed where the data is: a Bonferroni factor).
func bandChance(before, after []float64, bar, noise float64) float64 {
	h := 2 * max(0.02, 2*noise)
	v := slices.Min(after)
	top := v * (1 + h)
	nb, m := float64(len(before)), len(after)
	k := countBelow(after, top)
	qA := (float64(countBelow(before, top)-countBelow(before, v)) + 1) / (nb + 2)
	qT := (nb - float64(countBelow(before, top)) + 1) / (nb + 2)
	p := 0.0
	for j := k; j <= m; j++ {
		p += binom(m, j) * math.Pow(qA, float64(j)) * math.Pow(qT, float64(m-j))
	}
	hi := max(slices.Max(after), slices.Max(before))
	places := math.Ceil(math.Log(hi/bar)/math.Log1p(h)) + 1
	return min(1, places*p)
}

// countBelow counts the values of v below x.
func countBelow(v []float64, x float64) int {
	k := 0
	for _, y := range v {
		if y < x {
			k++
		}
	}
	return k
}

// lowNoise is the relative spread, 1.4826 × MAD / median, of the better
// half of the sorted s: the fast phase's noise.
func lowNoise(s []float64) float64 {
	h := s[:(len(s)+1)/2]
	med := stats.MedianSorted(h)
	d := make([]float64, len(h))
	for i, x := range h {
		d[i] = math.Abs(x - med)
	}
	slices.Sort(d)
	if med <= 0 {
		return math.Inf(1)
	}
	return 1.4826 * stats.MedianSorted(d) / med
}

// binomTail is P(X ≥ j) for X ~ Binomial(m, p).
func binomTail(m, j int, p float64) float64 {
	sum := 0.0
	for k := j; k <= m; k++ {
		sum += binom(m, k) * math.Pow(p, float64(k)) * math.Pow(1-p, float64(m-k))
	}
	return sum
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}
