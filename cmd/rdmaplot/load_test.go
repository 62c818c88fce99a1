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

// testdata/load.txt is BenchmarkSendLoad on rxe in the VM, -count 3.
const loadFamily = "SendLoad/transport=RC/size=64/qd=128-2"

func TestSplitRate(t *testing.T) {
	tests := []struct {
		name, family, rate string
		ok                 bool
	}{
		{"SendLoad/transport=RC/size=64/qd=128/rate=25%-2", "SendLoad/transport=RC/size=64/qd=128-2", "25%", true},
		{"WriteLoad/rate=2.5%", "WriteLoad", "2.5%", true},
		{"WriteLoad/rate=5000/size=8", "WriteLoad/size=8", "5000", true},
		{"WriteLoad/rate=0%/rate=10%", "WriteLoad/rate=0%", "10%", true},
		{"WriteLoad/rate=0%", "", "", false},
		{"WriteLoad/rate=-5%", "", "", false},
		{"WriteLoad/rate=NaN%", "", "", false},
		{"WriteLoad/rate=Inf", "", "", false},
		{"WriteLoad/rate=fast", "", "", false},
		{"WriteLoad/rates=10%", "", "", false},
		{"WriteBW/size=64-2", "", "", false},
	}
	for _, tt := range tests {
		assertSplit(t, SplitRate, tt.name, tt.family, tt.rate, tt.ok)
	}
}

func TestCompareRates(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"10%", "10%", 0},
		{"5%", "10%", -1},
		{"90%", "10%", 1},
		{"25%", "25.0%", -1}, // same number: as written
		{"90%", "100", -1},   // shares of the peak before msgs/s
		{"100", "90%", 1},
		{"100", "2000", -1},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, compareRates(tt.a, tt.b), "%s vs %s", tt.a, tt.b)
	}
}

func TestLoadSeries(t *testing.T) {
	res, err := ReadResultsFile("testdata/load.txt")
	require.NoError(t, err)
	assert.Empty(t, res.Families(), "rate= benchmarks stay out of the size charts")
	assert.Equal(t, []string{loadFamily}, res.LoadFamilies())

	s, ok := res.LoadSeries("msgs/s", loadFamily)
	require.True(t, ok)
	var rates []string
	for _, p := range s.Points {
		rates = append(rates, p.Rate)
		assert.Equal(t, 3, p.N, p.Rate)
	}
	assert.Equal(t, []string{"10%", "25%", "50%", "75%", "90%"}, rates, "ordered by offered rate")
	assert.Equal(t, LoadPoint{Rate: "10%", Median: 3424, Min: 3383, Max: 3482, N: 3}, s.Points[0])

	p99, ok := res.LoadSeries("p99-ns", loadFamily)
	require.True(t, ok)
	assert.Equal(t, LoadPoint{Rate: "90%", Median: 9142271, Min: 3452927, Max: 29360127, N: 3}, p99.Points[4])

	_, ok = res.LoadSeries("no-such-unit", loadFamily)
	assert.False(t, ok)
	_, ok = res.LoadSeries("msgs/s", "SendLoad-2")
	assert.False(t, ok)
}

func TestLoadLabels(t *testing.T) {
	series := func(vals ...float64) LoadSeries {
		s := LoadSeries{Family: "f"}
		for i, v := range vals {
			s.Points = append(s.Points, LoadPoint{Rate: []string{"50%", "90%"}[i], Median: v, Min: v, Max: v, N: 1})
		}
		return s
	}
	tests := []struct {
		name              string
		achieved, offered LoadSeries
		want              map[string]string
	}{
		{"sustained", series(1000, 1900), series(1000, 1950), map[string]string{"50%": "50%", "90%": "90%"}},
		{"not sustained", series(1000, 1500), series(1000, 2000), map[string]string{"50%": "50%", "90%": "90% (achieved 75% of offered)"}},
		{"no offered-msgs/s", series(1000, 1500), LoadSeries{}, map[string]string{"50%": "50%", "90%": "90%"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, loadLabels(tt.achieved, tt.offered), tt.name)
	}
}

func TestPlotLoad(t *testing.T) {
	sized, err := os.ReadFile("testdata/results.txt")
	require.NoError(t, err)
	load, err := os.ReadFile("testdata/load.txt")
	require.NoError(t, err)
	const chart = "load-SendLoad_transport=RC_size=64_qd=128-2"
	sizeCharts := []string{"bandwidth-WriteBW", "msgrate-WriteBW", "bandwidth-SendBW", "msgrate-SendBW",
		"latency-WriteBW_transport=RC_qd=64-2", "latency-WriteLat_transport=RC-2"}
	tests := []struct {
		name  string
		input []byte
		want  []string
	}{
		{"load only", load, []string{chart}},
		{"mixed with size families", append(append([]byte{}, sized...), load...), append([]string{chart}, sizeCharts...)},
		{"no latency: nothing to draw", []byte("BenchmarkSendLoad/size=64/rate=10%-2 10 1 ns/op 3000 msgs/s\n"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "in.txt")
			require.NoError(t, os.WriteFile(in, tt.input, 0o644))
			out := filepath.Join(dir, "plots")
			var stdout, stderr bytes.Buffer
			code := run([]string{"-o", out, in}, &stdout, &stderr)
			if tt.want == nil {
				assert.Equal(t, 1, code)
				assert.Contains(t, stderr.String(), "nothing to draw")
				return
			}
			require.Equal(t, 0, code, stderr.String())
			var files []string
			for _, name := range tt.want {
				files = append(files, filepath.Join(out, name+".svg"), filepath.Join(out, name+".png"))
			}
			assert.ElementsMatch(t, files, strings.Fields(stdout.String()), "no size chart for the rate= family")
			assertSVG(t, filepath.Join(out, chart+".svg"))
			assertPNG(t, filepath.Join(out, chart+".png"))
			svg, err := os.ReadFile(filepath.Join(out, chart+".svg"))
			require.NoError(t, err)
			for _, text := range []string{"SendLoad: latency vs offered load", "transport=RC 64 B qd=128 GOMAXPROCS=2",
				"rate% of the peak rate measured just before", "achieved message rate (thousands of msgs/s)",
				"p50 (median)", "p99.9", "10%", "90%"} {
				assert.Contains(t, string(svg), xmlEscape(text))
			}
		})
	}
}
