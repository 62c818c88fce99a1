package gate

import (
	"math"
	"slices"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// PairRho is the rank correlation (Spearman) of a benchmark's adjacent
// OLD and NEW runs from which the gate tests it paired (-paired): at or
// above it, the runs share enough of the machine's state (a guest's speed
// that changes from one second to the next) for the within-pair
// differences to be tighter than the runs' spread. Below it the pairing
// buys nothing and the unpaired U test, whose smallest p is far lower
// (1/C(2n, n) against 2^−n), is used.
const PairRho = 0.5

// pairing returns whether a benchmark whose deciding row is prim (runs
// in file order: OLD's i-th run was made next to NEW's i-th) is tested
// paired, and the Spearman correlation of that row's adjacent runs.
// Spearman's ρ does not change when NEW is shifted or scaled, so a
// regression does not move the choice.
func (r *Report) pairing(prim Row) (bool, float64) {
	if !r.Opt.Paired || len(prim.old) != len(prim.cur) || len(prim.old) < 3 {
		return false, math.NaN()
	}
	rho := spearman(prim.old, prim.cur)
	return rho >= PairRho, rho
}

// spearman is the rank correlation of x and y (equal lengths); 0 when
// either is constant.
func spearman(x, y []float64) float64 {
	rx, ry := midranks(x), midranks(y)
	n := float64(len(x))
	mean := (n + 1) / 2
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mean, ry[i]-mean
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if sxx == 0 || syy == 0 {
		return 0
	}
	return sxy / math.Sqrt(sxx*syy)
}

// midranks returns the rank (1..n, ties averaged) of every value of v.
func midranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmpFloat(v[a], v[b]) })
	rk := make([]float64, len(v))
	for lo := 0; lo < len(idx); {
		hi := lo + 1
		for hi < len(idx) && v[idx[hi]] == v[idx[lo]] {
			hi++
		}
		for _, i := range idx[lo:hi] {
			rk[i] = float64(lo+hi+1) / 2
		}
		lo = hi
	}
	return rk
}

// logRatios returns, for each pair, how much worse NEW's run is than
// OLD's on a log scale (log(new/old) for lower-is-better units,
// log(old/new) for higher-is-better ones), shifted by shift; nil when a
// value is not positive.
func logRatios(old, cur []float64, better int, shift float64) []float64 {
	if !positive(old) || !positive(cur) {
		return nil
	}
	d := make([]float64, len(old))
	for i := range old {
		d[i] = math.Log(cur[i]/old[i])*float64(-better) + shift
	}
	return d
}

// signedRank returns the exact one-sided p-values of the Wilcoxon
// signed-rank test that the pairs' differences d are centred above 0
// (NEW worse), respectively below. Zero differences are dropped
// (Wilcoxon's convention); ties in |d| get their average rank, and the
// exact distribution is counted over all 2^n sign patterns with the
// ranks doubled to integers. 1, 1 when no difference is left.
func signedRank(d []float64) (pWorse, pBetter float64) {
	var abs []float64
	var pos []bool
	for _, v := range d {
		if v != 0 && !math.IsNaN(v) {
			abs = append(abs, math.Abs(v))
			pos = append(pos, v > 0)
		}
	}
	n := len(abs)
	if n == 0 {
		return 1, 1
	}
	rk := midranks(abs)
	w := make([]int, n) // doubled ranks: integers even with ties
	obs, total := 0, 0
	for i, r := range rk {
		w[i] = int(math.Round(2 * r))
		total += w[i]
		if pos[i] {
			obs += w[i]
		}
	}
	// count[s]: sign patterns whose positive doubled ranks sum to s.
	count := make([]float64, total+1)
	count[0] = 1
	for _, wi := range w {
		for s := total; s >= wi; s-- {
			count[s] += count[s-wi]
		}
	}
	all := math.Ldexp(1, n)
	var ge, le float64
	for s, c := range count {
		if s >= obs {
			ge += c
		}
		if s <= obs {
			le += c
		}
	}
	return ge / all, le / all
}

// pairedSided is oneSided for a paired benchmark: the signed-rank test
// of the runs' log ratios (1, 1 without a direction or positive values).
func pairedSided(old, cur []float64, better int) (pWorse, pBetter float64) {
	d := logRatios(old, cur, better, 0)
	if better == 0 || d == nil {
		return 1, 1
	}
	return signedRank(d)
}

// MinPPaired is the smallest p-value the one-sided signed-rank test can
// produce for n pairs: 2^−n.
func MinPPaired(n int) float64 { return math.Ldexp(1, -n) }

// median of v (unsorted; v is not changed).
func median(v []float64) float64 { return stats.Median(v) }
