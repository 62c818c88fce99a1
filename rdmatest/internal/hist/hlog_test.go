package hist

import (
	"os"
	"path/filepath"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorderOf returns a recorder with n samples.
func recorderOf(n int) *Recorder {
	r := NewRecorder()
	for i := range n {
		r.Record(int64(1000 + i))
	}
	return r
}

// hlogCounts returns the sample count of every interval in an .hlog file.
func hlogCounts(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rd := hdrhistogram.NewHistogramLogReader(f)
	var counts []int64
	for {
		h, err := rd.NextIntervalHistogram()
		require.NoError(t, err)
		if h == nil {
			return counts
		}
		counts = append(counts, h.TotalCount())
	}
}

// A b.N benchmark's calls of one run: only the last one's interval is
// written, one interval per run, whether the probe call had samples or not.
func TestHoldHlogWritesOnlyTheReportedCallOfEachRun(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { _ = FlushHlog() }) // nothing held for the next test, whatever fails here
	steps := []struct {
		name string
		n    int
		r    *Recorder
	}{
		{"BenchmarkThreads/x", 1, recorderOf(1)},     // run 1: probe
		{"BenchmarkThreads/x", 100, recorderOf(100)}, // run 1: reported
		{"BenchmarkThreads/x", 1, nil},               // run 2: probe without samples
		{"BenchmarkThreads/x", 50, recorderOf(50)},   // run 2: ramp-up
		{"BenchmarkThreads/x", 200, recorderOf(200)}, // run 2: reported
		{"BenchmarkThreads/y", 1, recorderOf(3)},     // another benchmark: x's last run is final
		{"BenchmarkThreads/y", 30, recorderOf(30)},
	}
	for _, s := range steps {
		require.NoError(t, holdHlog(dir, s.name, s.n, s.r))
	}
	assert.Equal(t, []int64{100, 200}, hlogCounts(t, filepath.Join(dir, "BenchmarkThreads_x.hlog")))
	_, err := os.Stat(filepath.Join(dir, "BenchmarkThreads_y.hlog"))
	assert.True(t, os.IsNotExist(err), "y's last call is still held")

	require.NoError(t, FlushHlog())
	assert.Equal(t, []int64{30}, hlogCounts(t, filepath.Join(dir, "BenchmarkThreads_y.hlog")))
	require.NoError(t, FlushHlog(), "nothing left to write")
	assert.Equal(t, []int64{30}, hlogCounts(t, filepath.Join(dir, "BenchmarkThreads_y.hlog")))
}

// A write that fails when the next benchmark reports names the benchmark
// whose interval was lost.
func TestHeldWriteErrorNamesItsBenchmark(t *testing.T) {
	dir := t.TempDir()
	t.Cleanup(func() { _ = FlushHlog() }) // forget B's interval: it cannot be written either
	require.NoError(t, holdHlog(dir, "BenchmarkA", 10, recorderOf(10)))
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, nil, 0o644)) // the directory is now a file
	err := holdHlog(dir, "BenchmarkB", 1, recorderOf(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "last interval of BenchmarkA was not written")
}

func TestHlogDirChecked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "hlogs")
	require.NoError(t, CheckHlogDir(dir), "a missing directory is made")
	st, err := os.Stat(dir)
	require.NoError(t, err)
	assert.True(t, st.IsDir())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the probe file is removed")

	file := filepath.Join(t.TempDir(), "results.txt")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	err = CheckHlogDir(filepath.Join(file, "sub"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-rdma.hlog")
	assert.Contains(t, err.Error(), "results.txt/sub")
}

// Two directories (the latency histograms and their cycles/) hold their
// intervals apart: the same calls keep one each, and FlushHlog writes
// both.
func TestHoldHlogPerDirectory(t *testing.T) {
	dir := t.TempDir()
	cyc := filepath.Join(dir, CyclesDir)
	t.Cleanup(func() { _ = FlushHlog() })
	for _, s := range []struct {
		n       int
		lat, cy *Recorder
	}{
		{1, recorderOf(1), nil}, // the probe: one round trip, no cycle
		{500, recorderOf(500), recorderOf(499)},
	} {
		require.NoError(t, holdHlog(dir, "BenchmarkWriteLat/size=8", s.n, s.lat))
		require.NoError(t, holdHlog(cyc, "BenchmarkWriteLat/size=8", s.n, s.cy))
	}
	require.NoError(t, FlushHlog())
	assert.Equal(t, []int64{500}, hlogCounts(t, filepath.Join(dir, "BenchmarkWriteLat_size=8.hlog")))
	assert.Equal(t, []int64{499}, hlogCounts(t, filepath.Join(cyc, "BenchmarkWriteLat_size=8.hlog")))
}
