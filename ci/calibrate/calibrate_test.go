package main

import (
	"bytes"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBenchRegexp(t *testing.T) {
	re := benchRegexp(mustName("SendBW/transport=RC/size=4096/qd=128"))
	assert.Equal(t, "^BenchmarkSendBW$/^transport=RC$/^size=4096$/^qd=128$", re)
	// Each level must match exactly: size=4096 must not match size=40960.
	lvl := regexp.MustCompile(strings.Split(re, "/")[2])
	assert.True(t, lvl.MatchString("size=4096"))
	assert.False(t, lvl.MatchString("size=40960"))
}

func TestScenarios(t *testing.T) {
	names := map[string]bool{}
	for _, s := range scenarios {
		assert.False(t, names[s.name], "duplicate %s", s.name)
		names[s.name] = true
		// perftest's -c (RC by default) is the benchmark's transport.
		want := "RC"
		if i := slices.Index(s.args, "-c"); i >= 0 {
			want = s.args[i+1]
		}
		tr, _ := s.bench.Get("transport")
		assert.Equal(t, want, tr, s.name)
		assert.Zero(t, s.bench.Procs, "%s: go test adds the -GOMAXPROCS suffix", s.name)
		assert.NotEmpty(t, s.figures, s.name)
		assert.NotEmpty(t, s.differs, s.name)
		for _, f := range s.figures {
			assert.Equal(t, client, f.side, "%s %s: the requester's row is compared", s.name, f.label)
			break
		}
		if s.latency() {
			assert.Equal(t, latFigures, s.figures, s.name)
		} else {
			assert.Contains(t, s.args, "-Q", "%s: our streams signal every WR (signal=1): perftest needs -Q 1", s.name)
			assert.Contains(t, s.args, "-t", "%s: tx depth must match qd", s.name)
		}
		if op, ok := s.bench.Get("op"); ok {
			assert.Contains(t, s.args, map[string]string{"fadd": "FETCH_AND_ADD", "cas": "CMP_AND_SWAP"}[op], s.name)
		}
	}
	for _, n := range []string{"send_lat UC 8 B", "send_lat UD 8 B", "atomic_lat cas"} {
		assert.True(t, names[n], "%s: issue #27's scenarios", n)
	}
	got, err := find("lat")
	require.NoError(t, err)
	assert.Len(t, got, 8, "seven by hand, write_lat through rdma_cm")
	got, err = find("write_bw,read_lat")
	require.NoError(t, err)
	assert.Len(t, got, 2)
	_, err = find("nothing")
	assert.Error(t, err)
}

func TestSameBench(t *testing.T) {
	const name = "SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false"
	want := mustName(name)
	tests := []struct {
		got  string
		same bool
		why  string
	}{
		{name + "-2", true, "with the -GOMAXPROCS suffix"},
		{name, true, "GOMAXPROCS=1 prints none"},
		{name + "/bidir=false-2", true, "an axis added later at its neutral value"},
		{name + "/bidir=true-2", false, "an added axis at another value"},
		{"SendBW/transport=RC/size=40960/qd=128/batch=1/signal=1/mode=poll/srq=false-2", false, "another size"},
		{"SendLat/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false-2", false, "another family"},
		{"SendBW/transport=RC/qd=128/size=4096/batch=1/signal=1/mode=poll/srq=false-2", false, "parts in another order"},
		{name + "/bidir-2", false, "not a name of the grammar"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.same, sameBench(tt.got, want), "%s: %s", tt.why, tt.got)
	}
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	assert.True(t, math.IsNaN(median(nil)), "none: NaN")
}

func TestRotate(t *testing.T) {
	cs := contestants(scenarioNamed(t, "write_lat 8 B"), true)
	ids := func(cs []contestant) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.id)
		}
		return strings.Join(out, " ")
	}
	assert.Equal(t, "P1 L1 P2 L2 O C CL", ids(cs))
	firsts := map[string]bool{}
	for i, want := range []string{"P1 L1 P2 L2 O C CL", "L1 P2 L2 O C CL P1", "P2 L2 O C CL P1 L1", "C CL P1 L1 P2 L2 O", "CL P1 L1 P2 L2 O C"} {
		pair := []int{0, 1, 2, 5, 6}[i]
		got := rotate(cs, pair)
		assert.Equal(t, want, ids(got), "pair %d", pair+1)
		firsts[got[0].id] = true
	}
	assert.Equal(t, "P1 L1 P2 L2 O", ids(contestants(scenarioNamed(t, "write_lat 8 B"), false)))
	assert.Equal(t, "P1 B1 P2 B2", ids(contestants(scenarioNamed(t, "write_bw 4 KiB"), true)), "no control for streams")
	assert.Equal(t, "P1 L1 P2 L2 O", ids(contestants(scenarioNamed(t, "read_lat 8 B"), false)))
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		name               string
		values             map[string][]float64
		pt, rb             float64
		like, ptAA, oursAA spread
		own                float64
		inside             bool
	}{
		{
			name:   "latency: pooled L1/P1 and L2/P2",
			values: map[string][]float64{"P1": {10, 20, 10}, "P2": {10, 10, 20}, "L1": {11, 22, 12}, "L2": {10, 11, 20}, "O": {9, 18, 12}},
			pt:     10, rb: 12,
			// L1/P1 1.1 1.1 1.2; L2/P2 1 1.1 1; L2/L1 10/11, 0.5, 20/12.
			like: spread{1.1, 1, 1.2, true}, ptAA: spread{1, 0.5, 2, true}, oursAA: spread{10.0 / 11, 0.5, 5.0 / 3, true},
			own: 0.9, inside: true,
		},
		{
			// B1/P1 0.9 0.92; B2/P2 0.9 0.9; B2/B1 1.01, 89.1/92.
			name:   "bandwidth: B1, B2; outside perftest's band",
			values: map[string][]float64{"P1": {100, 100}, "P2": {101, 99}, "B1": {90, 92}, "B2": {90.9, 89.1}},
			pt:     100, rb: 91,
			like: spread{0.9, 0.9, 0.92, true}, ptAA: spread{1, 0.99, 1.01, true}, oursAA: spread{0.98924, 89.1 / 92, 1.01, true},
			own: math.NaN(), inside: false,
		},
		{
			name:   "perftest only (send_bw's receiver row)",
			values: map[string][]float64{"P1": {5, 7}, "P2": {6, 7}},
			pt:     6, rb: math.NaN(), ptAA: spread{1.1, 1, 1.2, true}, own: math.NaN(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows := summarize("s", figureRecord{Label: "p50", Unit: "µs", Values: tt.values})
			require.Len(t, rows, 1)
			r := rows[0]
			near := func(want, got float64, what string) {
				if math.IsNaN(want) {
					assert.True(t, math.IsNaN(got), "%s: %v, want none", what, got)
					return
				}
				assert.InDelta(t, want, got, 1e-3, what)
			}
			near(tt.pt, r.perftest, "perftest")
			near(tt.rb, r.rdmabench, "rdmabench")
			near(tt.own, r.own, "own")
			for _, s := range []struct {
				what      string
				want, got spread
			}{{"like", tt.like, r.like}, {"perftest A/A", tt.ptAA, r.perftestAA}, {"ours A/A", tt.oursAA, r.oursAA}} {
				require.Equal(t, s.want.ok, s.got.ok, s.what)
				if s.want.ok {
					near(s.want.median, s.got.median, s.what+" median")
					near(s.want.min, s.got.min, s.what+" min")
					near(s.want.max, s.got.max, s.what+" max")
				}
			}
			assert.Equal(t, tt.inside, r.inside())
		})
	}
	// The control's row: C/P1 in the own-definition column.
	rows := summarize("write_lat 8 B", figureRecord{Label: "p50", Unit: "µs",
		Values: map[string][]float64{"P1": {10, 20}, "P2": {10, 20}, "L1": {10, 20}, "L2": {10, 20}, "O": {10, 20}, "C": {12, 24}}})
	require.Len(t, rows, 2)
	assert.Equal(t, "write_lat 8 B [C-only control]", rows[1].scenario)
	assert.InDelta(t, 18, rows[1].rdmabench, 1e-9)
	assert.InDelta(t, 1.2, rows[1].own, 1e-9)
	assert.False(t, rows[1].like.ok, "the control is not like for like")

	// The like-for-like control's row: CL/P1 per pair in the ratio column,
	// perftest's A/A band beside it, no own-definition ratio.
	rows = summarize("write_lat 8 B", figureRecord{Label: "p50", Unit: "µs",
		Values: map[string][]float64{"P1": {10, 20}, "P2": {11, 18}, "L1": {10, 20}, "L2": {10, 20}, "O": {10, 20}, "C": {12, 24}, "CL": {11, 26}}})
	require.Len(t, rows, 3)
	cl := rows[2]
	assert.Equal(t, "write_lat 8 B [C-only control, like for like]", cl.scenario)
	assert.InDelta(t, 18.5, cl.rdmabench, 1e-9)
	require.True(t, cl.like.ok)
	assert.InDelta(t, 1.2, cl.like.median, 1e-9, "median of 1.1 and 1.3")
	assert.InDelta(t, 1.1, cl.like.min, 1e-9)
	assert.InDelta(t, 1.3, cl.like.max, 1e-9)
	assert.Equal(t, rows[0].perftestAA, cl.perftestAA)
	assert.True(t, math.IsNaN(cl.own))
	assert.False(t, cl.inside(), "1.2 lies outside perftest's band 0.9–1.1")
}

// fixtureRecord is a small calibration: write_lat (with the control) and
// send_bw, 2 pairs.
func fixtureRecord() *record {
	return &record{Format: storeFormat, Time: "2026-12-03T08:00:00Z", Commit: "abc1234", BootID: "b", Kernel: "6.1.0-57-amd64",
		Device: "rxe0", Iters: 5000, Runs: 2, CPUs: "requester=0,passive=1(numa-local)",
		Scenarios: []scenarioRecord{
			{Name: "write_lat 8 B", Perftest: "ib_write_lat -s 8 -I 0", Bench: "WriteLat/transport=RC/size=8/inline=false", Differs: "RC; like",
				Order: []string{"P1", "L1", "P2", "L2", "O", "C"}, BenchCounters: "duplicate_request 3",
				Figures: []figureRecord{{Label: "p50", Unit: "µs", PerftestColumn: "ib_write_lat client t_typical[usec]", LikeMetric: "cycle-p50-ns", OwnMetric: "p50-ns",
					Values: map[string][]float64{"P1": {20, 20}, "P2": {21, 19}, "L1": {26, 26}, "L2": {26, 26}, "O": {25, 25}, "C": {24, 24}}}}},
			{Name: "send_bw 4 KiB", Perftest: "ib_send_bw -s 4096 -t 128 -Q 1", Bench: "SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false",
				Order: []string{"P1", "B1", "P2", "B2"},
				Figures: []figureRecord{
					{Label: "bandwidth", Unit: "MB/s", PerftestColumn: "ib_send_bw client BW average[MB/sec]", LikeMetric: "MB/s",
						Values: map[string][]float64{"P1": {35, 35}, "P2": {35, 35}, "B1": {35, 35}, "B2": {35, 35}}},
					{Label: "receiver bandwidth (perftest only)", Unit: "MB/s", PerftestColumn: "ib_send_bw server BW average[MB/sec]",
						Values: map[string][]float64{"P1": {34, 34}, "P2": {34, 34}}},
				}},
		}}
}

func TestPrintTable(t *testing.T) {
	for _, md := range []bool{false, true} {
		var b bytes.Buffer
		printTable(&b, fixtureRecord(), md)
		out := b.String()
		t.Logf("markdown=%v:\n%s", md, out)
		for _, want := range []string{
			"20.00 µs", "26.00 µs", "1.30", "1.24–1.37", "0.95–1.05", "1.00–1.00", "OUTSIDE", "inside",
			"write_lat 8 B [C-only control]", "1.20", // C/P1 as the control's own-definition ratio
			"34.00 MB/s", "2 pairs per scenario", "device rxe0",
			"perftest's client (requester) on CPU 0, its server (passive side) on CPU 1",
			"ratio = median of L1/P1 and L2/P2 (B1/P1, B2/P2) pooled over the pairs",
			"Remaining differences between the tools:", "drops the 2 largest", "CLOCK_MONOTONIC", "RTT/2 on both",
			"p50: ib_write_lat client t_typical[usec]; like-for-like cycle-p50-ns, own p50-ns",
			"receiver bandwidth (perftest only): ib_send_bw server BW average[MB/sec]; no rdmabench figure",
			"perftest: none; rdmabench: duplicate_request 3",
		} {
			assert.Contains(t, out, want)
		}
		assert.Equal(t, md, strings.Contains(out, "| write_lat 8 B | p50 | 20.00 µs | 26.00 µs | 1.30 | 1.24–1.37 | 0.95–1.05 | 1.00–1.00 | 1.25 | OUTSIDE |"))
		assert.Equal(t, md, strings.Contains(out, "| send_bw 4 KiB | receiver bandwidth (perftest only) | 34.00 MB/s | — | — | — | 1.00–1.00 | — | — | — |"))
	}
	var b bytes.Buffer
	rec := fixtureRecord()
	rec.CPUs = "unpinned"
	printTable(&b, rec, false)
	assert.Contains(t, b.String(), "the benchmark runs unpinned, and so does perftest")
}

// TestOverride: -size and -qd change perftest's options, the benchmark's
// point and the scenario's name together, and leave the atomics' size and
// the latency runs' depth alone.
func TestOverride(t *testing.T) {
	scs, args := override(scenarios, 1024, 64)
	assert.Equal(t, []string{"-rdma.sizes", "1024", "-rdma.qd", "64"}, args)
	byName := map[string]scenario{}
	for _, s := range scs {
		if !s.cm {
			byName[s.program] = s
		}
	}
	w := byName["ib_write_bw"]
	assert.Equal(t, "write_bw 1024 B qd 64", w.name)
	assert.Equal(t, []string{"-s", "1024", "-t", "64", "-Q", "1"}, w.args)
	assert.Equal(t, "WriteBW/transport=RC/size=1024/qd=64/qps=1/inline=false/batch=1/signal=1", w.bench.String())
	assert.Equal(t, 1024, w.size)
	l := byName["ib_write_lat"]
	assert.Equal(t, "write_lat 1024 B", l.name)
	assert.Equal(t, "WriteLat/transport=RC/size=1024/inline=false", l.bench.String())
	var uc scenario
	for _, s := range scs {
		if tr, _ := s.bench.Get("transport"); tr == "UC" && s.program == "ib_send_lat" {
			uc = s
		}
	}
	assert.Equal(t, "send_lat UC 1024 B", uc.name, "the transport stays in the name")
	assert.Equal(t, []string{"-c", "UC", "-s", "1024", "-I", "0"}, uc.args)
	a := byName["ib_atomic_bw"]
	assert.Equal(t, 8, a.size, "atomics move 8 bytes whatever -size says")
	assert.Equal(t, "AtomicBW/op=fadd/transport=RC/qd=64", a.bench.String())
	same, none := override(scenarios, 0, 0)
	assert.Equal(t, scenarios, same)
	assert.Empty(t, none)
	assert.Equal(t, "write_bw 4 KiB", scenarioNamed(t, "write_bw 4 KiB").name, "the table itself is not changed")
}

// TestUsageNamesTheValue: every bad flag is refused with status 2 before
// anything runs, naming the value and what is wanted.
func TestUsageNamesTheValue(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-iters", "2"}, "-iters 2: want at least 5"},
		{[]string{"-runs", "0"}, "-runs 0: want at least 1"},
		{[]string{"-size", "2000000"}, "-size 2000000: want 0..1048576"},
		{[]string{"-qd", "-1"}, "-qd -1: want 0..8192"},
		{[]string{"-timeout", "-1s"}, "-timeout -1s: want a positive duration"},
		{[]string{"extra"}, `arguments ["extra"]`},
		{[]string{"-commit", "a/b"}, `-commit "a/b": want 1 to 64 letters, digits, '.', '_' or '-'`},
		{[]string{"-store", "x"}, `-store "x" needs -commit`},
		{[]string{"-render", "d", "-store", "x", "-commit", "c"}, `-render "d" prints stored calibrations and runs nothing: -commit, -store do not apply`},
		{[]string{"-render", "d", "-only", "lat"}, "-only do not apply"},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(tc.args, &stdout, &stderr), "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
		assert.Empty(t, stdout.String(), "%v: nothing ran", tc.args)
	}
}
