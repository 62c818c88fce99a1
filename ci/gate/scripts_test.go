package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/ci/gate/internal/gate"
)

// fakeBinary writes a bash script standing in for a `go test -c` binary:
// it logs its label and arguments to calls.log and prints one result
// per benchmark. Under RDMA_TURN it takes turns as rdmatest does
// (engine/turn.go): "ready" before each of its -test.count runs, "go"
// awaited, "exit" at the end, and logs each run as "LABEL run I" and
// its end, 0.3 s after "exit", as "LABEL exited".
// turns=false makes it ignore RDMA_TURN (a benchmark that takes no
// turns).
func fakeBinary(t *testing.T, dir, label string, fail, turns bool) string {
	t.Helper()
	calls := filepath.Join(dir, "calls.log")
	// The b.N of the two benchmarks differ by side, as two builds' ramps may.
	n8, n15 := "100", "50"
	if label == "new" {
		n8, n15 = "80", "70"
	}
	results := "echo 'BenchmarkFake/size=8-2 " + n8 + " 1000 ns/op 1500 p99-ns'\n" +
		"echo 'BenchmarkFake/size=1.5(x)-2 " + n15 + " 1000 ns/op 1500 p99-ns'\n"
	body := "#!/usr/bin/env bash\n" +
		"echo \"" + label + " $*\" >> " + calls + "\n" +
		"echo 'goos: linux'\necho 'Unit p99-ns better=lower'\n"
	if fail {
		body += "echo 'panic: boom' >&2\nexit 1\n"
	}
	if turns {
		body += "if [[ -n ${RDMA_TURN:-} ]]; then\n" +
			"count=$(sed -n 's/.*-test.count \\([0-9]*\\).*/\\1/p' <<<\"$*\")\n" +
			"exec 3<>\"${RDMA_TURN%,*}\" 4<>\"${RDMA_TURN#*,}\"\n" +
			"for ((i = 1; i <= count; i++)); do\n" +
			// As testing: the name when the run starts, the figures at its end.
			"  printf 'BenchmarkFake/size=8-2 \\t'\n" +
			"  echo \"ready BenchmarkFake\" >&4\n" +
			"  read -r -t 10 go <&3 && [[ $go == go ]] || exit 7\n" +
			"  echo \"" + label + " run $i\" >> " + calls + "\n" +
			"  echo '" + n8 + " 1000 ns/op 1500 p99-ns'\n" +
			"  echo 'BenchmarkFake/size=1.5(x)-2 " + n15 + " 1000 ns/op 1500 p99-ns'\n" +
			"done\n" +
			"echo exit >&4\necho PASS\nsleep 0.3\necho \"" + label + " exited\" >> " + calls + "\nexit 0\nfi\n"
	}
	body += results + "echo PASS\n"
	path := filepath.Join(dir, label+".test")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
	return path
}

func runInterleave(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return runInterleaveAt(t, "3x", args...)
}

// runInterleaveAt runs interleave.sh with BENCHTIME=benchtime, BLOCK=2.
func runInterleaveAt(t *testing.T, benchtime string, args ...string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	cmd := exec.Command(bash, append([]string{"../interleave.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "BENCHTIME="+benchtime, "BLOCK=2")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

func TestInterleaveScript(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false, true), fakeBinary(t, dir, "new", false, true)
	out := filepath.Join(dir, "out")

	code, log := runInterleave(t, oldBin, newBin, out, "3", "^BenchmarkFake$")
	require.Equal(t, 0, code, log)

	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	require.NoError(t, err)
	lines := oldFirst(strings.Split(strings.TrimSpace(string(calls)), "\n"))
	list := " -test.run ^$ -test.bench ^BenchmarkFake$ -test.count 1 -test.benchtime 1x"
	want := []string{"old" + list, "new" + list}
	// Each benchmark alone, exactly: both sides started with its 3 runs,
	// which take turns ABBA by block of 2 within the benchmark.
	for _, pattern := range []string{`^BenchmarkFake$/^size=8$`, `^BenchmarkFake$/^size=1\.5\(x\)$`} {
		for _, label := range []string{"old", "new"} {
			want = append(want, label+" -test.run ^$ -test.bench "+pattern+" -test.count 3 -test.benchtime 3x")
		}
		// A process's exit (after its last run) ends before the other
		// side's next run starts.
		want = append(want, "old run 1", "old run 2", "new run 1", "new run 2", "new run 3", "new exited", "old run 3", "old exited")
	}
	assert.Equal(t, want, lines)
	assert.Contains(t, log, "2 benchmarks")
	listed, err := os.ReadFile(filepath.Join(out, "list.txt"))
	require.NoError(t, err)
	assert.Equal(t, "BenchmarkFake/size=8 80\nBenchmarkFake/size=1.5(x) 50\n", string(listed), "the names and the smaller of the two pilots' counts")
	for _, side := range []string{"old", "new"} {
		data, err := os.ReadFile(filepath.Join(out, side+".txt"))
		require.NoError(t, err)
		// The fake prints both benchmarks on every run: 3 runs of 2 processes a side.
		assert.Equal(t, 6, strings.Count(string(data), "BenchmarkFake/size=8-2"), side)
		// The appended output is valid gate input.
		s, err := gate.ReadFile(filepath.Join(out, side+".txt"), nil)
		require.NoError(t, err)
		assert.Len(t, s.Benches[s.Order[0]].Samples["p99-ns"], 6)
	}
}

// oldFirst puts the start lines of the two sides of a benchmark, which
// start at once and log in either order, old first.
func oldFirst(lines []string) []string {
	for i := 0; i+1 < len(lines); i++ {
		a, b := lines[i], lines[i+1]
		if strings.HasPrefix(a, "new -test.") && strings.HasPrefix(b, "old -test.") && a[3:] == b[3:] {
			lines[i], lines[i+1] = b, a
		}
	}
	return lines
}

// TestInterleaveScriptPilot: at a BENCHTIME that is a duration, the
// pilot pass runs at it, and every run of a benchmark on both sides is at
// the smaller of the two pilots' b.N.
func TestInterleaveScriptPilot(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false, true), fakeBinary(t, dir, "new", false, true)
	out := filepath.Join(dir, "out")

	code, log := runInterleaveAt(t, "0.1s", oldBin, newBin, out, "2", "^BenchmarkFake$")
	require.Equal(t, 0, code, log)

	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	require.NoError(t, err)
	var starts []string
	for _, line := range strings.Split(string(calls), "\n") {
		if strings.Contains(line, "-test.benchtime") {
			starts = append(starts, line)
		}
	}
	pilot := " -test.run ^$ -test.bench ^BenchmarkFake$ -test.count 1 -test.benchtime 0.1s"
	run := func(label, pattern, n string) string {
		return label + " -test.run ^$ -test.bench " + pattern + " -test.count 2 -test.benchtime " + n
	}
	// Both sides of a benchmark start at once: their lines come in either order.
	assert.ElementsMatch(t, []string{
		"old" + pilot, "new" + pilot,
		run("old", `^BenchmarkFake$/^size=8$`, "80x"), run("new", `^BenchmarkFake$/^size=8$`, "80x"),
		run("old", `^BenchmarkFake$/^size=1\.5\(x\)$`, "50x"), run("new", `^BenchmarkFake$/^size=1\.5\(x\)$`, "50x"),
	}, starts)
	listed, err := os.ReadFile(filepath.Join(out, "list.txt"))
	require.NoError(t, err)
	assert.Equal(t, "BenchmarkFake/size=8 80\nBenchmarkFake/size=1.5(x) 50\n", string(listed))
}

// TestInterleaveScriptNoTurns: a binary that runs without taking turns
// is an error, not a silent back-to-back comparison.
func TestInterleaveScriptNoTurns(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false, true), fakeBinary(t, dir, "new", false, false)
	code, log := runInterleave(t, oldBin, newBin, filepath.Join(dir, "out"), "3", ".")
	assert.Equal(t, 1, code, log)
	assert.Contains(t, log, "new1: got 'status 0' where a run was due")
}

func TestInterleaveScriptOneSide(t *testing.T) {
	dir := t.TempDir()
	newBin := fakeBinary(t, dir, "new", false, true)
	out := filepath.Join(dir, "out")
	code, log := runInterleave(t, "-", newBin, out, "2", ".")
	require.Equal(t, 0, code, log)
	data, err := os.ReadFile(filepath.Join(out, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, 2*2*2, strings.Count(string(data), "BenchmarkFake"), "2 runs of each of 2 benchmarks, each run printing both")
}

func TestInterleaveScriptFailure(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false, true), fakeBinary(t, dir, "new", true, true)
	code, log := runInterleave(t, oldBin, newBin, filepath.Join(dir, "out"), "3", ".")
	assert.Equal(t, 1, code)
	assert.Contains(t, log, "new pilot pass (-test.benchtime 1x) failed")
	assert.Contains(t, log, "panic: boom")
	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(calls), "\n"), "stops after the failing listing pass")
}

func TestInterleaveScriptUsage(t *testing.T) {
	dir := t.TempDir()
	bin := fakeBinary(t, dir, "old", false, true)
	for _, args := range [][]string{
		{bin, bin, dir},
		{bin, bin, dir, "zero", "."},
		{"-", "-", dir, "1", "."},
		{filepath.Join(dir, "nope"), bin, dir, "1", "."},
	} {
		code, log := runInterleave(t, args...)
		assert.Equal(t, 2, code, "%v: %s", args, log)
	}
}

// TestSkipsScript: ci/skips.sh counts the skips of tests and benchmarks
// (-test.v output), names them, allows those its allowlist's entries for
// the pass name (anchored, with their reason) and fails on any other,
// showing what the log says about it.
func TestSkipsScript(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	require.NoError(t, os.WriteFile(log, []byte("BenchmarkA\nBenchmarkA/sub=1\n--- SKIP: BenchmarkA/sub=1\n    x_test.go:3: no device\n"+
		"=== RUN   TestX\n    y_test.go:9: device has no atomics\n--- SKIP: TestX (0.00s)\n    --- SKIP: TestX/y (0.00s)\n--- PASS: TestZ (0.00s)\nPASS\n"), 0o644))
	allow := filepath.Join(dir, "allow")
	require.NoError(t, os.WriteFile(allow, []byte("# comment\n\nbench\tBenchmarkA/sub=[0-9]+\tthe demo's reason\nbench\tTestX(/.*)?\tboth\ndevice\tTestX\tonly the parent\n"), 0o644))
	skips := func(pass string) (string, int) {
		cmd := exec.Command(bash, "../skips.sh", log, pass, "demo")
		cmd.Env = append(os.Environ(), "SKIPS_ALLOW="+allow)
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		require.NoError(t, err, string(out))
		return string(out), 0
	}
	out, code := skips("bench")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "skips in demo: 3\n  skipped: BenchmarkA/sub=1 (allowed: the demo's reason)\n  skipped: TestX (allowed: both)\n  skipped: TestX/y (allowed: both)\n", out)

	out, code = skips("device")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "UNEXPECTED skip: BenchmarkA/sub=1\n")
	assert.Contains(t, out, "    |     x_test.go:3: no device\n", "the skip's reason, from the log")
	assert.Contains(t, out, "  skipped: TestX (allowed: only the parent)\n")
	assert.Contains(t, out, "UNEXPECTED skip: TestX/y\n", "an entry matches the whole name, not a prefix")
	assert.Contains(t, out, "FAIL: 2 unexpected skips in demo")

	out, code = skips("vm")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "FAIL: 3 unexpected skips in demo", "no entry is for this pass")

	// A skip after testing's first call prints no SKIP line, only a
	// result of 0 iterations: it counts as a skip of that benchmark.
	hidden := filepath.Join(dir, "hidden")
	require.NoError(t, os.WriteFile(hidden, []byte("BenchmarkB/bidir=true-2   \t       0\t               NaN ns/op\n"+
		"BenchmarkB/bidir=false-2  \t    1000\t      1234 ns/op\nBenchmarkC/x=1 \t 0\t NaN ns/op\n"), 0o644))
	cmd := exec.Command(bash, "../skips.sh", hidden, "bench", "demo")
	cmd.Env = append(os.Environ(), "SKIPS_ALLOW="+allow)
	hout, err := cmd.CombinedOutput()
	require.Error(t, err, string(hout))
	assert.Contains(t, string(hout), "skips in demo: 2\n")
	assert.Contains(t, string(hout), "UNEXPECTED skip: BenchmarkB/bidir=true\n", "named without its -GOMAXPROCS suffix")
	assert.Contains(t, string(hout), "    | BenchmarkB/bidir=true-2", "its result line shown")
	assert.Contains(t, string(hout), "UNEXPECTED skip: BenchmarkC/x=1\n", "GOMAXPROCS=1: no suffix")
	assert.NotContains(t, string(hout), "skip: BenchmarkB/bidir=false", "a run with iterations is no skip")

	require.NoError(t, os.WriteFile(allow, []byte("bench BenchmarkA spaces, not tabs\n"), 0o644))
	out, code = skips("bench")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "an entry needs three tab-separated fields")

	cmd = exec.Command(bash, "../skips.sh", log, "demo")
	out2, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out2), "usage: ci/skips.sh LOG PASS WHAT")
}

// TestInterleaveScriptProcesses: with PROCS=2 every benchmark has two
// processes a side, started before its first run; run k of a side comes
// from process k mod 2, pairs alternate ABBA, and every run in old.txt
// and new.txt carries its process's label, which the gate reads per run
// and keeps out of the benchmark's configuration.
func TestInterleaveScriptProcesses(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false, true), fakeBinary(t, dir, "new", false, true)
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bash, "../interleave.sh", oldBin, newBin, out, "4", "^BenchmarkFake$")
	cmd.Env = append(os.Environ(), "BENCHTIME=3x", "BLOCK=1", "PROCS=2")
	log, err := cmd.CombinedOutput()
	require.NoError(t, err, string(log))
	assert.Contains(t, string(log), "from 2 processes per side")
	assert.Contains(t, string(log), "[1/2 BenchmarkFake/size=8 run 2/4] new2")

	for _, side := range []string{"old", "new"} {
		s, err := gate.ReadFile(filepath.Join(out, side+".txt"), nil)
		require.NoError(t, err)
		require.Len(t, s.Order, 2, "the process label is no part of the key")
		assert.Empty(t, s.SyntaxErrors, "no run's line is split by another's")
		b := s.Benches[s.Order[0]]
		// The fake prints both benchmarks on every run: 4 runs of each
		// of the two benchmarks, from processes 1, 2, 1, 2.
		p1, p2 := side+"1", side+"2"
		assert.Equal(t, []string{p1, p2, p1, p2, p1, p2, p1, p2}, b.Procs)
	}

	cmd = exec.Command(bash, "../interleave.sh", oldBin, newBin, out, "4", "^BenchmarkFake$")
	cmd.Env = append(os.Environ(), "BENCHTIME=3x", "BLOCK=2", "PROCS=2")
	log, err = cmd.CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(log), "PROCS=2 takes turns run by run: BLOCK must be 1")
}
