package blame_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/blame"
)

// factsTree is one of package facts' fake sysfs and procfs trees.
func factsTree(name string) facts.Source {
	root := filepath.Join("..", "..", "..", "internal", "facts", "testdata", name)
	return facts.Source{Sys: filepath.Join(root, "sys"), Proc: filepath.Join(root, "proc")}
}

// TestFactsRoundTrip writes the facts and counter lines of the two fake trees
// into a fabric stream and checks that blame.Read accepts them and
// exposes the same facts and counters.
func TestFactsRoundTrip(t *testing.T) {
	mlx5, err := facts.Collect(factsTree("mlx5"), "mlx5_0", 1,
		facts.PortAttrs{ActiveMTU: 4096, ActiveWidth: 4, ActiveSpeed: 25, GIDType: "IB", FW: "28.39.1002"})
	require.NoError(t, err)
	rxe, err := facts.Collect(factsTree("rxe"), "rxe0", 1, facts.PortAttrs{ActiveMTU: 1024, GIDType: "RoCE v2"})
	require.NoError(t, err)
	delta := facts.Counters{"symbol_error": 12, "VL15_dropped": 1, "port_xmit_data": 4096}

	var lines []string
	lines = append(lines, "Unit MB/s better=higher")
	lines = append(lines, mlx5.ConfigLines("Node7")...)
	lines = append(lines, facts.CounterLines("Node7", delta)...)
	lines = append(lines, rxe.ConfigLines("node8")...)
	lines = append(lines,
		"BenchmarkFabric/src=Node7/dst=node8/op=write/size=65536 \t2000\t163840 ns/op\t400 MB/s",
		"BenchmarkFabric/src=node8/dst=Node7/op=write/size=65536 \t2000\t163840 ns/op\t400 MB/s")

	f, err := blame.Read(strings.NewReader(strings.Join(lines, "\n") + "\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"Node7", "node8"}, f.Nodes)
	assert.Equal(t, mlx5.Map(), f.Facts["Node7"])
	assert.Equal(t, rxe.Map(), f.Facts["node8"])
	assert.Equal(t, map[string]float64{"symbol_error": 12, "vl15_dropped": 1, "port_xmit_data": 4096}, f.Counters["Node7"])
	assert.Len(t, f.Facts, 2)
	assert.Empty(t, f.Counters["node8"])

	// 400 MB/s is under half of the lower link rate, rxe's 1250 MB/s:
	// both nodes are below the floor, and their evidence shows the facts.
	rep := blame.Judge(f, blame.DefaultOptions())
	assert.Equal(t, map[string][]string{
		"Node7": {"counter-moved symbol_error=+12", "counter-moved vl15_dropped=+1", "pcie-below-max pcie=8.0 GT/s x8 (max 8.0 GT/s x16)"},
		"node8": nil,
	}, evidence(rep), "the trained-at-x8 fact and the counters reach blame")
}

// evidence maps each bad node of rep to its evidence, short form.
func evidence(rep blame.Report) map[string][]string {
	out := make(map[string][]string)
	for _, v := range rep.Nodes {
		var ev []string
		for _, e := range v.Evidence {
			ev = append(ev, e.Short())
		}
		out[v.Node] = ev
	}
	return out
}
