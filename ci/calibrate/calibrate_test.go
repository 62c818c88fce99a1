package main

import (
	"bytes"
	"regexp"
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
		tr, _ := s.bench.Get("transport")
		assert.Equal(t, "RC", tr, s.name)
		assert.Zero(t, s.bench.Procs, "%s: go test adds the -GOMAXPROCS suffix", s.name)
		assert.NotEmpty(t, s.figures, s.name)
		assert.NotEmpty(t, s.differs, s.name)
		if strings.HasSuffix(s.program, "_bw") {
			assert.Contains(t, s.args, "-Q", "%s: our streams signal every WR (signal=1): perftest needs -Q 1", s.name)
			assert.Contains(t, s.args, "-t", "%s: tx depth must match qd", s.name)
		}
	}
	got, err := find("lat")
	require.NoError(t, err)
	assert.Len(t, got, 4)
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
}

func TestPairRatios(t *testing.T) {
	tests := []struct {
		name   string
		pt, rb []float64
		want   ratios
	}{
		{"one pair", []float64{20}, []float64{25}, ratios{1.25, 1.25, 1.25}},
		{"odd", []float64{10, 10, 10}, []float64{12, 9, 11}, ratios{1.1, 0.9, 1.2}},
		{"even: mean of the middle two", []float64{1, 2, 4, 5}, []float64{2, 2, 2, 2}, ratios{0.75, 0.4, 2}},
		// The host slowed down between pairs: the medians come from
		// different pairs (20 from pair 3, 18 from pair 2; 0.9), the
		// per-pair ratios are 1.2, 0.6, 2.
		{"median of ratios, not ratio of medians", []float64{10, 30, 20}, []float64{12, 18, 40}, ratios{1.2, 0.6, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pairRatios(tt.pt, tt.rb)
			assert.InDelta(t, tt.want.median, got.median, 1e-12, "median")
			assert.InDelta(t, tt.want.min, got.min, 1e-12, "min")
			assert.InDelta(t, tt.want.max, got.max, 1e-12, "max")
		})
	}
	assert.InDelta(t, 0.9, median([]float64{12, 18, 40})/median([]float64{10, 30, 20}), 1e-12,
		"the last case's ratio of medians differs from its median of ratios")
}

func TestPrintTable(t *testing.T) {
	s := scenarios[1] // write_lat
	// The ratio column is the median of the per-pair ratios (1.30), not
	// the quotient of the two medians shown (25 ÷ 20 = 1.25).
	rows := []result{{sc: s, fig: s.figures[0], col: Column{"t_typical", "usec"}, perftest: 20, rdmabench: 25,
		ratios: ratios{median: 1.3, min: 0.91, max: 1.42}, counters: "duplicate_request 3"}}
	for _, md := range []bool{false, true} {
		var b bytes.Buffer
		printTable(&b, config{runs: 5, iters: 5000, dev: "rxe0", markdown: md}, rows)
		out := b.String()
		t.Logf("markdown=%v:\n%s", md, out)
		assert.Contains(t, out, "20.00 µs")
		assert.Contains(t, out, "25.00 µs")
		assert.Contains(t, out, "ratio range")
		assert.Contains(t, out, "1.30")
		assert.NotContains(t, out, "1.25")
		assert.Contains(t, out, "0.91–1.42")
		assert.Contains(t, out, "ib_write_lat client t_typical[usec]")
		assert.Contains(t, out, "perftest: none; rdmabench: duplicate_request 3")
		assert.Contains(t, out, "5 interleaved pairs per scenario")
		assert.Contains(t, out, "ratio = median over the pairs of rdmabench ÷ perftest")
		assert.Contains(t, out, "device rxe0")
		assert.Equal(t, md, strings.Contains(out, "| write_lat 8 B | p50 | 20.00 µs | ib_write_lat client t_typical[usec] | 25.00 µs | p50-ns | 1.30 | 0.91–1.42 |"))
	}
}

// TestOverride: -size and -qd change perftest's options, the benchmark's
// point and the scenario's name together, and leave the atomics' size and
// the latency runs' depth alone.
func TestOverride(t *testing.T) {
	scs, args := override(scenarios, 1024, 64)
	assert.Equal(t, []string{"-rdma.sizes", "1024", "-rdma.qd", "64"}, args)
	byName := map[string]scenario{}
	for _, s := range scs {
		byName[s.program] = s
	}
	w := byName["ib_write_bw"]
	assert.Equal(t, "write_bw 1024 B qd 64", w.name)
	assert.Equal(t, []string{"-s", "1024", "-t", "64", "-Q", "1"}, w.args)
	assert.Equal(t, "WriteBW/transport=RC/size=1024/qd=64/qps=1/inline=false/batch=1/signal=1", w.bench.String())
	assert.Equal(t, 1024, w.size)
	l := byName["ib_write_lat"]
	assert.Equal(t, "write_lat 1024 B", l.name)
	assert.Equal(t, "WriteLat/transport=RC/size=1024/inline=false", l.bench.String())
	a := byName["ib_atomic_bw"]
	assert.Equal(t, 8, a.size, "atomics move 8 bytes whatever -size says")
	assert.Equal(t, "AtomicBW/op=fadd/transport=RC/qd=64", a.bench.String())
	same, none := override(scenarios, 0, 0)
	assert.Equal(t, scenarios, same)
	assert.Empty(t, none)
	assert.Equal(t, "write_bw 4 KiB", scenarios[5].name, "the table itself is not changed")
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
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(tc.args, &stdout, &stderr), "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
		assert.Empty(t, stdout.String(), "%v: nothing ran", tc.args)
	}
}
