package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// Bad incast flags are refused with the value and the limit, before any
// node is dialled (no agent listens on the port given).
func TestIncastUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nodes", "a,b", "-nodes-file", "f"}, `-nodes "a,b" and -nodes-file "f": give one of them`},
		{[]string{"-iters", "0"}, "-iters 0: want 1..1073741824"},
		{[]string{"-victim-iters", "-1"}, "-victim-iters -1: want 1..1073741824"},
		{[]string{"-victim-delay", "2h"}, "-victim-delay 2h0m0s: want 0..1h"},
		{[]string{"-runs", "101"}, "-runs 101: want 1..100"},
		{[]string{"-case-timeout", "0s"}, "-case-timeout 0s: must be positive"},
		{[]string{"-min-overlap", "1.5"}, "-min-overlap 1.5: want 0..1"},
		{[]string{"-scenario", "WriteLat/size=8"}, "-scenario WriteLat/size=8: a latency scenario; a sender streams"},
		{[]string{"-victim", "WriteBW/size=65536"}, "-victim WriteBW/size=65536: not a latency scenario"},
		{[]string{"-scenario", "Nope/size=1"}, "-scenario:"},
		{[]string{"-o", ""}, `-o "": name the result file`},
		{[]string{"-nodes", "n1,n2,n3", "-receivers", "n9", "-port", "1"}, `-receivers: "n9" is not one of the 3 nodes`},
		{[]string{"-nodes", "n1,n2,n3", "-senders", "3", "-port", "1"}, "3 senders: want 2..2 for 3 nodes"},
		{[]string{"-nodes", "n1,n2,n3", "-senders", "two", "-port", "1"}, `-senders: "two" is not a count`},
		{[]string{"-nodes", "n1,n2", "-port", "1"}, "2 nodes: want 3..100000"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			dir := t.TempDir()
			code, out, errOut := runCmd(append([]string{"incast", "-o", filepath.Join(dir, "x.txt")}, tc.args...)...)
			assert.Equal(t, 2, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tc.want)
			_, err := os.Stat(filepath.Join(dir, "x.txt"))
			assert.True(t, os.IsNotExist(err), "the result file was made before the check")
		})
	}
}

// incastStream is two runs of one 2:1 case, as coord.RunIncast writes
// it (values chosen so that the medians are easy to check).
const incastStream = `pkg: github.com/rdmabench/rdmabench/cmd/rdmafabric
Unit p50-ns better=lower
Unit p99-ns better=lower
Unit p99.9-ns better=lower
BenchmarkIncast/dst=n1/n=2/flow=victim-idle/src=n1/bench=WriteLat/size=8-1	1000	40000 ns/op	20000 p50-ns	50000 p99-ns	90000 p99.9-ns
Unit fct-ns better=lower
BenchmarkIncast/dst=n1/n=2/flow=sender/src=n2/bench=WriteBW/size=65536-1	500	10000000 ns/op	6.5 MB/s	5000000000 fct-ns
BenchmarkIncast/dst=n1/n=2/flow=sender/src=n3/bench=WriteBW/size=65536-1	500	12000000 ns/op	5.4 MB/s	6000000000 fct-ns
BenchmarkIncast/dst=n1/n=2/flow=victim/src=n1/bench=WriteLat/size=8-1	1000	90000 ns/op	60000 p50-ns	300000 p99-ns	900000 p99.9-ns
Unit fct-max-ns better=lower
Unit fct-p50-ns better=lower
Unit jain better=higher
Unit sender-skew-ns better=lower
Unit victim-overlap better=higher
Unit victim-p50-x better=lower
Unit victim-p99-x better=lower
Unit victim-p99.9-x better=lower
BenchmarkIncast/dst=n1/n=2/flow=case/bench=WriteBW/size=65536-1	1	11.2 MB/s	6000000000 fct-max-ns	5500000000 fct-p50-ns	0.992 jain	300000000 sender-skew-ns	0.95 victim-overlap	3 victim-p50-x	6 victim-p99-x	10 victim-p99.9-x
BenchmarkIncast/dst=n1/n=2/flow=victim-idle/src=n1/bench=WriteLat/size=8-1	1000	40000 ns/op	20000 p50-ns	50000 p99-ns	90000 p99.9-ns
BenchmarkIncast/dst=n1/n=2/flow=sender/src=n2/bench=WriteBW/size=65536-1	500	10000000 ns/op	6.5 MB/s	5000000000 fct-ns
BenchmarkIncast/dst=n1/n=2/flow=sender/src=n3/bench=WriteBW/size=65536-1	500	12000000 ns/op	5.4 MB/s	6000000000 fct-ns
BenchmarkIncast/dst=n1/n=2/flow=victim/src=n1/bench=WriteLat/size=8-1	1000	90000 ns/op	60000 p50-ns	300000 p99-ns	900000 p99.9-ns
BenchmarkIncast/dst=n1/n=2/flow=case/bench=WriteBW/size=65536-1	1	11.2 MB/s	6000000000 fct-max-ns	5500000000 fct-p50-ns	0.992 jain	300000000 sender-skew-ns	0.5 victim-overlap	3 victim-p50-x	6 victim-p99-x	10 victim-p99.9-x
fabric.incast.congestion-counters: not counted by these devices (none of np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled, rp_cnp_ignored; rxe and siw have none)
`

// The report prints a case's medians, the victim idle → under incast,
// marks a run whose victim overlapped the incast too little, and passes
// the congestion-counter note on.
func TestIncastReport(t *testing.T) {
	file := filepath.Join(t.TempDir(), "incast.txt")
	require.NoError(t, os.WriteFile(file, []byte(incastStream), 0o644))
	code, out, errOut := runCmd("incast-report", file)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	assert.Equal(t, []string{"receiver", "N", "runs", "MB/s", "jain", "FCT", "p50", "ms", "FCT", "max", "ms", "skew", "ms",
		"victim", "p50", "µs", "p99", "µs", "p99.9", "µs", "p99", "×idle", "overlap"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"n1", "2", "2", "11.2", "0.992", "5500.0", "6000.0", "300.0", "20.0→60.0", "50.0→300.0", "90.0→900.0", "6.00", "0.72"}, strings.Fields(lines[1]))
	assert.Contains(t, out, "overlap < 0.90) in: n1 n=2 (least 0.50)")
	assert.Contains(t, out, "fabric.incast.congestion-counters: not counted by these devices")

	code, out, _ = runCmd("incast-report", "-expect-victim-p99", "5", "-min-overlap", "0.7", file)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "PASS: every case's victim p99 is above 5.00× idle")
	code, out, _ = runCmd("incast-report", "-expect-victim-p99", "6", "-min-overlap", "0.7", file)
	assert.Equal(t, 1, code, "6× is not above 6×")
	assert.Contains(t, out, "FAIL: n1 n=2: the victim's p99 is 6.00× idle, not above 6.00×")
	code, out, _ = runCmd("incast-report", "-expect-victim-p99", "5", file)
	assert.Equal(t, 1, code, "a median overlap of 0.72 is under the default 0.9")
	assert.Contains(t, out, "FAIL: n1 n=2: the victim ran inside the incast for 0.72 of its run (median), under 0.90: not judged")

	code, _, errOut = runCmd("incast-report", filepath.Join(t.TempDir(), "none.txt"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "none.txt")
	empty := filepath.Join(t.TempDir(), "empty.txt")
	require.NoError(t, os.WriteFile(empty, []byte("pkg: x\n"), 0o644))
	code, _, errOut = runCmd("incast-report", empty)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no incast case in the stream")
}

// The real runs of ci/fabric's incast step (four TCG guests, 3:1 into
// node1, testdata/incast-*): each case row holds to the flow rows it is
// computed from, the victim's p99 through the bottleneck is above 2×
// idle, and the aggregate falls with the bottleneck 20% lower.
func TestIncastRealRuns(t *testing.T) {
	for _, run := range []string{"incast-5a2ffc4-", "incast-534c726-", "incast-bfbfd5c-", "incast-9f413e8-delay1s-"} {
		t.Run(run, func(t *testing.T) { realIncast(t, run) })
	}
}

func realIncast(t *testing.T, run string) {
	agg := make(map[string]float64)
	for _, name := range []string{"open", "bottleneck", "bottleneck80"} {
		data, err := os.ReadFile(filepath.Join("testdata", run+name+".txt"))
		require.NoError(t, err)
		cases, _, err := readIncast(data)
		require.NoError(t, err)
		require.NotEmpty(t, cases, name)
		for _, c := range cases {
			runs := len(c.vals["jain"])
			require.Positive(t, runs)
			for i := range runs {
				assert.True(t, c.vals["jain"][i] >= 1.0/3 && c.vals["jain"][i] <= 1, "%s %s run %d: jain %v", name, c.dst, i, c.vals["jain"][i])
				assert.GreaterOrEqual(t, c.vals["fct-max-ns"][i], c.vals["fct-p50-ns"][i], name)
				ov := c.vals["victim-overlap"][i]
				assert.True(t, ov >= 0 && ov <= 1, "%s: overlap %v", name, ov)
				assert.InDelta(t, c.load["p99-ns"][i]/c.idle["p99-ns"][i], c.vals["victim-p99-x"][i], 1e-9, name)
			}
		}
		c := cases[0] // node1: the open sweep's first receiver, and the bottleneck's
		require.Equal(t, "node1", c.dst)
		agg[name] = stats.Median(c.vals["MB/s"])
		if name != "open" {
			var out strings.Builder
			code := expectVictim(cases, 2, 0.9, &out)
			if stats.Median(c.vals["victim-overlap"]) >= 0.9 {
				assert.Equal(t, 0, code, "%s: the victim's p99 through the bottleneck: %s", name, out.String())
			} else {
				assert.Equal(t, 1, code)
				assert.Contains(t, out.String(), "not judged")
			}
		}
	}
	assert.Less(t, agg["bottleneck80"], agg["bottleneck"])
	assert.Less(t, agg["bottleneck"], agg["open"])
}

// incast-report reads several stored streams, checks them all and
// draws one chart of every case.
func TestIncastReportChart(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "incast-5a2ffc4-bottleneck*.txt"))
	require.NoError(t, err)
	require.Len(t, files, 2)
	prefix := filepath.Join(t.TempDir(), "chart")
	code, out, errOut := runCmd(append([]string{"incast-report", "-expect-victim-p99", "2", "-chart", prefix}, files...)...)
	require.Equal(t, 0, code, errOut)
	for _, f := range files {
		assert.Contains(t, out, f+":\n")
	}
	assert.Contains(t, out, "PASS: every case's victim p99 is above 2.00× idle")
	for _, ext := range []string{".svg", ".png"} {
		st, err := os.Stat(prefix + ext)
		require.NoError(t, err)
		assert.Positive(t, st.Size())
	}
	assert.ErrorContains(t, incastChart(nil, prefix), "no case")
	code, _, errOut = runCmd("incast-report")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "want at least one result file")
}
