package gate

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture is the path of a file in ci/gate/testdata.
func fixture(name string) string { return filepath.Join("..", "..", "testdata", name) }

func TestMinP(t *testing.T) {
	tests := []struct {
		n1, n2 int
		want   float64
	}{
		{0, 5, 1},
		{1, 1, 0.5},
		{3, 3, 0.05},
		{4, 4, 1.0 / 70},
		{6, 6, 1.0 / 924},
		{3, 8, 1.0 / 165},
		{9, 9, 1.0 / 48620.0},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, MinP(tt.n1, tt.n2), 1e-12, "n=%d+%d", tt.n1, tt.n2)
	}
	// One lone benchmark among 47 at alpha 0.05: 1−0.95^(1/47) = 0.001091,
	// just above 1/924: 6 runs per side; among 100: 7.
	lone47 := -math.Expm1(math.Log1p(-0.05) / 47)
	assert.Equal(t, 6, RunsNeeded(1, lone47))
	assert.Equal(t, 8, RunsNeeded(5, lone47), "5 distinct units: 5/12870 ≤ 0.00109 < 5/3432")
	assert.Equal(t, 7, RunsNeeded(1, -math.Expm1(math.Log1p(-0.05)/100)))
}

// Holm within a benchmark: units whose runs rank identically (MB/s is
// ns/op inverted) count as one test; the family's p is the smallest p
// times the number of tests, and a row's adjusted p steps down.
func TestHolmWithinBenchmark(t *testing.T) {
	lo := []float64{1, 2, 3, 4, 5, 6}
	hi := []float64{7, 8, 9, 10, 11, 12}
	mixed := []float64{2, 11, 4, 9, 6, 7}
	row := func(unit string, better int, old, cur []float64, pw float64) Row {
		return Row{Unit: unit, Better: better, old: old, cur: cur, PWorse: pw, Family: -1, PAdj: 1}
	}
	rep := &Report{Opt: Options{Alpha: 0.05}, Rows: []Row{
		row("ns/op", -1, lo, hi, 1.0/924),
		row("MB/s", 1, []float64{12, 11, 10, 9, 8, 7}, []float64{6, 5, 4, 3, 2, 1}, 1.0/924),
		row("p50-ns", -1, lo, mixed, 0.3),
		row("p99-ns", -1, mixed, hi, 0.01),
	}}
	rep.addFamily(Key{Name: "B"}, []int{0, 1, 2, 3})
	f := &rep.Families[0]
	assert.Equal(t, 3, f.Tests, "ns/op and MB/s rank alike")
	assert.InDelta(t, 3.0/924, f.P, 1e-12)
	f.Level, f.Significant = 0.05, true
	rep.holm(f)
	var adj []float64
	for _, r := range rep.Rows {
		adj = append(adj, r.PAdj)
	}
	// Sorted tests: 1/924·3, 0.01·2, 0.3·1.
	assert.InDeltaSlice(t, []float64{3.0 / 924, 3.0 / 924, 0.3, 0.02}, adj, 1e-12)
}

func TestParsePercent(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr bool
	}{
		{"5%", 0.05, false},
		{"15", 0.15, false},
		{" 0.5% ", 0.005, false},
		{"off", math.Inf(1), false},
		{"OFF", math.Inf(1), false},
		{"-1%", 0, true},
		{"NaN", 0, true},
		{"x", 0, true},
		{"", 0, true},
	}
	for _, tt := range tests {
		got, err := ParsePercent(tt.in)
		if tt.wantErr {
			assert.Error(t, err, tt.in)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.InDelta(t, tt.want, got, 1e-12, tt.in)
	}
	m, err := ParseUnitThresholds("p99.9-ns=15%, max-ns=off,")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"p99.9-ns": 0.15, "max-ns": off}, m)
	m, err = ParseUnitThresholds("B/op=128,allocs/op=off")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"B/op": 128, "allocs/op": off}, m, "memory units take an amount")
	_, err = ParseUnitThresholds("B/op=5%")
	assert.ErrorContains(t, err, "absolute change")
	assert.ErrorContains(t, err, "e.g. B/op=64", "the example parses")
	m, err = ParseUnitThresholds(DefaultUnitText())
	require.NoError(t, err, "-help's defaults parse: %s", DefaultUnitText())
	assert.Equal(t, defaultUnitThresholds, m, "-help shows the defaults")
}

func TestVerdictDirection(t *testing.T) {
	tests := []struct {
		name        string
		better      int
		delta       float64
		pWorse      float64
		significant bool
		undecided   bool
		want        Verdict
	}{
		{"lower better, up 20%", -1, 0.20, 0.001, true, false, Regression},
		{"higher better, down 20%", 1, -0.20, 0.001, true, false, Regression},
		{"lower better, up 3%", -1, 0.03, 0.001, true, false, WorseWithin},
		{"benchmark not significant", -1, 0.20, 0.001, false, false, NoChange},
		{"row alone not significant", -1, 0.20, 0.2, true, false, NoChange},
		{"unknown direction", 0, 0.20, 0.001, true, false, Unknown},
		{"too few runs", -1, 0.20, 0.1, false, true, Undecided},
	}
	for _, tt := range tests {
		rep := &Report{Opt: Options{Alpha: 0.05}, Families: []Family{{Significant: tt.significant, Undecided: tt.undecided, Level: 0.05, Tests: 1}}}
		r := Row{Better: tt.better, Delta: tt.delta, Threshold: 0.05, PWorse: tt.pWorse, PAdj: tt.pWorse, PBetter: 1}
		assert.Equal(t, tt.want, rep.verdict(r), tt.name)
	}
	improved := &Report{Opt: Options{Alpha: 0.05}, Lone: 0.05, Families: []Family{{Improved: true, Tests: 1}}}
	assert.Equal(t, Improved, improved.verdict(Row{Better: 1, Delta: 0.2, Threshold: 0.05, PWorse: 1, PBetter: 0.001}))

	// B/op and allocs/op: absolute change of the median, no test.
	bop := func(old, cur float64) Row {
		r := Row{Unit: "B/op", Better: -1, Abs: true, Threshold: 64, Family: -1}
		r.Old.Center, r.New.Center = old, cur
		return r
	}
	assert.Equal(t, NoChange, rep0.verdict(bop(16, 60)), "a few dozen bytes of runtime noise")
	assert.Equal(t, Regression, rep0.verdict(bop(0, 80)))
	assert.Equal(t, "+80 B/op", bop(0, 80).deltaText(), "no +Inf%")
	assert.Equal(t, Improved, rep0.verdict(bop(200, 16)))
}

var rep0 = &Report{Opt: Options{Alpha: 0.05}}

func TestReadSetUnitsAsWritten(t *testing.T) {
	in := "pkg: x\ncpu: Fancy CPU @ 3GHz\nUnit p99-ns better=lower\nBenchmarkA/size=8-2 10 100 ns/op 4.5 MB/s 200 p99-ns\nBenchmarkA/size=8-2 10 110 ns/op 4.0 MB/s 210 p99-ns\n"
	s, err := ReadSet(strings.NewReader(in), "in", map[string]bool{"cpu": true})
	require.NoError(t, err)
	require.Len(t, s.Order, 1)
	b := s.Benches[s.Order[0]]
	assert.Equal(t, Key{Name: "A/size=8-2", Config: "pkg=x"}, b.Key)
	assert.Equal(t, []string{"ns/op", "MB/s", "p99-ns"}, b.Units)
	assert.Equal(t, []float64{4.5, 4.0}, b.Samples["MB/s"])
	assert.Equal(t, "B/s", b.Tidy["MB/s"])
	assert.Equal(t, -1, s.Units.GetBetter(b.Tidy["p99-ns"]))
}
