package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtures are stored calibrations made up for these tests (testdata's
// README): three calibrations, the last without read_bw and the control.
const fixtures = "testdata/stored-fixtures"

// TestStore: a calibration is written as <UTC time>-<commit>.json with
// its table as the .txt beside it, reads back the same, and is never
// overwritten.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	rec := fixtureRecord()
	rec.Time = "2026-12-03T09:00:00+01:00"
	rec.Table = "the table\n"
	path, err := store(dir, rec)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "20261203T080000Z-abc1234.json"), path, "UTC time, then the commit")
	txt, err := os.ReadFile(filepath.Join(dir, "20261203T080000Z-abc1234.txt"))
	require.NoError(t, err)
	assert.Equal(t, "the table\n", string(txt))

	got, err := load(dir)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, *rec, got[0])

	_, err = store(dir, rec)
	assert.ErrorContains(t, err, "20261203T080000Z-abc1234.json")
	assert.ErrorContains(t, err, "file exists")
	txt, err = os.ReadFile(filepath.Join(dir, "20261203T080000Z-abc1234.txt"))
	require.NoError(t, err)
	assert.Equal(t, "the table\n", string(txt), "untouched")
}

// TestFinish: the table printed is the table stored, in the JSON and in
// the .txt; a second calibration with the same name is refused, status 1.
func TestFinish(t *testing.T) {
	dir := t.TempDir()
	c := config{store: dir, markdown: true}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, finish(c, fixtureRecord(), &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "| write_lat 8 B | p50 |")
	stored := filepath.Join(dir, "20261203T080000Z-abc1234.json")
	assert.Contains(t, stderr.String(), "stored in "+stored)
	got, err := load(dir)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, stdout.String(), got[0].Table)
	txt, err := os.ReadFile(filepath.Join(dir, "20261203T080000Z-abc1234.txt"))
	require.NoError(t, err)
	assert.Equal(t, stdout.String(), string(txt))

	stderr.Reset()
	assert.Equal(t, 1, finish(c, fixtureRecord(), io.Discard, &stderr))
	assert.Contains(t, stderr.String(), stored)
}

// TestStoreSetup: -store reads the boot id and the kernel before anything
// runs, and fails naming what it could not read.
func TestStoreSetup(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "boot_id"), []byte("1234-abcd\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "osrelease"), []byte("6.1.0-57-amd64\n"), 0o644))
	saved := [2]string{bootIDPath, osReleasePath}
	t.Cleanup(func() { bootIDPath, osReleasePath = saved[0], saved[1] })
	bootIDPath, osReleasePath = filepath.Join(dir, "boot_id"), filepath.Join(dir, "osrelease")

	c := config{store: filepath.Join(dir, "calibration")}
	require.NoError(t, c.storeSetup())
	assert.Equal(t, "1234-abcd", c.bootID)
	assert.Equal(t, "6.1.0-57-amd64", c.kern)
	assert.DirExists(t, c.store)

	bootIDPath = filepath.Join(dir, "missing")
	assert.ErrorContains(t, c.storeSetup(), filepath.Join(dir, "missing"))
}

// TestRenderStored: the table of all stored calibrations, never a picked
// one.
func TestRenderStored(t *testing.T) {
	out, err := RenderStored(fixtures, true)
	require.NoError(t, err)
	t.Logf("\n%s", out)
	assert.True(t, strings.HasPrefix(out, "3 calibrations: 2026-12-01 (fixture-a), 2026-12-02 (fixture-b), 2026-12-03 (fixture-c); rxe0, kernel 6.1.0-57-amd64; 2 pairs × 5000 iterations; 1 pair × 5000 iterations.\n"))
	for _, want := range []string{
		"| scenario | figure | perftest | rdmabench | ratio (median per-pair ratio, median of calibrations) | ratio range (calibrations) | perftest A/A (every pair) | rdmabench A/A (every pair) | own-definition ratio | calibrations | perftest A/A per calibration | vs perftest A/A per calibration |",
		// Like-for-like ratios per calibration 1.05, 1.2, 1.1056; P2/P1
		// pooled 1.05 0.95 1 1.2 0.9; L2/L1 pooled 21/22 19/22 1 1 10/11;
		// O/P1 1.25 1.3 1.4. Per calibration, the median P2/P1 is 1,
		// 1.1 and 0.9: the ratio 1.11 lies inside the pair-by-pair
		// band (no longer judged: it cannot fail) but outside the
		// per-calibration one.
		"| write_lat 8 B | p50 | 10.00 µs | 12.00 µs | 1.11 | 1.05–1.20 | 0.90–1.20 | 0.86–1.00 | 1.30 | 3 | 0.90–1.10 | OUTSIDE |",
		"| write_lat 8 B | p99 | 40.00 µs | 48.00 µs | 1.11 | 1.05–1.20 | 0.90–1.20 | 0.86–1.00 | 1.30 | 3 | 0.90–1.10 | OUTSIDE |",
		// Two calibrations: a range, but no verdict on it.
		"| write_lat 8 B [C-only control] | p50 | 15.00 µs | 18.00 µs | — | — | 0.95–1.20 | — | 1.20 | 2 | 1.00–1.10 | — |",
		// B/P 1 in the first, 0.9 in the second; two calibrations: no
		// verdict.
		"| read_bw 4 KiB | bandwidth | 29.00 MB/s | 27.50 MB/s | 0.95 | 0.90–1.00 | 1.00–1.00 | 1.00–1.00 | — | 2 | 1.00–1.00 | — |",
		"perftest A/A per calibration = min–max over the calibrations of each one's median P2/P1",
		"the A/A bands (every pair) = min–max of P2/P1 and of L2/L1 (B2/B1) over every pair of every calibration",
	} {
		assert.Contains(t, out, want)
	}
	text, err := RenderStored(fixtures, false)
	require.NoError(t, err)
	assert.NotContains(t, text, "|")
	assert.Contains(t, text, "3 calibrations: 2026-12-01 (fixture-a)")
}

// TestRenderRefuses: a file that cannot be read as a stored calibration
// of this format is refused, named.
func TestRenderRefuses(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(fixtures, "20261201T080000Z-fixture-a.json"))
	require.NoError(t, err)
	edit := func(f func(m map[string]any)) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good, &m))
		f(m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return string(b)
	}
	for _, tt := range []struct {
		name, content, want string
	}{
		{"not JSON", "{", "not a stored calibration"},
		{"no version", edit(func(m map[string]any) { delete(m, "format") }), "format version none: this calibrate reads version 1"},
		{"a later version", edit(func(m map[string]any) { m["format"] = 2 }), "format version 2: this calibrate reads version 1"},
		{"an unknown field", edit(func(m map[string]any) { m["extra"] = 1 }), `unknown field "extra"`},
		{"values of fewer pairs than runs", edit(func(m map[string]any) { m["runs"] = 3 }), "has 2 values, runs is 3"},
		{"no time", edit(func(m map[string]any) { m["time"] = "yesterday" }), `time "yesterday" is not RFC 3339`},
		{"no P2", edit(func(m map[string]any) {
			f := m["scenarios"].([]any)[0].(map[string]any)["figures"].([]any)[0].(map[string]any)
			delete(f["values"].(map[string]any), "P2")
		}), `figure "p50": no P2 values`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "20261201T080000Z-fixture-a.json"), good, 0o644))
			bad := filepath.Join(dir, "20261202T080000Z-bad.json")
			require.NoError(t, os.WriteFile(bad, []byte(tt.content), 0o644))
			_, err := RenderStored(dir, true)
			require.Error(t, err)
			assert.ErrorContains(t, err, bad)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err = RenderStored(t.TempDir(), true)
	assert.ErrorContains(t, err, "no stored calibration (*.json) in")
	_, err = RenderStored(filepath.Join(t.TempDir(), "missing"), true)
	assert.ErrorContains(t, err, "missing")
}

// TestRunRender: calibrate -render prints the table of a directory
// without a device; a bad file is exit status 1, named.
func TestRunRender(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-render", fixtures, "-markdown"}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "| write_lat 8 B | p50 |")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.json"), []byte("[]"), 0o644))
	stdout.Reset()
	stderr.Reset()
	assert.Equal(t, 1, run([]string{"-render", dir}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), filepath.Join(dir, "x.json"))
	assert.Empty(t, stdout.String())
}
