package engine

import (
	"flag"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFixedCount(t *testing.T) {
	for _, tc := range []struct {
		benchtime string
		want      int
	}{
		{"1s", 0},
		{"0.1s", 0},
		{"1x", 1},
		{"4000x", 4000},
		{"x", 0},
		{"-3x", 0},
		{"10xx", 0},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.String("test.benchtime", "1s", "")
		require.NoError(t, fs.Set("test.benchtime", tc.benchtime))
		assert.Equal(t, tc.want, fixedCount(fs.Lookup("test.benchtime")), tc.benchtime)
	}
	assert.Zero(t, fixedCount(nil), "no -test.benchtime flag")
}

// TestProbeCallSkipsSetup runs a benchmark at a fixed count the way
// testing does and checks that only the discarded b.N = 1 call is a
// probe.
func TestProbeCallSkipsSetup(t *testing.T) {
	f := flag.Lookup("test.benchtime")
	require.NotNil(t, f, "go test registers -test.benchtime")
	old := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(old) })

	for _, tc := range []struct {
		benchtime string
		wantNs    []int // the b.N of the calls that did their work
	}{
		{"5x", []int{5}},
		{"1x", []int{1}},
	} {
		require.NoError(t, f.Value.Set(tc.benchtime))
		var worked []int
		testing.Benchmark(func(b *testing.B) {
			if probeCall(b) {
				return
			}
			worked = append(worked, b.N)
		})
		assert.Equal(t, tc.wantNs, worked, tc.benchtime)
	}
}
