package main

import (
	"fmt"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cpingCounts is h as cping prints a histogram: a header line named name
// (geometry, total, length), then "INDEX COUNT" for each non-zero count.
func cpingCounts(name string, h *hdrhistogram.Histogram) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s 1 100000000000 3 %d %d\n", name, h.TotalCount(), len(h.Export().Counts))
	for i, c := range h.Export().Counts {
		if c != 0 {
			fmt.Fprintf(&b, "%d %d\n", i, c)
		}
	}
	return b.String()
}

func TestControlFigures(t *testing.T) {
	// cping's output for 60 samples of 15.4 µs and 40 of 234.5 µs, its
	// indices taken from hdrhistogram-go's own export (cping and the C
	// loops compute them with the same arithmetic: verbs' TestHistMatchesHdrhistogramGo).
	h := hdrhistogram.New(1, 100e9, 3)
	require.NoError(t, h.RecordValues(15400, 60))
	require.NoError(t, h.RecordValues(234500, 40))
	var b strings.Builder
	b.WriteString(cpingCounts("cping-counts", h))
	b.WriteString("cping-elapsed-ns 123\n")
	for _, v := range []int64{1, 2048, 123456} {
		fmt.Fprintf(&b, "cping-probe %d %d\n", v, hdrIndex(v))
	}
	out := b.String()
	v, err := controlFigures(strings.NewReader(out), latFigures, false)
	require.NoError(t, err)
	assert.InEpsilon(t, 15.4, v[0], 0.001, "p50 in µs, within the histogram's 0.1%")
	assert.InEpsilon(t, 234.5, v[1], 0.001, "p99 in µs")

	n := len(h.Export().Counts)
	for _, tt := range []struct{ out, want string }{
		{"", "no cping-counts line"},
		{"cping-counts 1 1000 3 1 2048\n5 1\n", "geometry 1..1000/3"},
		{"cping-counts 1 100000000000 3 1 2048\n5 1\n", "2048 counts, hdrhistogram-go has"},
		{fmt.Sprintf("cping-counts 1 100000000000 3 2 %d\n5 1\n", n), "1 samples in the counts, header says 2"},
		{fmt.Sprintf("cping-counts 1 100000000000 3 1 %d\n-1 1\n", n), `bad count line "-1 1"`},
		{fmt.Sprintf("cping-counts 1 100000000000 3 1 %d\n99999999 1\n", n), "bad count line"},
		{"cping-counts x 100000000000 3 1 2048\n", "bad header"},
		{strings.Replace(out, "cping-probe 2048 ", "cping-probe 2047 ", 1), "value 2047 lands in count 2048, hdrhistogram-go puts it in 2047"},
		{out[:strings.Index(out, "cping-probe")], "no cping-probe lines"},
	} {
		_, err := controlFigures(strings.NewReader(tt.out), latFigures, false)
		assert.ErrorContains(t, err, tt.want, tt.out)
	}
	_, err = controlFigures(strings.NewReader(out), bwFigures, false)
	assert.ErrorContains(t, err, "latencies only")

	// cping -S prints the cycle histogram after the post → answer one:
	// like reads only the cycle counts, the default only the others.
	c := hdrhistogram.New(1, 100e9, 3)
	require.NoError(t, c.RecordValues(17000, 99))
	i := strings.Index(out, "cping-elapsed-ns")
	both := out[:i] + cpingCounts("cping-cycle-counts", c) + out[i:]
	v, err = controlFigures(strings.NewReader(both), latFigures, true)
	require.NoError(t, err)
	assert.InEpsilon(t, 17.0, v[0], 0.001, "cycle p50 in µs")
	assert.InEpsilon(t, 17.0, v[1], 0.001, "cycle p99 in µs")
	v, err = controlFigures(strings.NewReader(both), latFigures, false)
	require.NoError(t, err)
	assert.InEpsilon(t, 15.4, v[0], 0.001, "the post → answer histogram is untouched by the cycle lines")
	assert.InEpsilon(t, 234.5, v[1], 0.001)
	_, err = controlFigures(strings.NewReader(out), latFigures, true)
	assert.ErrorContains(t, err, "no cping-cycle-counts line")
}

// TestSetup: the CPUs come from the benchmark's rdma-cpus line always,
// the GID index only for the control (unless -control-gid gives one).
func TestSetup(t *testing.T) {
	taskset := "/usr/bin/taskset" // a path set by the caller is not looked up
	for _, tt := range []struct {
		name    string
		control string
		gidFlag int
		cfg     [][2]string
		gid     int
		cpus    [2]int
		err     string
	}{
		{"the benchmark's GID and CPUs", "cping", -1, [][2]string{{"rdma-gid-index", "3"}, {"rdma-cpus", "requester=2,passive=3(numa-local),runtime=0-1"}}, 3, [2]int{2, 3}, ""},
		{"-control-gid wins", "cping", 1, [][2]string{{"rdma-gid-index", "3"}, {"rdma-cpus", "requester=0,passive=1(allowed)"}}, 1, [2]int{0, 1}, ""},
		{"no control: no GID needed", "", -1, [][2]string{{"rdma-cpus", "requester=0,passive=1(allowed)"}}, -1, [2]int{0, 1}, ""},
		{"passive unpinned", "cping", -1, [][2]string{{"rdma-gid-index", "0"}, {"rdma-cpus", "requester=4,passive=unpinned(allowed)"}}, 0, [2]int{4, -1}, ""},
		{"nothing pinned", "cping", -1, [][2]string{{"rdma-gid-index", "0"}, {"rdma-cpus", "unpinned"}}, 0, [2]int{-1, -1}, ""},
		{"no device", "", -1, [][2]string{{"rdma-device", "none"}}, 0, [2]int{}, "no rdma-cpus line"},
		{"no GID for the control", "cping", -1, [][2]string{{"rdma-cpus", "unpinned"}}, 0, [2]int{}, "no rdma-gid-index"},
		{"a bad GID line", "cping", -1, [][2]string{{"rdma-cpus", "unpinned"}, {"rdma-gid-index", "x"}}, 0, [2]int{}, `rdma-gid-index "x" is not a number`},
		{"a bad CPU line", "", -1, [][2]string{{"rdma-cpus", "cpu0"}}, 0, [2]int{}, `rdma-cpus "cpu0": want requester=N,passive=M(…) or unpinned`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := config{control: tt.control, controlGID: tt.gidFlag, taskset: taskset}
			err := setup(&c, tt.cfg)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.gid, c.controlGID)
			assert.Equal(t, tt.cpus, c.cpus)
		})
	}
}

// TestSetupNeedsTaskset: pinned CPUs without taskset on $PATH are
// refused before anything runs, naming util-linux; unpinned ones need
// none.
func TestSetupNeedsTaskset(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	c := config{}
	err := setup(&c, [][2]string{{"rdma-cpus", "requester=0,passive=1(allowed)"}})
	assert.ErrorContains(t, err, "with taskset, from util-linux, which is not installed")
	assert.ErrorContains(t, err, "perftest's client (requester) on CPU 0, its server (passive side) on CPU 1")
	c = config{}
	require.NoError(t, setup(&c, [][2]string{{"rdma-cpus", "unpinned"}}))
	assert.Empty(t, c.taskset)
}
