package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMETableIsRendered: the README's table is rendered from every
// stored calibration, never picked or edited: a calibration stored
// without rendering the table again, or a hand-edited number, fails.
func TestREADMETableIsRendered(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	got, err := tableIn(string(readme))
	require.NoError(t, err, "README.md")
	want, err := RenderStored("../../docs/calibration", true)
	require.NoError(t, err)
	assert.Equal(t, want, got, "README.md's table is not what `make calibration-table` renders from docs/calibration now: run it")
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
