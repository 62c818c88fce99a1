package gate

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Port counters (units ending in /run) appear only in the runs where
// they moved: the gate reads an absent counter as 0, never as a missing
// unit, and keeps one sample per run.
func TestCounterUnitsAreZeroFilled(t *testing.T) {
	const head = "rdma-device: rxe0\nUnit p50-ns better=lower\n"
	line := func(p50 int, counters string) string {
		return "BenchmarkSendLat/transport=RC/size=8-2 1000 30000 ns/op " + counters + " " + strconv.Itoa(p50) + " p50-ns\n"
	}
	old := head + line(30000, "") + line(30100, "2 duplicate_request/run") + line(29900, "") + line(30050, "")
	cur := head + line(30020, "") + line(30080, "") + line(29950, "1 completer_retry_err/run") + line(30010, "")

	oset, err := ReadSet(strings.NewReader(old), "old", nil)
	require.NoError(t, err)
	ns, err := ReadSet(strings.NewReader(cur), "new", nil)
	require.NoError(t, err)
	ob := oset.Benches[oset.Order[0]]
	assert.Equal(t, 4, ob.Runs)
	assert.Equal(t, []float64{0, 2, 0, 0}, ob.Samples["duplicate_request/run"])

	rep := Compare(oset, ns, Options{Alpha: 0.05, Threshold: 0.05})
	assert.Empty(t, rep.Missing)
	got := map[string]Row{}
	for _, r := range rep.Rows {
		got[r.Unit] = r
	}
	require.Contains(t, got, "duplicate_request/run", "moved only in OLD: compared with NEW's zeros")
	require.Contains(t, got, "completer_retry_err/run", "moved only in NEW: compared with OLD's zeros")
	assert.Equal(t, 4, got["duplicate_request/run"].Cmp.N2)
	assert.Equal(t, Unknown, got["duplicate_request/run"].Verdict, "no Unit line gives counters a direction: shown, not gated")
	assert.Equal(t, ExitOK, rep.ExitCode(false, false))
}

// A unit that NEW no longer reports fails the gate only if it was gated:
// one with its threshold off (max-ns) or without a direction is a
// warning. (Units ending in /run, preempted/run too, are zero-filled
// instead: see above.)
func TestUnitOnlyInOld(t *testing.T) {
	const head = "rdma-device: rxe0\nUnit p50-ns better=lower\nUnit max-ns better=lower\n"
	runs := func(values string) *Set {
		set, err := ReadSet(strings.NewReader(head+strings.Repeat("BenchmarkRegMR/op=reg/size=4096-2 1000 30000 ns/op "+values+"\n", 4)), "f", nil)
		require.NoError(t, err)
		return set
	}
	old := runs("100 p50-ns 900 max-ns 7 hops")
	opt := Options{Alpha: 0.05, Threshold: 0.05, UnitThresholds: defaultUnitThresholds}
	for _, tc := range []struct {
		name, cur string
		missing   []string
		warned    []string
		exit      int
	}{
		{"nothing dropped", "100 p50-ns 900 max-ns 7 hops", nil, nil, ExitOK},
		{"ungated units dropped", "100 p50-ns", nil, []string{"unit max-ns is only in OLD (not gated)", "unit hops is only in OLD (not gated)"}, ExitOK},
		{"a gated unit dropped", "900 max-ns 7 hops", []string{"RegMR/op=reg/size=4096-2: unit p50-ns"}, nil, ExitRegression},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := Compare(old, runs(tc.cur), opt)
			assert.Equal(t, tc.missing, rep.Missing)
			for _, w := range tc.warned {
				assert.True(t, slices.ContainsFunc(rep.Warnings, func(s string) bool { return strings.Contains(s, w) }), "%q in %q", w, rep.Warnings)
			}
			assert.Equal(t, tc.exit, rep.ExitCode(false, true))
		})
	}
}

// A -unit-threshold naming a unit no benchmark reports (a typo) is a
// warning: it would have no effect.
func TestNamedUnitUnknown(t *testing.T) {
	const file = "rdma-device: rxe0\nUnit p99.9-ns better=lower\nBenchmarkWriteLat/size=8-2 1000 30000 ns/op 900 p99.9-ns\n"
	set, err := ReadSet(strings.NewReader(strings.Repeat(file, 1)), "f", nil)
	require.NoError(t, err)
	opt, err := NewOptions(0.05, "5%", "p999-ns=10%,p99.9-ns=20%")
	require.NoError(t, err)
	rep := Compare(set, set, opt)
	warned := func(unit string) bool {
		return slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "-unit-threshold names "+unit+",") })
	}
	assert.True(t, warned("p999-ns"), "%q", rep.Warnings)
	assert.False(t, warned("p99.9-ns"), "a unit the files report is no typo")
}
