package main

import (
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
