package gate

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/results"
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

// One deciding unit per benchmark: p50-ns for a latency family, the
// headline rate elsewhere, -decide over both; a unit the benchmark does
// not report falls through to the next.
func TestDecidingUnit(t *testing.T) {
	rows := func(units ...string) (*Report, []int) {
		rep := &Report{}
		var idx []int
		for i, u := range units {
			better := -1
			if strings.HasSuffix(u, "/s") {
				better = 1
			}
			rep.Rows = append(rep.Rows, Row{Unit: u, Better: better})
			idx = append(idx, i)
		}
		return rep, idx
	}
	tests := []struct {
		name   string
		units  []string
		decide map[string]string
		want   string
	}{
		{"WriteLat/transport=RC/size=8-2", []string{"ns/op", "msgs/s", "p50-ns", "p99-ns"}, nil, "p50-ns"},
		{"SendBW/transport=UD/size=64-2", []string{"ns/op", "MB/s", "msgs/s", "p50-ns"}, nil, "MB/s"},
		{"Example_commit-2", []string{"ns/op", "msgs/s", "p50-ns"}, nil, "msgs/s"},
		{"Commit/size=4096-2", []string{"ns/op", "p50-ns", "commits/s", "cpu-ns/op"}, nil, "commits/s"},
		{"RegMR/size=4096-2", []string{"ns/op", "ops/s"}, nil, "ops/s"},
		{"WriteLatGap/gap=1ms-2", []string{"ns/op", "msgs/s"}, nil, "msgs/s"}, // not a *Lat family: its rate
		{"SendLat/mode=event-2", []string{"ns/op", "p50-ns", "p99-ns"}, map[string]string{"SendLat": "p99-ns"}, "p99-ns"},
		{"Other-2", []string{"cpu-ns/op", "lost-msgs/op"}, nil, "cpu-ns/op"},
	}
	for _, tt := range tests {
		rep, idx := rows(tt.units...)
		rep.Opt.Decide = tt.decide
		assert.Equal(t, tt.want, rep.Rows[rep.decider(Key{Name: tt.name}, idx)].Unit, tt.name)
	}
	assert.Equal(t, "Other", familyName("Other-2"))
	assert.Equal(t, "WriteLat", familyName("WriteLat/size=8-2"))

	m, err := results.ParseDecide("SendLat=p99-ns, BenchmarkReadBW=msgs/s")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"SendLat": "p99-ns", "ReadBW": "msgs/s"}, m)
	for _, bad := range []string{"SendLat", "=p50-ns", "SendLat/size=8=p50-ns", "SendLat="} {
		_, err := results.ParseDecide(bad)
		assert.ErrorContains(t, err, "want Family=unit", bad)
	}
}

// A unit other than the deciding one decides nothing, but a significant
// worsening of it is its own verdict, AlsoWorse, which the summary names.
func TestAlsoWorse(t *testing.T) {
	var o, c strings.Builder
	for _, b := range []*strings.Builder{&o, &c} {
		b.WriteString("Unit p50-ns better=lower\nUnit p99-ns better=lower\n")
	}
	for i := range 12 {
		v := 10000 + 100*float64(i%3)
		fmt.Fprintf(&o, "BenchmarkSendLat/size=8-2 1000 %.0f p50-ns %.0f p99-ns\n", v, 2*v)
		fmt.Fprintf(&c, "BenchmarkSendLat/size=8-2 1000 %.0f p50-ns %.0f p99-ns\n", v, 4*v)
	}
	old, err := ReadSet(strings.NewReader(o.String()), "old", nil)
	require.NoError(t, err)
	cur, err := ReadSet(strings.NewReader(c.String()), "new", nil)
	require.NoError(t, err)
	rep := Compare(old, cur, Options{Alpha: 0.05, Threshold: 0.05})
	require.Len(t, rep.Families, 1)
	assert.Equal(t, "p50-ns", rep.Families[0].Unit)
	assert.Equal(t, ExitOK, rep.ExitCode(false, false), "p50-ns did not move")
	require.Len(t, rep.AlsoWorseRows(), 1)
	assert.Equal(t, "p99-ns", rep.AlsoWorseRows()[0].Unit)
	var out strings.Builder
	rep.WriteSummary(&out)
	assert.Contains(t, out.String(), "WORSE (not the deciding unit p50-ns; does not fail, look at it): SendLat/size=8-2 p99-ns")
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
		{"unknown direction", 0, 0.20, 0.001, true, false, Unknown},
		{"too few runs", -1, 0.20, 0.1, false, true, Undecided},
	}
	for _, tt := range tests {
		rep := &Report{Opt: Options{Alpha: 0.05}, Families: []Family{{Significant: tt.significant, Undecided: tt.undecided, Level: 0.05}}}
		r := Row{Better: tt.better, Delta: tt.delta, Threshold: 0.05, PWorse: tt.pWorse, PBetter: 1, Deciding: true}
		r.Old.Center, r.New.Center = 100, 100*(1+tt.delta)
		assert.Equal(t, tt.want, rep.verdict(r), tt.name)
	}
	improved := &Report{Opt: Options{Alpha: 0.05}, Lone: 0.05, Families: []Family{{Improved: true}}}
	up := Row{Better: 1, Delta: 0.2, Threshold: 0.05, PWorse: 1, PBetter: 0.001, Deciding: true}
	up.Old.Center, up.New.Center = 100, 120
	assert.Equal(t, Improved, improved.verdict(up))

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

// TestReadSetLabels: the replication labels and the clock's calibrated
// frequency, which differ from one process to the next, never split a
// benchmark; the clock's name does.
func TestReadSetLabels(t *testing.T) {
	run := func(proc, mhz, clock string) string {
		return fmt.Sprintf("rdma-process: %s\nrdma-boot: b1\nrdma-clock: %s\nrdma-clock-mhz: %s\nBenchmarkA-2 10 100 ns/op\n", proc, clock, mhz)
	}
	s, err := ReadSet(strings.NewReader(run("p1", "2599.998", "tsc")+run("p2", "2599.981", "tsc")), "in", nil)
	require.NoError(t, err)
	require.Len(t, s.Order, 1)
	b := s.Benches[s.Order[0]]
	assert.Equal(t, Key{Name: "A-2", Config: "rdma-clock=tsc"}, b.Key)
	assert.Equal(t, []string{"p1", "p2"}, b.Procs)
	assert.Equal(t, 2, b.Runs)

	s, err = ReadSet(strings.NewReader(run("p1", "2599.998", "tsc")+run("p2", "0", "monotonic")), "in", nil)
	require.NoError(t, err)
	assert.Len(t, s.Order, 2, "another clock is another configuration")
}
