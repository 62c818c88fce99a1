package blame

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real fabric runs in testdata (see testdata/README.md): the CI
// cluster of 4 qemu guests (ci/fabric/cluster.sh), a healthy pass, then
// node3 delaying its egress 50 ms and node1↔node2 50 ms. Judged with
// the default options, the healthy passes name nothing and the faults
// passes name node3 and the link, in one direction or both, and nothing
// else. The two of 443df5a are the fresh clones whose make test failed
// under the rules before (a healthy node named; the link missed).
func TestRealRuns(t *testing.T) {
	o := DefaultOptions()
	for _, run := range []string{"ci-6a5ea6e", "ci-a02c6e3", "ci-026e03a", "ci-443df5a-fresh10", "ci-443df5a-fresh11"} {
		t.Run(run, func(t *testing.T) {
			healthy := readTestdata(t, run+"-healthy.txt")
			rep := Judge(healthy, o)
			assert.Empty(t, rep.Nodes, "healthy pass: nodes named")
			assert.Empty(t, rep.Links, "healthy pass: links named")

			faults := readTestdata(t, run+"-faults.txt")
			assertFaultsNamed(t, Judge(faults, o))
		})
	}
	// The retests (second passes) of the faults confirm both.
	for _, run := range []string{"ci-6a5ea6e", "ci-026e03a"} {
		first, second := readTestdata(t, run+"-faults.txt"), readTestdata(t, run+"-faults-retest.txt")
		assertFaultsNamed(t, Confirm(first, second, o))
	}
}

// TestRealOtherFaults holds the blame to the real runs with faults other
// than CI's (testdata/*.spec: given ones and drawn ones), judged alone
// (no baseline): every healthy pass names nothing, and the case
// (node4 losing 5% of its egress, node2↔node3 40 ms) is named exactly,
// node4 on its sending side with its error counters. What else a faults
// pass names alone is logged, not asserted: without a baseline a
// healthy node in a slow TCG phase is named (given-rate50-3fabbbf-2's
// node1, as ci-f665301-fresh12's node2). With its healthy pass as the
// baseline, as make test judges, TestRealRunsBaseline asserts that no
// faults pass names a node or link without a fault.
func TestRealOtherFaults(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join("testdata", "*.spec"))
	require.NoError(t, err)
	require.NotEmpty(t, specs)
	for _, file := range specs {
		name := strings.TrimSuffix(filepath.Base(file), ".spec")
		t.Run(name, func(t *testing.T) {
			text := readSpec(t, name)
			parseSpec(t, text) // the spec is one the tests read
			rep := Judge(readTestdata(t, name+"-healthy.txt"), DefaultOptions())
			assert.Empty(t, rep.Nodes, "healthy pass: nodes named")
			assert.Empty(t, rep.Links, "healthy pass: links named")

			rep = Judge(readTestdata(t, name+"-faults.txt"), DefaultOptions())
			nodes, links := names(rep)
			t.Logf("faults %s, judged alone: named nodes %v, links %v", strings.TrimSpace(text), nodes, links)
			if name == "given-loss5-delay40" {
				require.Equal(t, []string{"node4"}, nodes)
				assert.NotEmpty(t, links)
				var codes []string
				for _, fd := range rep.Nodes[0].Findings {
					assert.Equal(t, "sending", fd.Direction)
					codes = append(codes, fd.Code)
				}
				assert.Contains(t, codes, CodeErrorRate, "node4's loss shows in its counters")
			}
		})
	}
}

// readSpec reads testdata/<name>.spec.
func readSpec(t *testing.T, name string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name+".spec"))
	require.NoError(t, err)
	return string(text)
}

// parseSpec reads the node and the link of a fault spec
// (go doc ./ci/fabric/faults): node=NAME:… link=A-B:….
func parseSpec(t *testing.T, spec string) (node string, link Link) {
	t.Helper()
	for _, f := range strings.Fields(spec) {
		where, _, _ := strings.Cut(f, ":")
		switch {
		case strings.HasPrefix(where, "node="):
			node = strings.TrimPrefix(where, "node=")
		case strings.HasPrefix(where, "link="):
			a, b, ok := strings.Cut(strings.TrimPrefix(where, "link="), "-")
			require.True(t, ok, spec)
			link = Link{a, b}
		default:
			t.Fatalf("fault spec %q: %q", spec, f)
		}
	}
	return node, link
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
