package gate

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fabricStream renders a fabric run as rdmafabric writes it: a row per
// run of each directed link of n nodes, BenchmarkFabric/src=A/dst=B/…,
// MB/s around 1000 with a few percent of noise, one link's rows scaled
// by slow[link].
func fabricStream(n, runs int, seed uint64, slow map[string]float64) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/rdmabench/rdmabench/cmd/rdmafabric\nUnit MB/s better=higher\nUnit p50-ns better=lower\n")
	for run := 0; run < runs; run++ {
		for i := 1; i <= n; i++ {
			for j := 1; j <= n; j++ {
				if i == j {
					continue
				}
				link := fmt.Sprintf("src=node%d/dst=node%d", i, j)
				f := slow[link]
				if f == 0 {
					f = 1
				}
				mbs := 1000 * f * (1 + 0.03*r.NormFloat64())
				fmt.Fprintf(&b, "BenchmarkFabric/%s/op=write/size=65536-2 1000 %.0f ns/op %.2f MB/s %.0f p50-ns\n",
					link, 65536/mbs*1e3, mbs, 60000/f*(1+0.03*r.NormFloat64()))
			}
		}
	}
	return b.String()
}

// TestFabricLinkByLink: two fabric runs of four nodes (12 directed
// links), the second with one link 20% slower: the gate compares them
// link by link and names that link alone, as after a firmware rollout.
func TestFabricLinkByLink(t *testing.T) {
	slowLink := "src=node2/dst=node3"
	old, err := ReadSet(strings.NewReader(fabricStream(4, 10, 1, nil)), "old", nil)
	require.NoError(t, err)
	cur, err := ReadSet(strings.NewReader(fabricStream(4, 10, 2, map[string]float64{slowLink: 0.8})), "new", nil)
	require.NoError(t, err)
	opt, err := NewOptions(0.05, "5%", "")
	require.NoError(t, err)
	rep := Compare(old, cur, opt)
	require.Len(t, rep.Families, 12, "one benchmark per directed link")
	assert.Equal(t, map[string]bool{"Fabric/" + slowLink + "/op=write/size=65536-2": true}, regressed(rep))
	assert.Equal(t, ExitRegression, rep.ExitCode(false, false))

	// The same fabric twice: nothing named.
	cur, err = ReadSet(strings.NewReader(fabricStream(4, 10, 3, nil)), "new", nil)
	require.NoError(t, err)
	assert.Empty(t, regressed(Compare(old, cur, opt)))
}

// TestFabricRealRuns: two real fabric runs of make test's 4-guest Slurm
// cluster (ci/fabric, 2026-12-03; rdmafabric run, 12 directed links,
// WriteLat/size=8, 8 runs of 200 round trips a link): the second with
// 20 ms netem delay on the node1–node2 path only (FAULT_LINK_DELAY=20ms FABRIC_ITERS=200 FAULT_NODE= FABRIC_RUNS=8
// FABRIC_SCENARIOS=WriteLat/size=8 bash ci/fabric/cluster.sh; healthy.txt
// and faults.txt of one boot, stored as fabric-healthy.txt and
// fabric-link.txt). At the gate's defaults the gate names that link,
// both directions (the fault makes its round trips 3–6× slower), and no
// other, though the two passes ran minutes apart, not interleaved.
func TestFabricRealRuns(t *testing.T) {
	old, err := ReadFile(fixture("fabric-healthy.txt"), realIgnore)
	require.NoError(t, err)
	cur, err := ReadFile(fixture("fabric-link.txt"), realIgnore)
	require.NoError(t, err)
	opt, err := NewOptions(0.05, "5%", "")
	require.NoError(t, err)
	rep := Compare(old, cur, opt)
	require.Len(t, rep.Families, 12, "one benchmark per directed link")
	assert.Equal(t, map[string]bool{
		"Fabric/src=node1/dst=node2/bench=WriteLat/size=8-1": true,
		"Fabric/src=node2/dst=node1/bench=WriteLat/size=8-1": true,
	}, regressed(rep))
	assert.Equal(t, ExitRegression, rep.ExitCode(false, false))
}
