package blame

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "render docs/fabric.md's table of real runs again")

// ciFaults are the faults of the ci-* runs: make test's every run until
// a802715, which draws them at random since.
const ciFaults = "node=node3:delay=50ms link=node1-node2:delay=50ms"

const (
	tableBegin = "<!-- begin: real fabric runs (rendered from every run in cmd/rdmafabric/internal/blame/testdata by go test ./cmd/rdmafabric/internal/blame -run TestFabricTable -update; do not edit) -->\n"
	tableEnd   = "<!-- end: real fabric runs -->\n"
)

// TestFabricTable: docs/fabric.md's table of real runs is rendered
// from every stored run, never picked or edited.
func TestFabricTable(t *testing.T) {
	doc := filepath.Join("..", "..", "..", "..", "docs", "fabric.md")
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	i, j := strings.Index(string(b), tableBegin), strings.Index(string(b), tableEnd)
	require.True(t, i >= 0 && j > i, "%s: no %q … %q", doc, tableBegin, tableEnd)
	want := renderRealRuns(t)
	if *update {
		out := string(b[:i+len(tableBegin)]) + want + string(b[j:])
		require.NoError(t, os.WriteFile(doc, []byte(out), 0o644))
		return
	}
	assert.Equal(t, want, string(b[i+len(tableBegin):j]), "docs/fabric.md's table is not what the stored runs give now: go test ./cmd/rdmafabric/internal/blame -run TestFabricTable -update")
}

// fault is a spec's faults: the bad node and the directed links it
// slows, and the bad link's directed links.
type fault struct {
	node      string
	nodeLinks func(Link) bool
	link      []Link
	// reverse is the bad link's other direction, which may be named
	// too when its fault is one-way: a delay or a loss on what A sends
	// B also slows the acknowledgements of B's stream and the answers of
	// B's ping-pong (ci/fabric/faults' Check, which make test applies).
	reverse Link
}

// parseFaults reads a spec of ci/fabric/faults (directions default to
// both).
func parseFaults(t *testing.T, spec string) fault {
	t.Helper()
	var f fault
	f.nodeLinks = func(Link) bool { return false }
	for _, w := range strings.Fields(spec) {
		parts := strings.Split(w, ":")
		dir := "both"
		if len(parts) == 3 {
			dir = parts[2]
		}
		switch {
		case strings.HasPrefix(parts[0], "node="):
			n := strings.TrimPrefix(parts[0], "node=")
			f.node = n
			f.nodeLinks = func(l Link) bool {
				return (l.Src == n && dir != "ingress") || (l.Dst == n && dir != "egress")
			}
		case strings.HasPrefix(parts[0], "link="):
			a, b, ok := strings.Cut(strings.TrimPrefix(parts[0], "link="), "-")
			require.True(t, ok, spec)
			f.link = []Link{{a, b}}
			if dir != "oneway" {
				f.link = append(f.link, Link{b, a})
			}
			f.reverse = Link{b, a}
		default:
			t.Fatalf("fault spec %q: %q", spec, w)
		}
	}
	return f
}

// renderRealRuns renders the table: every stored faults pass, its
// faults, what they did to the bandwidth, what the blame names with the
// healthy pass as baseline (as make test) and without, and the verdict.
func renderRealRuns(t *testing.T) string {
	files, err := filepath.Glob(filepath.Join("testdata", "*-faults.txt"))
	require.NoError(t, err)
	var b strings.Builder
	b.WriteString("| run | faults | WriteBW of the faulty links | healthy pass names | faults pass names | verdict | without baseline |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), "-faults.txt")
		spec := ciFaults
		if !strings.HasPrefix(name, "ci-") {
			spec = strings.TrimSpace(readSpec(t, name))
		}
		ft := parseFaults(t, spec)
		healthy, faults := readTestdata(t, name+"-healthy.txt"), readTestdata(t, name+"-faults.txt")
		o := DefaultOptions()
		o.Baseline = healthy
		h := namedText(Judge(healthy, DefaultOptions()))
		with := Judge(faults, o)
		without := Judge(faults, DefaultOptions())
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s | %s | %s |\n", name, spec, effect(faults, ft), h,
			namedText(with), verdict(with, ft), verdict(without, ft))
	}
	return b.String()
}

// effect is the faulty links' WriteBW against the links with no fault:
// the node's and the link's, each the median of its links' medians
// over the median of the healthy links'.
func effect(f *Fabric, ft fault) string {
	runs := f.Runs["bench=WriteBW/size=65536"][unitMBps]
	var node, link, ok []float64
	for _, l := range f.Links {
		v := median(runs[l])
		switch {
		case ft.nodeLinks(l):
			node = append(node, v)
		case slices.Contains(ft.link, l):
			link = append(link, v)
		default:
			ok = append(ok, v)
		}
	}
	m := median(ok)
	var parts []string
	if len(node) > 0 {
		parts = append(parts, fmt.Sprintf("%s %.2f×", ft.node, median(node)/m))
	}
	if len(link) > 0 {
		parts = append(parts, fmt.Sprintf("link %.2f×", median(link)/m))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (of %.1f MB/s)", m)
}

// namedText lists what a report names: nodes, then links.
func namedText(rep Report) string {
	nodes, links := names(rep)
	var out []string
	out = append(out, nodes...)
	for _, l := range links {
		out = append(out, l.Src+"→"+l.Dst)
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// verdict is "exact" when rep names the faulty node and the faulty link
// (in a direction it is faulty in) and nothing else but the reverse of
// a one-way link (fault.reverse); else what it got
// wrong: FALSE for a name without a fault, missed for a fault not named.
func verdict(rep Report, ft fault) string {
	nodes, links := names(rep)
	var wrong []string
	for _, n := range nodes {
		if n != ft.node {
			wrong = append(wrong, "FALSE "+n)
		}
	}
	for _, l := range links {
		if !slices.Contains(ft.link, l) && l != ft.reverse {
			wrong = append(wrong, "FALSE "+l.Src+"→"+l.Dst)
		}
	}
	if ft.node != "" && !slices.Contains(nodes, ft.node) {
		wrong = append(wrong, "missed "+ft.node)
	}
	if ft.link != nil && !slices.ContainsFunc(links, func(l Link) bool { return slices.Contains(ft.link, l) }) {
		wrong = append(wrong, "missed the link")
	}
	if len(wrong) == 0 {
		return "exact"
	}
	return strings.Join(wrong, ", ")
}
