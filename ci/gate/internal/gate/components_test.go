package gate

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// components are the variance components of one benchmark's deciding
// unit (on the log scale, as standard deviations): between boots,
// between processes of one boot, between runs of one process.
type components struct {
	boot, proc, run float64
}

// nestedComponents estimates the variance components of runs grouped
// as boots ⊃ processes ⊃ runs (a balanced nested random-effects model,
// method of moments: Searle, Casella & McCulloch, "Variance
// Components", §3.6), from the log of each run's value; a negative
// estimate is 0. vals[b][p] are boot b's process p's runs.
func nestedComponents(vals [][][]float64) components {
	var B, P, R float64 = float64(len(vals)), float64(len(vals[0])), float64(len(vals[0][0]))
	var grand float64
	bootMean := make([]float64, len(vals))
	procMean := make([][]float64, len(vals))
	for b := range vals {
		procMean[b] = make([]float64, len(vals[b]))
		for p := range vals[b] {
			for _, v := range vals[b][p] {
				procMean[b][p] += math.Log(v) / R
			}
			bootMean[b] += procMean[b][p] / P
		}
		grand += bootMean[b] / B
	}
	var ssw, ssp, ssb float64
	for b := range vals {
		ssb += P * R * (bootMean[b] - grand) * (bootMean[b] - grand)
		for p := range vals[b] {
			ssp += R * (procMean[b][p] - bootMean[b]) * (procMean[b][p] - bootMean[b])
			for _, v := range vals[b][p] {
				d := math.Log(v) - procMean[b][p]
				ssw += d * d
			}
		}
	}
	msw := ssw / (B * P * (R - 1))
	msp := ssp / (B * (P - 1))
	msb := ssb / max(B-1, 1)
	sd := func(v float64) float64 { return math.Sqrt(max(v, 0)) }
	c := components{run: sd(msw), proc: sd((msp - msw) / R)}
	if B > 1 {
		c.boot = sd((msb - msp) / (P * R))
	}
	return c
}

// A known nested sample: the estimates recover the components.
func TestNestedComponents(t *testing.T) {
	// 3 boots × 3 processes × 10 runs; boot offsets ±10%, process
	// offsets ±5%, runs ±2%, on the log scale, exactly balanced.
	vals := make([][][]float64, 3)
	for b := range vals {
		vals[b] = make([][]float64, 3)
		for p := range vals[b] {
			for r := range 10 {
				l := 0.1*float64(b-1) + 0.05*float64(p-1) + 0.02*float64(r%2*2-1)
				vals[b][p] = append(vals[b][p], 1000*math.Exp(l))
			}
		}
	}
	c := nestedComponents(vals)
	// Sample variances of the offsets: boots {-0.1,0,0.1} → 0.01,
	// processes {-0.05,0,0.05} → 0.0025; runs ±0.02 → 0.02²·10/9.
	assert.InDelta(t, 0.02*math.Sqrt(10.0/9), c.run, 1e-9)
	assert.InDelta(t, math.Sqrt(0.0025-0.02*0.02*10.0/9/10), c.proc, 1e-9)
	assert.InDelta(t, math.Sqrt(0.01-(0.0025*10)/30), c.boot, 1e-9)
}

// TestStoredComponents prints, per family, the variance components of
// the deciding unit over the stored random self-checks' OLD sides (each
// a boot of its own; 3 processes × 10 runs a benchmark; OLD is never
// slowed), and checks the design's premise: a process's offset is
// small against the 25% the gate must see. go test -v -run
// StoredComponents ./ci/gate/internal/gate prints the table that
// docs/compare.md quotes.
func TestStoredComponents(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	olds, err := filepath.Glob(fixture("compare-random*-old.txt"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(olds), storedRandomChecks)
	var sets []*Set
	for _, o := range olds {
		s, err := ReadFile(o, realIgnore)
		require.NoError(t, err)
		sets = append(sets, s)
	}
	opt := realOptions(t)
	opt.skipPower = true
	rep := Compare(sets[0], sets[0], opt) // the deciding units
	byFam := map[string][]components{}
	var fams []string
	for _, f := range rep.Families {
		var vals [][][]float64
		for _, s := range sets {
			b := s.Benches[f.Key]
			require.NotNil(t, b, f.Key.Name)
			var procs []string
			byProc := map[string][]float64{}
			for i, v := range b.Samples[f.Unit] {
				if _, ok := byProc[b.Procs[i]]; !ok {
					procs = append(procs, b.Procs[i])
				}
				byProc[b.Procs[i]] = append(byProc[b.Procs[i]], v)
			}
			var boot [][]float64
			for _, p := range procs {
				boot = append(boot, byProc[p])
			}
			vals = append(vals, boot)
		}
		fam := familyName(f.Key.Name) + " " + f.Unit
		if _, ok := byFam[fam]; !ok {
			fams = append(fams, fam)
		}
		byFam[fam] = append(byFam[fam], nestedComponents(vals))
	}
	pctOf := func(sd float64) string { return fmt.Sprintf("%.1f%%", 100*math.Expm1(sd)) }
	var lines []string
	var procs, runs []float64
	for _, fam := range fams {
		cs := byFam[fam]
		med := func(get func(components) float64) float64 {
			v := make([]float64, len(cs))
			for i, c := range cs {
				v[i] = get(c)
			}
			slices.Sort(v)
			return v[len(v)/2]
		}
		b, p, r := med(func(c components) float64 { return c.boot }), med(func(c components) float64 { return c.proc }), med(func(c components) float64 { return c.run })
		procs, runs = append(procs, p), append(runs, r)
		lines = append(lines, fmt.Sprintf("%-18s %2d benchmarks  boot %6s  process %6s  run %6s", fam, len(cs), pctOf(b), pctOf(p), pctOf(r)))
	}
	t.Logf("variance components of the deciding unit (SD as %%, median over each family's benchmarks), %d boots:\n%s", len(sets), strings.Join(lines, "\n"))
	slices.Sort(procs)
	// The premise of testing runs, not processes: a process's offset is
	// well below the slowdown the gate must see.
	assert.Less(t, math.Expm1(procs[len(procs)/2]), 0.05, "median process component")
}
