package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

var fixtureHlogs = []string{"testdata/BenchmarkWriteLat_transport=RC_size=8.hlog", "testdata/BenchmarkSendLat_transport=UD_size=64.hlog"}

func TestPlotFixtures(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	code := run(append([]string{"-o", dir, "testdata/results.txt"}, fixtureHlogs...), &out, &errb)
	require.Equal(t, 0, code, errb.String())

	want := []string{"bandwidth-WriteBW", "msgrate-WriteBW", "bandwidth-SendBW", "msgrate-SendBW",
		"latency-WriteBW_transport=RC_qd=64-2", "latency-WriteLat_transport=RC-2", "spectrum-WriteLat", "spectrum-SendLat"}
	var listed []string
	for _, name := range want {
		svgPath, pngPath := filepath.Join(dir, name+".svg"), filepath.Join(dir, name+".png")
		listed = append(listed, svgPath, pngPath)
		assertSVG(t, svgPath)
		assertPNG(t, pngPath)
	}
	assert.ElementsMatch(t, listed, strings.Fields(out.String()), "printed paths")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2*len(want), "SendBW has no latency units and WriteLat's MB/s is no bandwidth: no chart for them")

	svgHas := func(name string, texts ...string) {
		t.Helper()
		svg, err := os.ReadFile(filepath.Join(dir, name+".svg"))
		require.NoError(t, err)
		for _, text := range texts {
			assert.Contains(t, string(svg), xmlEscape(text), name)
		}
	}
	svgHas("bandwidth-WriteBW", "MB/s, 1 MB = 10^6 bytes", "WriteBW: bandwidth vs message size", "transport=RC qd=64 GOMAXPROCS=2", "2 KiB", "32 B")
	svgHas("msgrate-SendBW", "SendBW: message rate", "thousands of msgs/s")
	svgHas("latency-WriteLat_transport=RC-2", "WriteLat: latency percentiles", "transport=RC GOMAXPROCS=2", "p99.9")
	svgHas("spectrum-WriteLat", "99.9%", "99.99%", "transport=RC 8 B (20000 values")
}

func TestNames(t *testing.T) {
	n := familyName("SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false-2")
	assert.Equal(t, "SendBW", n.Base)
	assert.Equal(t, "transport=RC 4 KiB qd=128 batch=1 signal=1 mode=poll srq=false GOMAXPROCS=2", label(n, nil))
	h := spectrumName("BenchmarkSendBW_transport=RC_size=4096_qd=128_batch=1_signal=1_mode=poll_srq=false")
	assert.Equal(t, "SendBW", h.Base)
	assert.Equal(t, "transport=RC 4 KiB qd=128 batch=1 signal=1 mode=poll srq=false", label(h, nil))
	assert.Equal(t, "Benchmark", spectrumName("Benchmark").Base, "a file named after no benchmark is a family of its own")

	names := []benchname.Name{
		familyName("WriteBW/transport=RC/qd=128/qps=1/inline=false/batch=1/signal=1-2"),
		familyName("WriteBW/transport=UC/qd=128/qps=1/inline=false/batch=1/signal=1-2"),
		familyName("WriteBW/transport=RC/qd=128/qps=1/inline=false/batch=8/signal=8-2"),
	}
	vary, common := varying(names)
	assert.Equal(t, map[string]bool{"transport": true, "batch": true, "signal": true}, vary)
	assert.Equal(t, map[string]bool{"qd": true, "qps": true, "inline": true, "procs": true}, common)
	assert.Equal(t, "transport=RC batch=8 signal=8", label(names[2], vary))
	assert.Len(t, names[2].Parts, 6, "shown leaves the name's parts alone")

	g := groupByBase([]string{"WriteBW/transport=RC/qd=8-2", "WriteLat/transport=RC-2", "ReadBW/qd=16-2"}, isStream)
	require.Len(t, g, 2)
	assert.Equal(t, "WriteBW", g[0].base)
	assert.Equal(t, "transport=RC qd=8 GOMAXPROCS=2", g[0].legend(0), "a lone family is labelled in full")
}

func xmlEscape(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // writes to a bytes.Buffer cannot fail
	return b.String()
}

func assertSVG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := xml.NewDecoder(bytes.NewReader(data))
	root := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s is not well-formed XML", path)
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	assert.Equal(t, "svg", root, path)
}

func assertPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err, path)
	b := img.Bounds()
	assert.Greater(t, b.Dx(), 800, path)
	assert.Greater(t, b.Dy(), 500, path)
}

// assertSplit checks what split (SplitName, SplitRate) makes of name:
// the family, the value of the part it cuts out, and ok.
func assertSplit[V any](t *testing.T, split func(string) (string, V, bool), name, family string, val V, ok bool) {
	t.Helper()
	gotFamily, gotVal, gotOK := split(name)
	assert.Equal(t, ok, gotOK, name)
	assert.Equal(t, family, gotFamily, name)
	assert.Equal(t, val, gotVal, name)
}

func TestSplitName(t *testing.T) {
	tests := []struct {
		name, family string
		size         int64
		ok           bool
	}{
		{"WriteBW/transport=RC/size=4096/qd=64/batch=1/signal=1-2", "WriteBW/transport=RC/qd=64/batch=1/signal=1-2", 4096, true},
		{"WriteLat/transport=RC/size=8-2", "WriteLat/transport=RC-2", 8, true},
		{"Lat/size=8", "Lat", 8, true},
		{"Lat/size=8/size=16", "Lat/size=16", 8, true},
		{"Lat/size=0-2", "", 0, false},
		{"Lat/size=-8", "", 0, false},
		{"Lat/size=4K", "", 0, false},
		{"Lat/sizes=8", "", 0, false},
		{"Lat-2", "", 0, false},
		{"Lat/foo/size=8-2", "", 0, false}, // outside the grammar: a part without '='
	}
	for _, tt := range tests {
		assertSplit(t, SplitName, tt.name, tt.family, tt.size, tt.ok)
	}
}

func TestSeriesMedianMinMax(t *testing.T) {
	in := `BenchmarkX/size=64-2 1 1 ns/op 3 MB/s
BenchmarkX/size=8-2 1 1 ns/op 1 MB/s
BenchmarkX/size=8-2 1 1 ns/op 10 MB/s
BenchmarkX/size=8-2 1 1 ns/op 2 MB/s
BenchmarkX/size=8-2 1 1 ns/op 3 MB/s
BenchmarkY/size=8-2 1 1 ns/op
BenchmarkNoSize-2 1 1 ns/op 5 MB/s
`
	res, err := ReadResults(strings.NewReader(in), "in")
	require.NoError(t, err)
	assert.Equal(t, 1, res.NoSize)
	assert.Equal(t, []string{"X-2", "Y-2"}, res.Families())
	series := res.Series("MB/s")
	require.Len(t, series, 1, "Y has no MB/s")
	assert.Equal(t, []Point{
		{Size: 8, Median: 2.5, Min: 1, Max: 10, N: 4},
		{Size: 64, Median: 3, Min: 3, Max: 3, N: 1},
	}, series[0].Points)
}

func TestReadHlog(t *testing.T) {
	s, err := ReadHlogFile(fixtureHlogs[0])
	require.NoError(t, err)
	assert.Equal(t, "BenchmarkWriteLat_transport=RC_size=8", s.Name)
	assert.Equal(t, int64(20000), s.Count, "4 intervals of 5000 merged")
	require.Len(t, s.Values, len(s.Quantiles))
	for i := 1; i < len(s.Values); i++ {
		assert.GreaterOrEqual(t, s.Quantiles[i], s.Quantiles[i-1])
		assert.GreaterOrEqual(t, s.Values[i], s.Values[i-1])
	}
	last := s.Quantiles[len(s.Quantiles)-1]
	assert.InDelta(t, 1-1.0/20000, last, 1e-12)
	// Median of the lognormal fixture is 30 µs.
	for i, q := range s.Quantiles {
		if q >= 0.5 {
			assert.InDelta(t, 30000, s.Values[i], 1500)
			break
		}
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	noSize := filepath.Join(dir, "nosize.txt")
	require.NoError(t, os.WriteFile(noSize, []byte("BenchmarkX 1 2 ns/op\n"), 0o644))
	onlyNs := filepath.Join(dir, "onlyns.txt")
	require.NoError(t, os.WriteFile(onlyNs, []byte("BenchmarkX/size=8 1 2 ns/op\n"), 0o644))
	notHlog := filepath.Join(dir, "bad.hlog")
	require.NoError(t, os.WriteFile(notHlog, []byte("1.0,2.0,3,notbase64\n"), 0o644))
	var many strings.Builder // one line each on the bandwidth chart: more than it holds
	for i := range maxLines + 1 {
		for _, size := range []int{64, 4096} {
			fmt.Fprintf(&many, "BenchmarkWriteBW/qd=%d/size=%d-2 100 1000 ns/op 10.0 MB/s\n", i+1, size)
		}
	}
	tooMany := filepath.Join(dir, "many.txt")
	require.NoError(t, os.WriteFile(tooMany, []byte(many.String()), 0o644))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", nil, 2, "usage"},
		{"missing file", []string{"-o", dir, filepath.Join(dir, "nope.txt")}, 1, "open results"},
		{"no size", []string{"-o", dir, noSize}, 1, "no benchmark result with a /size="},
		{"nothing to draw", []string{"-o", dir, onlyNs}, 1, "nothing to draw"},
		{"bad hlog", []string{"-o", dir, "testdata/results.txt", notHlog}, 1, "hlog"},
		{"more lines than a chart holds", []string{"-o", dir, tooMany}, 1, "a chart holds at most 64 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			assert.Equal(t, tt.code, run(tt.args, &out, &errb))
			assert.Contains(t, errb.String(), tt.want)
		})
	}
}

func TestTickLabels(t *testing.T) {
	assert.Equal(t, "0%", percentileLabel(0))
	assert.Equal(t, "90%", percentileLabel(1))
	assert.Equal(t, "99%", percentileLabel(2))
	assert.Equal(t, "99.9%", percentileLabel(3))
	assert.Equal(t, "99.99%", percentileLabel(4))
	assert.Equal(t, "8 B", byteLabel(8))
	assert.Equal(t, "1 KiB", byteLabel(1024))
	assert.Equal(t, "64 KiB", byteLabel(64<<10))
	assert.Equal(t, "4 MiB", byteLabel(4<<20))
	ticks := sizeTicks{}.Ticks(8, 1<<20)
	assert.Len(t, ticks, 18)
	assert.Equal(t, "8 B", ticks[0].Label)
	assert.Empty(t, ticks[1].Label, "every other tick unlabelled when crowded")
}

func TestLinearTicks(t *testing.T) {
	ticks := linearTicks{}.Ticks(0, 1.7)
	var labels []string
	for _, tk := range ticks {
		labels = append(labels, tk.Label)
	}
	assert.Equal(t, []string{"0", "0.2", "0.4", "0.6", "0.8", "1", "1.2", "1.4", "1.6"}, labels)
	assert.Len(t, linearTicks{}.Ticks(0, 16900), 9) // 0, 2000, ... 16000
	assert.Len(t, linearTicks{}.Ticks(3, 3), 1)
}
