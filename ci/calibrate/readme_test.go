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

// TestREADMETableIsRendered: the README's summary and docs/performance.md's
// full table are rendered from every stored calibration, never picked or
// edited: a calibration stored without rendering them again, or a
// hand-edited number, fails.
func TestREADMETableIsRendered(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	got, err := blockIn(string(readme), summaryBegin, summaryEnd)
	require.NoError(t, err, "README.md")
	want, err := RenderSummary("../../docs/calibration")
	require.NoError(t, err)
	assert.Equal(t, want, got, "README.md's summary is not what `make calibration-table` renders from docs/calibration now: run it")

	perf, err := os.ReadFile("../../docs/performance.md")
	require.NoError(t, err)
	got, err = tableIn(string(perf))
	require.NoError(t, err, "docs/performance.md")
	want, err = RenderStored("../../docs/calibration", true)
	require.NoError(t, err)
	assert.Equal(t, want, got, "docs/performance.md's table is not what `make calibration-table` renders from docs/calibration now: run it")
}

// TestREADMEIsShort: issue #42's limits: the README at most 200 lines,
// its performance summary at most 10 rows (one per perftest tool).
func TestREADMEIsShort(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	assert.LessOrEqual(t, strings.Count(string(readme), "\n"), 200, "README.md's lines")
	summary, err := blockIn(string(readme), summaryBegin, summaryEnd)
	require.NoError(t, err)
	rows := 0
	for _, l := range strings.Split(summary, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| perftest tool |") {
			rows++
		}
	}
	assert.Positive(t, rows)
	assert.LessOrEqual(t, rows, 10, "the summary's rows")
}

// TestRenderInto: -render -readme FILE replaces the summary and the full
// table, whichever FILE holds, and nothing else.
func TestRenderInto(t *testing.T) {
	dir := t.TempDir()
	both := filepath.Join(dir, "both.md")
	require.NoError(t, os.WriteFile(both, []byte("# t\n"+summaryBegin+"old\n"+summaryEnd+"middle\n"+tableBegin+"old\n"+tableEnd+"end\n"), 0o644))
	require.NoError(t, renderInto(both, fixtures))
	b, err := os.ReadFile(both)
	require.NoError(t, err)
	summary, err := RenderSummary(fixtures)
	require.NoError(t, err)
	table, err := RenderStored(fixtures, true)
	require.NoError(t, err)
	assert.Equal(t, "# t\n"+summaryBegin+summary+summaryEnd+"middle\n"+tableBegin+table+tableEnd+"end\n", string(b))

	one := filepath.Join(dir, "summary.md")
	require.NoError(t, os.WriteFile(one, []byte(summaryBegin+"old\n"+summaryEnd), 0o644))
	require.NoError(t, renderInto(one, fixtures))
	b, err = os.ReadFile(one)
	require.NoError(t, err)
	assert.Equal(t, summaryBegin+summary+summaryEnd, string(b))

	none := filepath.Join(dir, "none.md")
	require.NoError(t, os.WriteFile(none, []byte("# nothing\n"), 0o644))
	assert.ErrorContains(t, renderInto(none, fixtures), "no line")

	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-render", fixtures, "-readme", both}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "rendered from")
}

// TestReplaceTableIn: -render -readme replaces only what lies between
// the markers, and refuses a file without them.
func TestReplaceTableIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	require.NoError(t, os.WriteFile(path, []byte("# title\n\n"+tableBegin+"old table\n"+tableEnd+"\ntext after\n"), 0o644))
	require.NoError(t, replaceTableIn(path, "new\ntable\n"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# title\n\n"+tableBegin+"new\ntable\n"+tableEnd+"\ntext after\n", string(b))

	require.NoError(t, os.WriteFile(path, []byte("# no markers\n"), 0o644))
	assert.ErrorContains(t, replaceTableIn(path, "x\n"), "no line \"<!-- begin: make calibration-table")
	require.NoError(t, os.WriteFile(path, []byte(tableBegin+"no end\n"), 0o644))
	assert.ErrorContains(t, replaceTableIn(path, "x\n"), "after the begin marker")
}
