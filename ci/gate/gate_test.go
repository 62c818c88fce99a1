package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/ci/gate/internal/gate"
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
			code: gate.ExitRegression,
			want: []string{
				"REGRESSION: " + planted + " p50-ns:",
				"WORSE (not the deciding unit p50-ns; does not fail, look at it): " + planted + " p99-ns:",
				"WORSE (not the deciding unit p50-ns; does not fail, look at it): " + planted + " msgs/s:",
				"result: FAIL",
			},
			dontWant: []string{"REGRESSION: WriteBW", "REGRESSION: SendLat", "REGRESSION: WriteLat/transport=RC/size=4096"},
		},
		{
			name:     "pure noise passes",
			args:     []string{fixture("base.txt"), fixture("noise.txt")},
			code:     gate.ExitOK,
			want:     []string{"0 regressions", "result: PASS"},
			dontWant: []string{"REGRESSION", "UNDECIDED", "MISSING"},
		},
		{
			name:     "improvement passes",
			args:     []string{fixture("base.txt"), fixture("improve.txt")},
			code:     gate.ExitOK,
			want:     []string{"ok: improved", "result: PASS"},
			dontWant: []string{"REGRESSION"},
		},
		{
			name: "missing benchmark fails, new one listed",
			args: []string{fixture("base.txt"), fixture("missing.txt")},
			code: gate.ExitRegression,
			want: []string{"MISSING in NEW: SendLat/transport=UD/size=64-2", "new in NEW (not gated): ReadLat/transport=RC/size=8-2"},
		},
		{
			name: "missing benchmark allowed",
			args: []string{"-allow-missing", fixture("base.txt"), fixture("missing.txt")},
			code: gate.ExitOK,
			want: []string{"MISSING in NEW: SendLat/transport=UD/size=64-2"},
		},
		{
			name: "too few runs cannot decide",
			args: []string{fixture("few.txt"), fixture("few_regress.txt")},
			code: gate.ExitUndecided,
			want: []string{"UNDECIDED: " + planted + ": n=3+3 runs", "needs 5 runs per side", "CANNOT DECIDE", "no p50-ns regression of"},
		},
		{
			name: "too few runs allowed",
			args: []string{"-allow-undecided", fixture("few.txt"), fixture("few_regress.txt")},
			code: gate.ExitOK,
			want: []string{"UNDECIDED: " + planted},
		},
		{
			name: "config change reported as missing with hint",
			args: []string{fixture("base.txt"), fixture("fw2.txt")},
			code: gate.ExitInput,
			want: []string{`rdma-fw: "0.0.0" → "2.0.0"`, "nothing gated"},
		},
		{
			name: "ignored config key pairs across firmware",
			args: []string{"-ignore-config", "cpu,rdma-node-guid,rdma-fw", fixture("base.txt"), fixture("fw2.txt")},
			code: gate.ExitOK,
		},
		{
			name:     "unit threshold off for the deciding unit: not gated, the next decides",
			args:     []string{"-unit-threshold", "p50-ns=off", fixture("base.txt"), fixture("regress.txt")},
			code:     gate.ExitRegression,
			want:     []string{"REGRESSION: " + planted + " ns/op:"},
			dontWant: []string{"REGRESSION: " + planted + " p50-ns:"},
		},
		{
			name:     "-decide picks another deciding unit",
			args:     []string{"-decide", "WriteLat=p99-ns", fixture("base.txt"), fixture("regress.txt")},
			code:     gate.ExitRegression,
			want:     []string{"REGRESSION: " + planted + " p99-ns:", "WORSE (not the deciding unit p99-ns"},
			dontWant: []string{"REGRESSION: " + planted + " p50-ns:"},
		},
		{name: "bad -decide", args: []string{"-decide", "WriteLat", fixture("base.txt"), fixture("base.txt")}, code: gate.ExitInput, want: []string{"-decide", "want Family=unit"}},
		{
			name:     "threshold above effect passes",
			args:     []string{"-threshold", "25%", "-unit-threshold", "p99.9-ns=25%", fixture("base.txt"), fixture("regress.txt")},
			code:     gate.ExitOK,
			want:     []string{"ok: worse, but ≤ 25.0%"},
			dontWant: []string{"REGRESSION"},
		},
		{name: "unreadable garbage", args: []string{fixture("base.txt"), fixture("garbage.txt")}, code: gate.ExitInput, want: []string{"no benchmark results"}},
		{name: "empty file", args: []string{fixture("empty.txt"), fixture("base.txt")}, code: gate.ExitInput, want: []string{"OLD:"}},
		{name: "nonexistent file", args: []string{fixture("base.txt"), fixture("nope.txt")}, code: gate.ExitInput, want: []string{"open results"}},
		{name: "one argument", args: []string{fixture("base.txt")}, code: gate.ExitInput, want: []string{"usage"}},
		{name: "bad threshold", args: []string{"-threshold", "lots", fixture("base.txt"), fixture("base.txt")}, code: gate.ExitInput, want: []string{"-threshold"}},
		{name: "bad unit threshold", args: []string{"-unit-threshold", "p99-ns", fixture("base.txt"), fixture("base.txt")}, code: gate.ExitInput, want: []string{"unit=percent"}},
		{name: "bad alpha", args: []string{"-alpha", "2", fixture("base.txt"), fixture("base.txt")}, code: gate.ExitInput, want: []string{"-alpha"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The synthetic files are runs of one boot a side: compared
			// run by run here, as make compare's paired runs are; the
			// stored-file default (boots) has its own test below.
			code, stdout, stderr := runGate(t, append([]string{"-replicate", "runs"}, tt.args...)...)
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

// Stored files are compared boot against boot (-replicate auto without
// -paired): a file whose runs all come from one boot, or that does not
// say (no rdma-boot lines), cannot decide, and the gate says what is
// missing; with enough boots a side it decides.
func TestStoredFilesNeedBoots(t *testing.T) {
	code, stdout, _ := runGate(t, fixture("base.txt"), fixture("regress.txt"))
	assert.Equal(t, gate.ExitUndecided, code, stdout)
	assert.Contains(t, stdout, "replication: one sample is a boot")
	assert.Contains(t, stdout, "CANNOT DECIDE: OLD holds runs of 1 boot (the rdma-boot lines)")
	assert.Contains(t, stdout, "needs runs from at least 5 boots")
	assert.NotContains(t, stdout, "result: PASS")

	dir := t.TempDir()
	write := func(name string, slower float64) string {
		var sb strings.Builder
		sb.WriteString("Unit p50-ns better=lower\n")
		for boot := range 8 {
			fmt.Fprintf(&sb, "rdma-boot: %s-%d\n", name, boot)
			for run := range 3 {
				fmt.Fprintf(&sb, "BenchmarkWriteLat/size=8-2 1000 %.0f p50-ns\n", (10000+float64(100*((boot*7+run)%5)))*slower)
			}
		}
		path := filepath.Join(dir, name+".txt")
		require.NoError(t, os.WriteFile(path, []byte(sb.String()), 0o644))
		return path
	}
	code, stdout, _ = runGate(t, write("a", 1), write("b", 1.3))
	assert.Equal(t, gate.ExitRegression, code, stdout)
	assert.Contains(t, stdout, "OLD 8, NEW 8 boots")
	assert.Contains(t, stdout, "REGRESSION: WriteLat/size=8-2 p50-ns")

	// Real runs of two boots: the OLD sides of two stored self-checks,
	// one build in a boot of its own each (random1 on 2026-12-04,
	// random3 on 2026-12-05), as a firmware A/B with one make bench per
	// firmware would be. docs/compare.md shows this example.
	code, stdout, _ = runGate(t, "-ignore-config", "cpu,rdma-node-guid,rdma-selfcheck-slowdown",
		fixture("compare-random1-old.txt"), fixture("compare-random3-old.txt"))
	assert.Equal(t, gate.ExitUndecided, code, stdout)
	assert.Contains(t, stdout, "OLD 1, NEW 1 boots")
	assert.Contains(t, stdout, "CANNOT DECIDE: NEW holds runs of 1 boot")
	assert.Contains(t, stdout, "each side needs runs from at least 6 boots")
	assert.NotContains(t, stdout, "REGRESSION")

	code, stdout, stderr := runGate(t, "-replicate", "hosts", fixture("base.txt"), fixture("base.txt"))
	assert.Equal(t, gate.ExitInput, code, stdout)
	assert.Contains(t, stderr, `-replicate "hosts": want auto, runs, processes or boots`)
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
	code, stdout, _ := runGate(t, "-replicate", "runs", oldPath, newPath)
	assert.Equal(t, gate.ExitOK, code, stdout)
	assert.Contains(t, stdout, "not significant, worse by more than 5.0%: X-2 ns/op: 102.50 [100, 105] → 116 [100, 132] (+13.2%")
	assert.Contains(t, stdout, "ok: not significant, but median worse by 13.2% > 5.0%")
}

func TestDetectFlag(t *testing.T) {
	code, _, stderr := runGate(t, "-detect", "lots", fixture("base.txt"), fixture("base.txt"))
	assert.Equal(t, gate.ExitInput, code)
	assert.Contains(t, stderr, `-detect: threshold "lots"`)
}
