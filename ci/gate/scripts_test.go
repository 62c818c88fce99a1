package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBinary writes a shell script standing in for a `go test -c` binary:
// it logs its label and arguments to calls.log and prints one result.
func fakeBinary(t *testing.T, dir, label string, fail bool) string {
	t.Helper()
	body := "#!/bin/sh\n" +
		"echo \"" + label + " $*\" >> " + filepath.Join(dir, "calls.log") + "\n" +
		"echo 'goos: linux'\necho 'Unit p99-ns better=lower'\n" +
		"echo 'BenchmarkFake/size=8-2 100 1000 ns/op 1500 p99-ns'\n" +
		"echo 'BenchmarkFake/size=1.5(x)-2 100 1000 ns/op 1500 p99-ns'\necho PASS\n"
	if fail {
		body += "echo 'panic: boom' >&2\nexit 1\n"
	}
	path := filepath.Join(dir, label+".test")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o755))
	return path
}

func runInterleave(t *testing.T, args ...string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	cmd := exec.Command(bash, append([]string{"../interleave.sh"}, args...)...)
	cmd.Env = append(os.Environ(), "BENCHTIME=3x", "BLOCK=2")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	require.NoError(t, err, string(out))
	return 0, string(out)
}

func TestInterleaveScript(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false), fakeBinary(t, dir, "new", false)
	out := filepath.Join(dir, "out")

	code, log := runInterleave(t, oldBin, newBin, out, "3", "^BenchmarkFake$")
	require.Equal(t, 0, code, log)

	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(calls)), "\n")
	list := " -test.run ^$ -test.bench ^BenchmarkFake$ -test.count 1 -test.benchtime 1x"
	want := []string{"old" + list, "new" + list}
	// Each benchmark alone, exactly: 3 runs per side in blocks of 2,
	// ABBA by block within the benchmark.
	for _, pattern := range []string{`^BenchmarkFake$/^size=8$`, `^BenchmarkFake$/^size=1\.5\(x\)$`} {
		for _, c := range []struct{ label, runs string }{{"old", "2"}, {"new", "2"}, {"new", "1"}, {"old", "1"}} {
			want = append(want, c.label+" -test.run ^$ -test.bench "+pattern+" -test.count "+c.runs+" -test.benchtime 3x")
		}
	}
	assert.Equal(t, want, lines)
	assert.Contains(t, log, "2 benchmarks")
	listed, err := os.ReadFile(filepath.Join(out, "list.txt"))
	require.NoError(t, err)
	assert.Equal(t, "BenchmarkFake/size=8\nBenchmarkFake/size=1.5(x)\n", string(listed))
	for _, side := range []string{"old", "new"} {
		data, err := os.ReadFile(filepath.Join(out, side+".txt"))
		require.NoError(t, err)
		// The fake prints both benchmarks on every call: 4 calls a side.
		assert.Equal(t, 4, strings.Count(string(data), "BenchmarkFake/size=8-2"), side)
		// The appended output is valid gate input.
		s, err := ReadFile(filepath.Join(out, side+".txt"), nil)
		require.NoError(t, err)
		assert.Len(t, s.Benches[s.Order[0]].Samples["p99-ns"], 4)
	}
}

func TestInterleaveScriptOneSide(t *testing.T) {
	dir := t.TempDir()
	newBin := fakeBinary(t, dir, "new", false)
	out := filepath.Join(dir, "out")
	code, log := runInterleave(t, "-", newBin, out, "2", ".")
	require.Equal(t, 0, code, log)
	data, err := os.ReadFile(filepath.Join(out, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, 2*2, strings.Count(string(data), "BenchmarkFake"), "one block (2 runs) of each of 2 benchmarks, each call printing both")
}

func TestInterleaveScriptFailure(t *testing.T) {
	dir := t.TempDir()
	oldBin, newBin := fakeBinary(t, dir, "old", false), fakeBinary(t, dir, "new", true)
	code, log := runInterleave(t, oldBin, newBin, filepath.Join(dir, "out"), "3", ".")
	assert.Equal(t, 1, code)
	assert.Contains(t, log, "new listing pass (-test.benchtime 1x) failed")
	assert.Contains(t, log, "panic: boom")
	calls, err := os.ReadFile(filepath.Join(dir, "calls.log"))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(calls), "\n"), "stops after the failing listing pass")
}

func TestInterleaveScriptUsage(t *testing.T) {
	dir := t.TempDir()
	bin := fakeBinary(t, dir, "old", false)
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
