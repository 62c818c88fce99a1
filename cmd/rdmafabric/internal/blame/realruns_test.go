package blame

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real fabric runs in testdata (see testdata/README.md): the CI
// cluster of 4 qemu guests (ci/fabric/cluster.sh), a healthy pass, then
// node3 delaying its egress 50 ms and node1↔node2 50 ms. Judged with
// CI's options (-min-drop 0.7), the healthy passes name nothing and the
// faults passes name node3 and the link, in one direction or both, and
// nothing else.
func TestRealRuns(t *testing.T) {
	ci := Options{MinDrop: 0.7}
	for _, run := range []string{"ci-6a5ea6e", "ci-a02c6e3", "ci-026e03a"} {
		t.Run(run, func(t *testing.T) {
			healthy := readTestdata(t, run+"-healthy.txt")
			rep := Judge(healthy, ci)
			assert.Empty(t, rep.Nodes, "healthy pass: nodes named")
			assert.Empty(t, rep.Links, "healthy pass: links named")

			faults := readTestdata(t, run+"-faults.txt")
			assertFaultsNamed(t, Judge(faults, ci))
		})
	}
	// The retests (second passes) of the faults confirm both.
	for _, run := range []string{"ci-6a5ea6e", "ci-026e03a"} {
		first, second := readTestdata(t, run+"-faults.txt"), readTestdata(t, run+"-faults-retest.txt")
		assertFaultsNamed(t, Confirm(first, second, ci))
	}
}

// assertFaultsNamed checks rep names node3 and the link node1↔node2,
// and nothing else.
func assertFaultsNamed(t *testing.T, rep Report) {
	t.Helper()
	var nodes []string
	for _, v := range rep.Nodes {
		nodes = append(nodes, v.Node)
	}
	assert.Equal(t, []string{"node3"}, nodes)
	var links []string
	for _, v := range rep.Links {
		links = append(links, v.Link().String())
	}
	slices.Sort(links)
	assert.NotEmpty(t, links, "the link node1–node2 is not named")
	for _, l := range links {
		assert.Contains(t, []string{"node1 -> node2", "node2 -> node1"}, l)
	}
}

func readTestdata(t *testing.T, name string) *Fabric {
	t.Helper()
	f, err := ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return f
}
