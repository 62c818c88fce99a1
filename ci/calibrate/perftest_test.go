package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Real outputs of Debian 12's perftest (package 4.5-0.17, "Version:
// 6.06", "[MB/sec]") on rxe0 in the qemu guest (testdata/README.md names
// the commands), and outputs of the current layout ("[MiB/sec]")
// written from the format strings RESULT_FMT, RESULT_FMT_LAT and
// REPORT_FMT* in perftest's src/perftest_parameters.h.
func TestParsePerftest(t *testing.T) {
	tests := []struct {
		file   string
		column string
		size   int
		want   float64
		unit   string
		nCols  int
	}{
		{"perftest-6.06/write_lat.client", "t_typical", 8, 24.92, "usec", 9},
		{"perftest-6.06/write_lat.client", "99% percentile", 8, 89.59, "usec", 9},
		{"perftest-6.06/write_lat.client", "99.9% percentile", 8, 187.45, "usec", 9},
		{"perftest-6.06/atomic_lat.client", "t_typical", 8, 26.39, "usec", 9},
		{"perftest-6.06/send_bw.server", "BW average", 4096, 16.79, "MB/sec", 5},
		{"perftest-6.06/send_bw.client", "BW peak", 4096, 24.16, "MB/sec", 5},
		{"perftest-6.06/write_bw.client", "MsgRate", 4096, 0.007337, "Mpps", 5},
		{"perftest-6.06/atomic_bw.client", "BW average", 8, 0.23, "MB/sec", 5},
		{"perftest-6.06/send_bw_gbits.server", "BW average", 4096, 0.13, "Gb/sec", 5},
		{"perftest-6.06/write_lat_dur.client", "tps average", 8, 249.04, "", 4},
		{"perftest-6.06/write_lat_dur.client", "t_avg", 8, 2007.71, "usec", 4},
		{"perftest-6.06/write_bw_dur.client", "BW average", 4096, 29.09, "MB/sec", 5},
		{"perftest-6.06/write_bw_all.client", "BW average", 65536, -1, "MB/sec", 5},
		{"perftest-current/write_bw.client", "BW average", 65536, 11234.56, "MiB/sec", 5},
		{"perftest-current/write_bw_cpu.client", "CPU_Util", 65536, 12.34, "%", 6},
		{"perftest-current/read_lat.client", "99.9% percentile", 2, 3.81, "usec", 9},
		{"perftest-current/send_lat_dur.client", "tps average", 2, 512345.00, "", 4},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.column, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tt.file))
			require.NoError(t, err)
			defer f.Close()
			rep, err := ParsePerftest(f)
			require.NoError(t, err)
			require.NotEmpty(t, rep.Tables)
			assert.Len(t, rep.Tables[0].Columns, tt.nCols)
			v, col, ok := rep.Lookup(tt.column, tt.size)
			require.True(t, ok, "column %q, size %d in %v", tt.column, tt.size, rep.Tables[0].Columns)
			assert.Equal(t, tt.column, col.Name)
			assert.Equal(t, tt.unit, col.Unit)
			if tt.want >= 0 {
				assert.Equal(t, tt.want, v)
			} else {
				assert.Positive(t, v)
			}
		})
	}
}

func TestParsePerftestAllSizes(t *testing.T) {
	f, err := os.Open("testdata/perftest-6.06/write_bw_all.client")
	require.NoError(t, err)
	defer f.Close()
	rep, err := ParsePerftest(f)
	require.NoError(t, err)
	require.Len(t, rep.Tables, 1)
	var sizes []float64
	for _, r := range rep.Tables[0].Rows {
		sizes = append(sizes, r[0])
	}
	require.NotEmpty(t, sizes)
	assert.Equal(t, 2.0, sizes[0], "-a starts at 2 B")
	for i := 1; i < len(sizes); i++ {
		assert.Equal(t, 2*sizes[i-1], sizes[i], "powers of two")
	}
}

func TestParsePerftestErrors(t *testing.T) {
	const latHeader = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]\n"
	tests := []struct {
		name, in, wantErr string
	}{
		{"empty", "", "no result row"},
		{"banner only", "RDMA_Write BW Test\n Couldn't connect to 127.0.0.1:18515\n", "no result row (0 header lines)"},
		{"header without rows", latHeader + "----\n", "no result row (1 header lines)"},
		{"short row", latHeader + " 8 1000 1.0 2.0 1.5 1.6\n", "6 fields under a header of 9 columns"},
		{"-nan", latHeader + " 8 1000 1.0 2.0 -nan 1.6 0.1 1.9 2.0\n", `column t_typical[usec]: "-nan"`},
		{"nan", latHeader + " 8 1000 1.0 2.0 nan 1.6 0.1 1.9 2.0\n", "not a finite number"},
		{"inf", latHeader + " 8 1000 1.0 inf 1.5 1.6 0.1 1.9 2.0\n", "not a finite number"},
		{"garbage", latHeader + " 8 1000 1.0 2.0 1.5x 1.6 0.1 1.9 2.0\n", "invalid syntax"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePerftest(strings.NewReader(tt.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		line string
		want []Column
	}{
		{" #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]",
			[]Column{{"#bytes", ""}, {"#iterations", ""}, {"BW peak", "MiB/sec"}, {"BW average", "MiB/sec"}, {"MsgRate", "Mpps"}}},
		{" #bytes        #iterations       t_avg[usec]    tps average",
			[]Column{{"#bytes", ""}, {"#iterations", ""}, {"t_avg", "usec"}, {"tps average", ""}}},
		{" #bytes #iterations  99% percentile[usec]   99.9% percentile[usec] ",
			[]Column{{"#bytes", ""}, {"#iterations", ""}, {"99% percentile", "usec"}, {"99.9% percentile", "usec"}}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, parseHeader(strings.Fields(tt.line)), tt.line)
	}
}

func TestToBase(t *testing.T) {
	tests := []struct {
		v    float64
		col  Column
		want float64
	}{
		{1, Column{"BW average", "MiB/sec"}, 1 << 20},
		{1, Column{"BW average", "MB/sec"}, 1 << 20}, // perftest before PR #257: same 2^20 unit
		{8, Column{"BW average", "Gb/sec"}, 1e9},
		{2.5, Column{"t_typical", "usec"}, 2500},
	}
	for _, tt := range tests {
		got, err := toBase(tt.v, tt.col)
		require.NoError(t, err, tt.col)
		assert.InDelta(t, tt.want, got, 1e-9, tt.col)
	}
	_, err := toBase(1, Column{"MsgRate", "Mpps"})
	assert.ErrorContains(t, err, `unknown unit "Mpps"`)
}

// FuzzParsePerftest checks that no input panics and that every accepted
// report has rows of its header's width, starting with the size.
func FuzzParsePerftest(f *testing.F) {
	files, err := filepath.Glob("testdata/perftest-*/*")
	require.NoError(f, err)
	require.NotEmpty(f, files)
	for _, p := range files {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) {
		rep, err := ParsePerftest(strings.NewReader(in))
		if err != nil {
			return
		}
		rows := 0
		for _, tb := range rep.Tables {
			for _, r := range tb.Rows {
				require.Len(t, r, len(tb.Columns))
				require.Equal(t, "#bytes", tb.Columns[0].Name)
				rows++
			}
		}
		require.Positive(t, rows)
	})
}
