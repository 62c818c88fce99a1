package gate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	mstats "github.com/aclements/go-moremath/stats"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// Replication units: what one sample of a test is.
const (
	// ByRun: every run (result line) is a sample. Right when the runs of
	// one process or boot share nothing that the other side's do not:
	// make compare's paired runs, made a second apart in one boot, with
	// the process offsets checked (ProcessesDiffer).
	ByRun = "runs"
	// ByProcess: a side's runs collapsed to one median per process
	// (rdma-process).
	ByProcess = "processes"
	// ByBoot: a side's runs collapsed to one median per boot
	// (rdma-boot): stored files made minutes or reboots apart, the
	// firmware workflow (flash, reboot, run). Runs of one boot share its
	// state (docs/compare.md), so counting them as independent would
	// call a boot's offset a regression.
	ByBoot = "boots"
)

// Collapse returns s with every benchmark's runs replaced by one sample
// per group of runs that share a label (by: ByProcess or ByBoot): the
// median of the group's runs, unit by unit, in order of the groups'
// first runs. Runs without a label form one group, "".
func Collapse(s *Set, by string) *Set {
	out := *s
	out.Benches = make(map[Key]*Bench, len(s.Benches))
	for k, b := range s.Benches {
		labels := b.Procs
		if by == ByBoot {
			labels = b.Boots
		}
		var groups []string
		idx := map[string][]int{}
		for i, l := range labels {
			if _, ok := idx[l]; !ok {
				groups = append(groups, l)
			}
			idx[l] = append(idx[l], i)
		}
		nb := &Bench{Key: b.Key, Units: b.Units, Tidy: b.Tidy, Runs: len(groups), Samples: map[string][]float64{}}
		for u, vals := range b.Samples {
			if len(vals) != b.Runs {
				continue // a unit some runs lack: not comparable per group
			}
			for _, g := range groups {
				var vs []float64
				for _, i := range idx[g] {
					vs = append(vs, vals[i])
				}
				nb.Samples[u] = append(nb.Samples[u], stats.Median(vs))
			}
		}
		for _, g := range groups {
			if by == ByBoot {
				nb.Boots = append(nb.Boots, g)
			} else {
				nb.Procs = append(nb.Procs, g)
			}
		}
		out.Benches[k] = nb
	}
	return &out
}

// Groups counts the distinct labels (by: ByProcess or ByBoot) over all
// of s's runs; unlabelled runs count as one group.
func Groups(s *Set, by string) int {
	seen := map[string]bool{}
	for _, b := range s.Benches {
		labels := b.Procs
		if by == ByBoot {
			labels = b.Boots
		}
		for _, l := range labels {
			seen[l] = true
		}
	}
	return len(seen)
}

// ProcessLevel is the level of the check that a paired benchmark's
// process pairs agree (Family.ProcessP): below it the processes differ
// by more than their runs explain, and the runs cannot be the unit.
const ProcessLevel = 0.001

// offsetsMatter reports whether process offsets of spread sd (a
// fraction, ProcessSD) over k groups could by themselves carry a
// benchmark's estimate past threshold. Paired, the groups are k pairs of
// processes and the estimate carries about the mean of their offsets,
// spread sd/√k; unpaired, the groups are both sides' processes, k/2 a
// side, and the estimate carries the difference of the sides' means,
// spread sd·2/√k. The estimate stays below the threshold with chance
// 1 − ProcessLevel when that spread is at most threshold/z,
// z = Φ⁻¹(1 − ProcessLevel) ≈ 3.09: sd ≤ 2.8% for 3 process pairs at the
// default 5%. Offsets that small are real (random5 in
// testdata/README.md: 0.9–2.6%, at p ≤ 0.001) but cannot make a false
// name; larger ones, or a unit without a threshold, make the benchmark
// UNDECIDED.
func offsetsMatter(sd float64, k int, paired bool, threshold float64) bool {
	if math.IsNaN(sd) || k < 2 || !(threshold > 0) || threshold == off {
		return true
	}
	spread := math.Log1p(sd) / math.Sqrt(float64(k)) // paired: the mean of k
	if !paired {
		spread *= 2 // the difference of two means of k/2
	}
	return spread > math.Log1p(threshold)/mstats.StdNormal.InvCDF(1-ProcessLevel)
}

// processCheck sets f's process figures from its deciding row: the runs
// grouped by the process that made them, Kruskal–Wallis H over the groups
// with a permutation p-value (ProcessP), and the spread of the groups'
// means beyond what their runs explain (ProcessSD, a fraction). Paired,
// the values are the pairs' log ratios and a group is a pair of
// processes (OLD's, NEW's); unpaired, each run's log value less its
// side's median, a group one process. A difference between processes
// that is fixed for their life (buffer placement, QP numbers, which vCPU
// a thread got) shows as groups that disagree; a change of the build
// moves every group of a side alike.
func (r *Report) processCheck(f *Family, old, cur *Bench) {
	f.ProcessP, f.ProcessSD = math.NaN(), math.NaN()
	row := r.Rows[f.Row]
	if old == nil || cur == nil || len(old.Procs) != len(row.old) || len(cur.Procs) != len(row.cur) ||
		!positive(row.old) || !positive(row.cur) {
		return
	}
	var v []float64
	var labels []string
	if f.Paired {
		v = logRatios(row.old, row.cur, row.Better, 0)
		for i := range v {
			labels = append(labels, old.Procs[i]+"/"+cur.Procs[i])
		}
	} else {
		for _, side := range []struct {
			vals  []float64
			procs []string
		}{{row.old, old.Procs}, {row.cur, cur.Procs}} {
			logs := make([]float64, len(side.vals))
			for i, x := range side.vals {
				logs[i] = math.Log(x)
			}
			med := stats.Median(logs)
			for i, l := range logs {
				v = append(v, l-med)
				labels = append(labels, side.procs[i])
			}
		}
	}
	group := make([]int, len(v))
	ids := map[string]int{}
	for i, l := range labels {
		if l == "" || l == "/" {
			return // runs without rdma-process lines
		}
		if _, ok := ids[l]; !ok {
			ids[l] = len(ids)
		}
		group[i] = ids[l]
	}
	f.ProcessPairs = len(ids)
	if len(ids) < 2 || len(ids) == len(v) {
		return
	}
	f.ProcessP = permutationKW(v, group, len(ids))
	f.ProcessSD = betweenSD(v, group, len(ids))
}

// permutationKW is the permutation p-value of the Kruskal–Wallis
// statistic of v grouped by group (k groups): the share of 1999
// relabellings (a fixed seed: the same input, the same p) whose statistic
// is at least the observed one, counting the observed one.
func permutationKW(v []float64, group []int, k int) float64 {
	rk := midranks(v)
	h := func(g []int) float64 {
		sum := make([]float64, k)
		n := make([]float64, k)
		for i, r := range rk {
			sum[g[i]] += r
			n[g[i]]++
		}
		s := 0.0
		for j := range sum {
			if n[j] > 0 {
				s += sum[j] * sum[j] / n[j]
			}
		}
		return s
	}
	obs := h(group)
	rng := rand.New(rand.NewPCG(41, 1))
	g := slices.Clone(group)
	const perms = 1999
	ge := 1
	for range perms {
		rng.Shuffle(len(g), func(i, j int) { g[i], g[j] = g[j], g[i] })
		if h(g) >= obs-1e-9 {
			ge++
		}
	}
	return float64(ge) / float64(perms+1)
}

// betweenSD estimates the standard deviation of the groups' true mean
// log ratios (one-way random effects, method of moments: (MSB − MSW)/n₀),
// as a fraction (exp − 1); 0 when the groups agree within their runs.
func betweenSD(v []float64, group []int, k int) float64 {
	sum := make([]float64, k)
	n := make([]float64, k)
	for i, x := range v {
		sum[group[i]] += x
		n[group[i]]++
	}
	mean := 0.0
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	var ssb, ssw, sn2 float64
	for i, x := range v {
		m := sum[group[i]] / n[group[i]]
		ssw += (x - m) * (x - m)
	}
	for j := range sum {
		m := sum[j] / n[j]
		ssb += n[j] * (m - mean) * (m - mean)
		sn2 += n[j] * n[j]
	}
	N := float64(len(v))
	if N <= float64(k) || k < 2 {
		return 0
	}
	msb, msw := ssb/float64(k-1), ssw/(N-float64(k))
	n0 := (N - sn2/N) / float64(k-1)
	comp := (msb - msw) / n0
	if comp <= 0 {
		return 0
	}
	return math.Expm1(math.Sqrt(comp))
}

// replicationText says what one sample of the tests was.
func (r *Report) replicationText() string {
	switch r.Replication {
	case ByBoot:
		return fmt.Sprintf("a boot: each side's runs collapsed to one median per boot (rdma-boot); OLD %d, NEW %d boots", r.groups[0], r.groups[1])
	case ByProcess:
		return fmt.Sprintf("a process: each side's runs collapsed to one median per process (rdma-process); OLD %d, NEW %d processes", r.groups[0], r.groups[1])
	}
	return "a run (one result line)"
}
