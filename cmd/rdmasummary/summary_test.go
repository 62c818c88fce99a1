package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// summarize runs the command on a file and returns its output by family,
// the first word of a section ("" holds the heading).
func summarize(t *testing.T, path string) map[string]string {
	t.Helper()
	var out, errs bytes.Buffer
	require.Equal(t, 0, run([]string{path}, &out, &errs), errs.String())
	sections := map[string]string{}
	for _, sec := range strings.Split(out.String(), "\n\n") {
		name := ""
		if words := strings.Fields(sec); len(words) > 0 && !strings.HasPrefix(sec, "Summary of ") {
			name = words[0]
		}
		sections[name] = sec
	}
	return sections
}

// line returns the line of sec that starts, after its indent, with
// prefix.
func line(t *testing.T, sec, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	require.Failf(t, "no such line", "no line starting with %q in\n%s", prefix, sec)
	return ""
}

// assertHas checks that l contains every string of contains and none of
// absent.
func assertHas(t *testing.T, l string, contains, absent []string) {
	t.Helper()
	for _, c := range contains {
		assert.Contains(t, l, c)
	}
	for _, a := range absent {
		assert.NotContains(t, l, a)
	}
}

func TestSummaryOfARun(t *testing.T) {
	s := summarize(t, "testdata/results.txt")
	tests := []struct {
		name, family, line string
		contains, absent   []string
	}{
		{"heading names the setup and the units", "", "rdma-device",
			[]string{"rdma-device: rxe0", "rdma-provider: rxe", "kernel: 6.1.0-57-amd64"}, nil},
		{"ping-pong families show latency only", "SendLat", "size",
			[]string{"p50", "p99", "p99.9"}, []string{"MB/s", "msgs/s"}},
		{"a latency row with its intervals", "SendLat", "8 ",
			[]string{"21.9 µs ±7%", "107 µs ±35%", "294 µs ±213%"}, []string{"∞"}},
		{"latency in ms where it is that long", "SendLat", "1024",
			[]string{"3.46 ms ±99%", "5.98 ms", "9.12 ms"}, nil},
		{"the varying key is a column, the rest the heading", "AtomicLat", "AtomicLat",
			[]string{"transport=RC", "GOMAXPROCS=2"}, []string{"op="}},
		{"streaming families show rates, decimal", "SendBW", "RC",
			[]string{"0.71 ±23%", "11.1k ±23%", "32.8 µs"}, nil},
		{"fewer than 6 runs: medians without an interval", "WriteBW", "3 ",
			[]string{"28.9", "7.05k", "119 µs", "450 µs", "684 µs"}, []string{"±", "∞"}},
		{"port counters that moved", "WriteBW", "port counters",
			[]string{"1 of 1 rows", "ack_deferred, completer_retry_err, duplicate_request"}, []string{"preempted"}},
		{"the loops' preemptions on a line of their own", "WriteBW", "timed loops preempted",
			[]string{"median 12 per run, 7–20 over 3 runs"}, nil},
		{"other rates where a family has them", "RegMR", "n",
			[]string{"ops/s", "p50"}, []string{"MB/s", "msgs/s"}},
		{"one run", "RegMR", "1 ",
			[]string{"19.2k", "48.0 µs", "91.0 µs", "120 µs"}, []string{"±"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sec, ok := s[tt.family]
			require.True(t, ok, "no family %q", tt.family)
			assertHas(t, line(t, sec, tt.line), tt.contains, tt.absent)
		})
	}
	assert.NotContains(t, s["SendLat"], "MB/s", "no MB/s anywhere in a ping-pong family")
	assert.NotContains(t, s["RegMR"], "port counters", "no counter line where none moved")
}

// TestSummaryUnitsAsWritten reads rdmaplot's fixture: MB/s stays in
// 10^6 bytes as testing.B wrote it (benchfmt would tidy it into B/s and
// benchstat print it with binary prefixes), and families without
// latency units get no latency columns.
func TestSummaryUnitsAsWritten(t *testing.T) {
	s := summarize(t, filepath.Join("..", "rdmaplot", "testdata", "results.txt"))
	tests := []struct {
		family, line string
		contains     []string
		absent       []string
	}{
		{"WriteBW", "1048576", []string{"1086 ±2%", "1.04k ±2%", "7.82 ms"}, []string{"GiB", "MiB", "Ki"}},
		{"WriteBW", "8 ", []string{"7.01 ±3%", "876k ±3%", "9.11 µs"}, nil},
		{"SendBW", "size", []string{"MB/s", "msgs/s"}, []string{"p50"}},
		{"WriteLat", "size", []string{"p50", "p99", "p99.9"}, []string{"MB/s", "msgs/s"}},
	}
	for _, tt := range tests {
		t.Run(tt.family+" "+tt.line, func(t *testing.T) {
			assertHas(t, line(t, s[tt.family], tt.line), tt.contains, tt.absent)
		})
	}
}

// TestSummaryNotANumber: NaN and Inf values (the testing package prints
// NaN ns/op for a run it could not time) are no samples: the medians
// come from the numbers.
func TestSummaryNotANumber(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nan.txt")
	require.NoError(t, os.WriteFile(path, []byte(
		"BenchmarkWriteBW/size=8-2 \t 1 \t 100 ns/op \t 7.00 MB/s\n"+
			"BenchmarkWriteBW/size=8-2 \t 1 \t 100 ns/op \t NaN MB/s\n"+
			"BenchmarkWriteBW/size=8-2 \t 1 \t 100 ns/op \t +Inf MB/s\n"), 0o644))
	s := summarize(t, path)
	assertHas(t, line(t, s["WriteBW"], "3 "), []string{"7.00"}, []string{"NaN", "Inf"})
}

// TestSummaryNameOutsideGrammar: a name benchname does not parse (a part
// without '=') is not split: it is a family of its own, named whole.
func TestSummaryNameOutsideGrammar(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd.txt")
	require.NoError(t, os.WriteFile(path, []byte(
		"BenchmarkOdd/plain-2 \t 1 \t 100 ns/op \t 5.00 MB/s\n"+
			"BenchmarkWriteBW/size=8-2 \t 1 \t 100 ns/op \t 7.00 MB/s\n"), 0o644))
	s := summarize(t, path)
	require.Contains(t, s, "Odd/plain-2")
	assertHas(t, line(t, s["Odd/plain-2"], "1 "), []string{"5.00"}, []string{"plain", "GOMAXPROCS"})
	assertHas(t, s["WriteBW"], []string{"WriteBW size=8 GOMAXPROCS=2"}, nil)
}

func TestCell(t *testing.T) {
	tests := []struct {
		name             string
		vals             []float64
		median, interval string
	}{
		{"six runs: an interval", []float64{100, 101, 99, 102, 98, 100}, "100", "±2%"},
		{"five runs: none", []float64{100, 101, 99, 102, 98}, "100", ""},
		{"one run", []float64{42}, "42.0", ""},
		{"all equal", []float64{5, 5, 5, 5, 5, 5}, "5.00", "±0%"},
		{"no value", nil, "—", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ci := cell(tt.vals, plain)
			assert.Equal(t, tt.median, m)
			assert.Equal(t, tt.interval, ci)
		})
	}
}

func TestFormats(t *testing.T) {
	tests := []struct {
		format func(float64) string
		in     float64
		want   string
	}{
		{plain, 1099.54, "1100"},
		{plain, 14.16, "14.2"},
		{plain, 7.013, "7.01"},
		{plain, 0.1234, "0.123"},
		{plain, 0, "0"},
		{decimal, 876528, "877k"},
		{decimal, 1049, "1.05k"},
		{decimal, 999, "999"},
		{decimal, 2.5e6, "2.50M"},
		{decimal, 3e9, "3.00G"},
		{nanos, 950, "950 ns"},
		{nanos, 9141, "9.14 µs"},
		{nanos, 16051796, "16.1 ms"},
		{nanos, 2.5e9, "2.50 s"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.format(tt.in), "%v", tt.in)
	}
}

func TestRunFailures(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.txt")
	require.NoError(t, os.WriteFile(empty, []byte("goos: linux\nnot a result\n"), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no file named", nil, 2, "usage"},
		{"two files", []string{"a", "b"}, 2, "usage"},
		{"missing file", []string{filepath.Join(dir, "none.txt")}, 1, "no such file"},
		{"no results", []string{empty}, 1, "no benchmark results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			assert.Equal(t, tt.code, run(tt.args, &out, &errs))
			assert.Contains(t, errs.String(), tt.msg)
			assert.Empty(t, out.String())
		})
	}
}
