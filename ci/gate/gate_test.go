package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(name string) string { return filepath.Join("testdata", name) }

func runGate(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestGate(t *testing.T) {
	const planted = "WriteLat/transport=RC/size=8-2"
	tests := []struct {
		name     string
		args     []string
		code     int
		want     []string // substrings of stdout+stderr
		dontWant []string
	}{
		{
			name: "planted 20% regression fails naming it",
			args: []string{fixture("base.txt"), fixture("regress.txt")},
			code: ExitRegression,
			want: []string{
				"REGRESSION: " + planted + " p99-ns:",
				"REGRESSION: " + planted + " ns/op:",
				"REGRESSION: " + planted + " msgs/s:",
				"result: FAIL",
			},
			dontWant: []string{"REGRESSION: WriteBW", "REGRESSION: SendLat", "REGRESSION: WriteLat/transport=RC/size=4096"},
		},
		{
			name:     "pure noise passes",
			args:     []string{fixture("base.txt"), fixture("noise.txt")},
			code:     ExitOK,
			want:     []string{"0 regressions", "result: PASS"},
			dontWant: []string{"REGRESSION", "UNDECIDED", "MISSING"},
		},
		{
			name:     "improvement passes",
			args:     []string{fixture("base.txt"), fixture("improve.txt")},
			code:     ExitOK,
			want:     []string{"ok: improved", "result: PASS"},
			dontWant: []string{"REGRESSION"},
		},
		{
			name: "missing benchmark fails, new one listed",
			args: []string{fixture("base.txt"), fixture("missing.txt")},
			code: ExitRegression,
			want: []string{"MISSING in NEW: SendLat/transport=UD/size=64-2", "new in NEW (not gated): ReadLat/transport=RC/size=8-2"},
		},
		{
			name: "missing benchmark allowed",
			args: []string{"-allow-missing", fixture("base.txt"), fixture("missing.txt")},
			code: ExitOK,
			want: []string{"MISSING in NEW: SendLat/transport=UD/size=64-2"},
		},
		{
			name: "too few runs cannot decide",
			args: []string{fixture("few.txt"), fixture("few_regress.txt")},
			code: ExitUndecided,
			want: []string{"UNDECIDED: " + planted + " p99-ns: n=3+3", "4 runs per side", "CANNOT DECIDE"},
		},
		{
			name: "too few runs allowed",
			args: []string{"-allow-undecided", fixture("few.txt"), fixture("few_regress.txt")},
			code: ExitOK,
			want: []string{"UNDECIDED: " + planted},
		},
		{
			name: "config change reported as missing with hint",
			args: []string{fixture("base.txt"), fixture("fw2.txt")},
			code: ExitInput,
			want: []string{`rdma-fw: "0.0.0" → "2.0.0"`, "nothing gated"},
		},
		{
			name: "ignored config key pairs across firmware",
			args: []string{"-ignore-config", "cpu,rdma-node-guid,rdma-fw", fixture("base.txt"), fixture("fw2.txt")},
			code: ExitOK,
		},
		{
			name:     "unit threshold override hides planted regression in p99-ns only",
			args:     []string{"-unit-threshold", "p99-ns=off", fixture("base.txt"), fixture("regress.txt")},
			code:     ExitRegression,
			want:     []string{"REGRESSION: " + planted + " ns/op:"},
			dontWant: []string{"REGRESSION: " + planted + " p99-ns:"},
		},
		{
			name:     "threshold above effect passes",
			args:     []string{"-threshold", "25%", "-unit-threshold", "p99.9-ns=25%", fixture("base.txt"), fixture("regress.txt")},
			code:     ExitOK,
			want:     []string{"ok: worse, but ≤ 25.0%"},
			dontWant: []string{"REGRESSION"},
		},
		{name: "unreadable garbage", args: []string{fixture("base.txt"), fixture("garbage.txt")}, code: ExitInput, want: []string{"no benchmark results"}},
		{name: "empty file", args: []string{fixture("empty.txt"), fixture("base.txt")}, code: ExitInput, want: []string{"OLD:"}},
		{name: "nonexistent file", args: []string{fixture("base.txt"), fixture("nope.txt")}, code: ExitInput, want: []string{"open results"}},
		{name: "one argument", args: []string{fixture("base.txt")}, code: ExitInput, want: []string{"usage"}},
		{name: "bad threshold", args: []string{"-threshold", "lots", fixture("base.txt"), fixture("base.txt")}, code: ExitInput, want: []string{"-threshold"}},
		{name: "bad unit threshold", args: []string{"-unit-threshold", "p99-ns", fixture("base.txt"), fixture("base.txt")}, code: ExitInput, want: []string{"unit=percent"}},
		{name: "bad alpha", args: []string{"-alpha", "2", fixture("base.txt"), fixture("base.txt")}, code: ExitInput, want: []string{"-alpha"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runGate(t, tt.args...)
			all := stdout + stderr
			assert.Equal(t, tt.code, code, "output:\n%s", all)
			for _, w := range tt.want {
				assert.Contains(t, all, w)
			}
			for _, w := range tt.dontWant {
				assert.NotContains(t, all, w)
			}
		})
	}
}

func TestSuspectRow(t *testing.T) {
	// Bimodal NEW: the median is 15% worse, but half the runs match OLD,
	// so the U test does not reject: it passes and is listed as suspect.
	dir := t.TempDir()
	write := func(name string, vals ...int) string {
		var sb strings.Builder
		for _, v := range vals {
			fmt.Fprintf(&sb, "BenchmarkX-2 1 %d ns/op\n", v)
		}
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
		return path
	}
	oldPath := write("old.txt", 100, 101, 102, 103, 104, 105)
	newPath := write("new.txt", 100, 101, 102, 130, 131, 132)
	code, stdout, _ := runGate(t, oldPath, newPath)
	assert.Equal(t, ExitOK, code, stdout)
	assert.Contains(t, stdout, "suspect (not significant, does not fail): X-2 ns/op: 102.50 → 116 (+13.2%")
	assert.Contains(t, stdout, "ok: not significant, but median worse by 13.2% > 5.0%")
}

func TestMinP(t *testing.T) {
	tests := []struct {
		n1, n2 int
		want   float64
	}{
		{0, 5, 1},
		{1, 1, 1},
		{3, 3, 0.1},
		{4, 4, 2.0 / 70},      // benchmath's uTestMinP[4]
		{6, 6, 2.0 / 924},     // uTestMinP[6]
		{3, 8, 2.0 / 165},     // asymmetric: 3 runs suffice against 8
		{9, 9, 2.0 / 48620.0}, // uTestMinP[9]
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, MinP(tt.n1, tt.n2), 1e-12, "n=%d+%d", tt.n1, tt.n2)
	}
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
	assert.Equal(t, map[string]float64{"p99.9-ns": 0.15, "max-ns": Off}, m)
}

func TestVerdictDirection(t *testing.T) {
	tests := []struct {
		name   string
		better int
		delta  float64
		p      float64
		n      int
		want   Verdict
	}{
		{"lower better, up 20%", -1, 0.20, 0.001, 8, Regression},
		{"higher better, down 20%", 1, -0.20, 0.001, 8, Regression},
		{"higher better, up 20%", 1, 0.20, 0.001, 8, Improved},
		{"lower better, up 3%", -1, 0.03, 0.001, 8, WorseWithin},
		{"not significant", -1, 0.20, 0.2, 8, NoChange},
		{"unknown direction", 0, 0.20, 0.001, 8, Unknown},
		{"too few", -1, 0.20, 0.1, 3, Undecided},
	}
	for _, tt := range tests {
		r := Row{Better: tt.better, Delta: tt.delta, Threshold: 0.05}
		r.Cmp.P, r.Cmp.N1, r.Cmp.N2 = tt.p, tt.n, tt.n
		assert.Equal(t, tt.want, verdict(r, 0.05, 0.05), tt.name)
	}
}

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
