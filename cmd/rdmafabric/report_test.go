package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// realRun is a stored CI fabric run (internal/blame/testdata).
func realRun(name string) string {
	return filepath.Join("internal", "blame", "testdata", name)
}

// TestReportBaseline: the fresh clone whose faults pass named a healthy
// node (node2, in a slow TCG phase on its one partner left) is named
// exactly with its healthy pass as -baseline, and the report says the
// bound it used.
func TestReportBaseline(t *testing.T) {
	faults, healthy := realRun("ci-f665301-fresh12-faults.txt"), realRun("ci-f665301-fresh12-healthy.txt")
	code, out, errOut := runCmd("report", faults)
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "BAD NODE node2", "without a baseline")

	code, out, errOut = runCmd("report", "-baseline", healthy, faults)
	assert.Equal(t, 1, code, errOut)
	assert.Empty(t, errOut)
	assert.Contains(t, out, "BAD NODE node3 (slow-with-all)")
	assert.NotContains(t, out, "NODE node2")
	assert.Contains(t, out, "BAD LINK node1 -> node2")
	assert.Contains(t, out, "baseline: named only worse than its worst link: bench=WriteBW/size=65536 MB/s ")
}

// TestBaselineErrors: a -baseline that cannot be read, or that is not
// healthy, is refused with its name and why, before anything runs (run
// with agents that do not exist fails on the flag, not on a dial).
func TestBaselineErrors(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent.txt")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"report", "-baseline", absent, realRun("ci-f665301-fresh12-faults.txt")}, []string{"rdmafabric report: -baseline " + absent, "no such file"}},
		{[]string{"report", "-baseline", realRun("ci-f665301-fresh12-faults.txt"), realRun("ci-f665301-fresh12-faults.txt")},
			[]string{"-baseline " + realRun("ci-f665301-fresh12-faults.txt"), "the baseline is not healthy: it names node node", "node3 (slow-with-all)"}},
		{[]string{"run", "-nodes", "nosuchnode-a,nosuchnode-b", "-baseline", absent}, []string{"rdmafabric run: -baseline " + absent, "no such file"}},
	} {
		code, out, errOut := runCmd(tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Empty(t, out)
		for _, s := range tc.want {
			assert.Contains(t, errOut, s)
		}
	}
}
