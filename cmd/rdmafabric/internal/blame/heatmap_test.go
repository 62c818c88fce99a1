package blame

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeatmap(t *testing.T) {
	f := synth{nodes: 4, scens: []scen{bw(), lat()}, nodeFactor: map[string]float64{"node3": 0.6}}.fabric(t)
	tests := []struct {
		name, scenario, unit, path, base string
	}{
		{"bandwidth", bwName, "MB/s", "write", "write"},
		{"latency, lower is better", latName, "p50-ns", "lat", "lat"},
		{"extension dropped", bwName, "msgs/s", "msgs.png", "msgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, Heatmap(f, tt.scenario, tt.unit, filepath.Join(dir, tt.path)))
			base := filepath.Join(dir, tt.base)
			for _, ext := range []string{".png", ".svg"} {
				st, err := os.Stat(base + ext)
				require.NoError(t, err, ext)
				assert.Positive(t, st.Size(), ext)
			}
		})
	}
}

func TestHeatmapErrors(t *testing.T) {
	f := synth{nodes: 4}.fabric(t)
	dir := t.TempDir()
	assert.ErrorContains(t, Heatmap(f, "op=nothing", "MB/s", filepath.Join(dir, "x")), `no MB/s values in scenario "op=nothing"`)
	assert.ErrorContains(t, Heatmap(f, bwName, "p99-ns", filepath.Join(dir, "x")), "no p99-ns values")
	assert.ErrorContains(t, Heatmap(f, bwName, "MB/s", filepath.Join(dir, "missing", "x")), "heat map:")
}

func TestMatrix(t *testing.T) {
	f := synth{nodes: 3, runs: 1, noise: 1e-12, factor: map[Link]float64{{"node0", "node2"}: 0.5}}.fabric(t)
	g, lo, hi := matrix(f, f.Runs[bwName]["MB/s"])
	c, r := g.Dims()
	require.Equal(t, 3, c)
	require.Equal(t, 3, r)
	for i := range 3 {
		assert.True(t, math.IsNaN(g.Z(i, 2-i)), "diagonal: node%d to itself", i)
	}
	assert.InDelta(t, 0.5*bwBase, g.Z(2, 2), 0.01, "column dst node2, top row src node0")
	assert.InDelta(t, 0.5*bwBase, lo, 0.01)
	assert.InDelta(t, bwBase, hi, 0.01)
}
