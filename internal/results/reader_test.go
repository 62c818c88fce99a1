package results

import (
	"errors"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

// readAll reads text to the end and returns copies of its results.
func readAll(t *testing.T, rd *Reader) []Result {
	t.Helper()
	var out []Result
	for rd.Scan() {
		res := *rd.Result()
		res.Values = slices.Clone(res.Values)
		out = append(out, res)
	}
	return out
}

func TestReadValuesAsWritten(t *testing.T) {
	const in = "goos: linux\nrdma-device: rxe0\ncpu: Fancy CPU @ 3GHz\nUnit p99-ns better=lower\n" +
		"BenchmarkWriteLat/transport=RC/size=8-2 \t 1000 \t 30000 ns/op \t 4.5 MB/s \t 31000 p99-ns \t 2 duplicate_request/run\n"
	rd := NewReader(strings.NewReader(in), "in.txt")
	require.True(t, rd.Scan())
	res := rd.Result()
	assert.Equal(t, "WriteLat/transport=RC/size=8-2", res.Name)
	assert.Equal(t, []Value{
		{Unit: "ns/op", Value: 30000, Tidy: "sec/op"},
		{Unit: "MB/s", Value: 4.5, Tidy: "B/s"},
		{Unit: "p99-ns", Value: 31000, Tidy: "p99-sec"},
		{Unit: "duplicate_request/run", Value: 2, Tidy: "duplicate_request/run"},
	}, res.Values, "units and values as written, not tidied")
	file, line := res.Pos()
	assert.Equal(t, "in.txt", file)
	assert.Equal(t, 5, line)
	assert.Equal(t, "rxe0", res.Config("rdma-device"))
	assert.Empty(t, res.Config("rdma-fw"))
	assert.Equal(t, map[string]string{"goos": "linux", "rdma-device": "rxe0", "cpu": "Fancy CPU @ 3GHz"}, maps.Collect(res.Configs()))
	assert.False(t, rd.Scan())
	require.NoError(t, rd.Err())
	assert.Equal(t, -1, rd.Units().GetBetter("p99-ns"), "the Unit line")
	assert.Equal(t, 1, rd.Units().GetBetter("MB/s"), "benchfmt's own")
	assert.Zero(t, rd.Units().GetBetter("duplicate_request/run"), "no direction")
	assert.Empty(t, rd.Skipped())
}

// Malformed lines and values that are no number are left out and named,
// in file order; the results around them are read.
func TestReadSkipped(t *testing.T) {
	const in = "BenchmarkA-2 1 1 ns/op\n" +
		"BenchmarkA-2 1 xx ns/op\n" +
		"BenchmarkA-2 1 NaN ns/op 3 MB/s +Inf p50-ns\n" +
		"BenchmarkA-2 1 2 ns/op\n"
	rd := NewReader(strings.NewReader(in), "f")
	got := readAll(t, rd)
	require.NoError(t, rd.Err())
	require.Len(t, got, 3)
	assert.Equal(t, []Value{{Unit: "MB/s", Value: 3, Tidy: "B/s"}}, got[1].Values)
	assert.Equal(t, []string{
		"f:2: parsing measurement: invalid syntax",
		"f:3: non-finite value NaN ns/op dropped",
		"f:3: non-finite value +Inf p50-ns dropped",
	}, rd.Skipped())
}

// Strict: the first malformed line ends the reading with its error.
func TestReadStrict(t *testing.T) {
	rd := NewReader(strings.NewReader("BenchmarkA 1 1 ns/op\nBenchmarkA 1 NaN ns/op\nBenchmarkA 1 xx ns/op\nBenchmarkA 1 3 ns/op\n"), "f")
	rd.Strict()
	got := readAll(t, rd)
	assert.Len(t, got, 2, "the results before it")
	var se *benchfmt.SyntaxError
	require.ErrorAs(t, rd.Err(), &se)
	assert.ErrorContains(t, rd.Err(), "f:3: parsing measurement")
	assert.Equal(t, []string{"f:2: non-finite value NaN ns/op dropped"}, rd.Skipped(), "a value that is no number is no malformed line")
	assert.False(t, rd.Scan(), "stopped for good")
}

func TestReadIOError(t *testing.T) {
	boom := errors.New("boom")
	rd := NewReader(io.MultiReader(strings.NewReader("BenchmarkA 1 1 ns/op\n"), iotest.ErrReader(boom)), "f")
	assert.Len(t, readAll(t, rd), 1)
	assert.ErrorIs(t, rd.Err(), boom)
}

// FinalConfig holds every configuration line wherever it stands, as
// benchfmt reads them.
func TestFinalConfig(t *testing.T) {
	const in = "fabric.node.a.mtu: 1024\r\n" +
		"goos: linux\n" +
		"fabric.node.a.governor: powersave\n" +
		"BenchmarkFabric/src=a/dst=b 1 1 ns/op\n" +
		"fabric.node.a.mtu: 4096\n" + // a later value wins
		"fabric.node.a.governor:\n" + // an empty value deletes
		"fabric.node.a.Fw: 1\n" + // not a key: upper case
		"fabric.node.a.kernel:6.8\n" + // not a key: no space after the colon
		"ok  \tgithub.com/x\t1.2s\n" + // not a key: a space
		"Unit MB/s better=higher\n" +
		"fabric.node.a.counter.symbol_error: 7" // after the last result, without a newline
	rd := NewReader(strings.NewReader(in), "f")
	require.Len(t, readAll(t, rd), 1)
	require.NoError(t, rd.Err())
	want := map[string]string{"goos": "linux", "fabric.node.a.mtu": "4096", "fabric.node.a.counter.symbol_error": "7"}
	assert.Equal(t, want, rd.FinalConfig())
	rd.FinalConfig()["goos"] = "plan9"
	assert.Equal(t, want, rd.FinalConfig(), "a copy")
}

func TestConfigTapOverlong(t *testing.T) {
	tap := newConfigTap()
	_, err := tap.Write([]byte("a: " + strings.Repeat("x", maxTapLine) + "\nb: 1\n"))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"b": "1"}, tap.keys, "a line longer than maxTapLine is no configuration line")
}

func TestPerRun(t *testing.T) {
	for _, tt := range []struct {
		unit    string
		perRun  bool
		counter string
	}{
		{"duplicate_request/run", true, "duplicate_request"},
		{Preempted, true, ""},
		{"ns/op", false, ""},
		{"runs", false, ""},
	} {
		assert.Equal(t, tt.perRun, PerRun(tt.unit), tt.unit)
		name, ok := Counter(tt.unit)
		assert.Equal(t, tt.counter != "", ok, tt.unit)
		assert.Equal(t, tt.counter, name, tt.unit)
	}
}
