package blame

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustRead(t *testing.T, text string) *Fabric {
	t.Helper()
	f, err := Read(strings.NewReader(text))
	require.NoError(t, err)
	return f
}

const units = "Unit MB/s better=higher\nUnit msgs/s better=higher\nUnit p50-ns better=lower\n"

func TestRead(t *testing.T) {
	text := units + `fabric.node.nodea.dev: mlx5_0
fabric.node.nodea.link-rate-mbps: 12500
fabric.node.n1.cluster.local.mtu: 4096
fabric.node.n1.cluster.local.counter.symbol_error: 7
fabric.node.spare.fw: 28.39.1002
BenchmarkFabric/src=NodeA/dst=n1.cluster.local/op=write/size=65536-2 	1000	5000 ns/op	11000 MB/s
BenchmarkFabric/src=NodeA/dst=n1.cluster.local/op=write/size=65536-2 	1000	5000 ns/op	12000 MB/s
BenchmarkFabric/src=NodeA/dst=n1.cluster.local/op=write/size=65536-2 	1000	5000 ns/op	10000 MB/s
BenchmarkFabric/src=n1.cluster.local/dst=NodeA/op=send/size=8 	1000	4000 ns/op	250000 msgs/s	2000 p50-ns
BenchmarkFabricLat/src=n1.cluster.local/dst=NodeA/op=send 	1000	4000 ns/op	250000 msgs/s
BenchmarkFabric/src=n1.cluster.local/dst=NodeA 	1000	4000 ns/op
fabric.node.nodea.counter.port_rcv_errors: 2
`
	f := mustRead(t, text)
	assert.Equal(t, []string{"NodeA", "n1.cluster.local", "spare"}, f.Nodes, "nodes of rows as written, facts-only nodes lowered")
	assert.Equal(t, []Link{{"NodeA", "n1.cluster.local"}, {"n1.cluster.local", "NodeA"}}, f.Links)
	assert.Equal(t, []string{"op=write/size=65536", "op=send/size=8", "FabricLat/op=send", "Fabric"}, f.Scenarios)
	assert.Equal(t, []float64{11000, 12000, 10000}, f.Runs["op=write/size=65536"]["MB/s"][Link{"NodeA", "n1.cluster.local"}], "MB/s as written, not tidied")
	med, ok := f.Median("op=write/size=65536", "MB/s", Link{"NodeA", "n1.cluster.local"})
	assert.True(t, ok)
	assert.Equal(t, 11000.0, med)
	_, ok = f.Median("op=write/size=65536", "MB/s", Link{"n1.cluster.local", "NodeA"})
	assert.False(t, ok)
	assert.Equal(t, []string{"msgs/s", "ns/op", "p50-ns"}, f.Units("op=send/size=8"))
	assert.Equal(t, map[string]int{"MB/s": 1, "msgs/s": 1, "p50-ns": -1, "ns/op": -1}, f.Better)
	assert.Equal(t, map[string]map[string]string{
		"NodeA":            {"dev": "mlx5_0", "link-rate-mbps": "12500"},
		"n1.cluster.local": {"mtu": "4096"},
		"spare":            {"fw": "28.39.1002"},
	}, f.Facts)
	assert.Equal(t, map[string]map[string]float64{
		"NodeA":            {"port_rcv_errors": 2},
		"n1.cluster.local": {"symbol_error": 7},
	}, f.Counters, "a counter line after the last row is read too")
}

func TestReadConfigLines(t *testing.T) {
	text := units + "fabric.node.a.mtu: 1024\r\n" +
		"fabric.node.a.mtu: 4096\n" + // a later value wins
		"fabric.node.a.governor: powersave\n" +
		"fabric.node.a.governor:\n" + // an empty value deletes
		"fabric.node.a.Fw: 1\n" + // not a key: upper case
		"fabric.node.a.kernel:6.8\n" + // not a key: no space after the colon
		"BenchmarkFabric/src=a/dst=b/op=write 1 1 ns/op 100 MB/s\n"
	f := mustRead(t, text)
	assert.Equal(t, map[string]map[string]string{"a": {"mtu": "4096"}}, f.Facts)
}

func TestReadErrors(t *testing.T) {
	row := func(name string) string { return units + "Benchmark" + name + " \t 1000\t 10 ns/op\t 100 MB/s\n" }
	tests := []struct {
		name, text, want string
	}{
		{"empty", "", "no Benchmark row"},
		{"no src", row("Fabric/dst=b/op=write"), "no src= part"},
		{"no dst", row("Fabric/src=a/op=write"), "no dst= part"},
		{"src is dst", row("Fabric/src=a/dst=A/op=write"), `src and dst are the same node "a"`},
		{"two src", row("Fabric/src=a/src=c/dst=b"), "two src= parts"},
		{"bad name", row("Fabric/src=a$b/dst=c"), `node name "a$b" holds '$'`},
		{"case", row("Fabric/src=nodeA/dst=b") + row("Fabric/src=nodea/dst=b"), `node names "nodeA" and "nodea" differ only in case`},
		{"syntax", units + "BenchmarkFabric/src=a/dst=b 1 xx MB/s\n", "parsing measurement"},
		{"no direction", "BenchmarkFabric/src=a/dst=b 1 100 p50-ns\n", "unit p50-ns has no direction: the stream needs a line `Unit p50-ns better=higher` (or lower)"},
		{"bad direction", "Unit msgs/s better=more\nBenchmarkFabric/src=a/dst=b 1 100 msgs/s\n", "unit msgs/s has no direction"},
		{"bad counter", "fabric.node.a.counter.symbol_error: many\n" + row("Fabric/src=a/dst=b"), `fabric.node.a.counter.symbol_error: counter delta "many" is not a number`},
		{"bad rate", "fabric.node.a.link-rate-mbps: 0\n" + row("Fabric/src=a/dst=b"), `fabric.node.a.link-rate-mbps: "0" is not a positive number of MB/s`},
		{"bad key", "fabric.node.a: 1\n" + row("Fabric/src=a/dst=b"), "configuration key fabric.node.a: want fabric.node.<node>.<fact>"},
		{"bad fact node", "fabric.node.a%b.mtu: 1\n" + row("Fabric/src=a/dst=b"), `configuration key fabric.node.a%b.mtu: node name "a%b" holds '%'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestReadErrorLine(t *testing.T) {
	_, err := Read(strings.NewReader(units + "BenchmarkFabric/src=a/dst=b 1 1 MB/s\nBenchmarkFabric/dst=b 1 1 MB/s\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "fabric stream:5: row Fabric/dst=b: no src= part")
}

func TestReadTooManyNodes(t *testing.T) {
	var b strings.Builder
	b.WriteString(units)
	for i := 0; i <= MaxNodes; i += 2 {
		fmt.Fprintf(&b, "BenchmarkFabric/src=n%d/dst=n%d 1 1 MB/s\n", i, i+1)
	}
	_, err := Read(strings.NewReader(b.String()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), fmt.Sprintf(`node "n%d": more than %d nodes`, MaxNodes, MaxNodes))
}

func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fabric.txt")
	require.NoError(t, os.WriteFile(path, []byte(synth{nodes: 3}.render()), 0o644))
	f, err := ReadFile(path)
	require.NoError(t, err)
	assert.Len(t, f.Links, 6)
	_, err = ReadFile(filepath.Join(t.TempDir(), "missing.txt"))
	assert.ErrorContains(t, err, "read fabric results: open")
}
