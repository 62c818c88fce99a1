package blame

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// scen is a synthetic scenario: a bandwidth one reports ns/op, MB/s and
// msgs/s; a latency one ns/op, msgs/s and p50-ns.
type scen struct {
	name string
	lat  bool
}

const (
	bwName   = "op=write/size=65536"
	latName  = "op=pingpong/size=8"
	bwBase   = 11000.0 // MB/s of a healthy link
	latBase  = 2000.0  // p50-ns of a healthy link
	msgBytes = 65536
)

func bw() scen  { return scen{name: bwName} }
func lat() scen { return scen{name: latName, lat: true} }

// synth renders a synthetic fabric stream: nodes node0…node<n−1>, every
// ordered pair (or links), each scenario runs times, every value the
// healthy one times the link's quality (the product of its factor and
// its ends' factors; 0.6 is 40% worse) and a deterministic noise of
// ±noise (default ±1%).
type synth struct {
	nodes      int
	scens      []scen // default: bw()
	runs       int    // default: 3
	links      []Link // default: every ordered pair
	factor     map[Link]float64
	nodeFactor map[string]float64
	header     []string // lines before the rows: facts, counters
	noise      float64
	seed       uint64
}

func nodeName(i int) string { return fmt.Sprintf("node%d", i) }

// allPairs lists every ordered pair of n nodes.
func allPairs(n int) []Link {
	var out []Link
	for i := range n {
		for j := range n {
			if i != j {
				out = append(out, Link{nodeName(i), nodeName(j)})
			}
		}
	}
	return out
}

// quality is a link's factor times its ends' factors.
func (s synth) quality(l Link) float64 {
	q := 1.0
	for _, f := range []float64{s.factor[l], s.nodeFactor[l.Src], s.nodeFactor[l.Dst]} {
		if f != 0 {
			q *= f
		}
	}
	return q
}

func (s synth) render() string {
	if s.scens == nil {
		s.scens = []scen{bw()}
	}
	if s.runs == 0 {
		s.runs = 3
	}
	if s.links == nil {
		s.links = allPairs(s.nodes)
	}
	if s.noise == 0 {
		s.noise = 0.01
	}
	rng := rand.New(rand.NewPCG(s.seed, 7))
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/rdmabench/rdmabench/fabric\n")
	b.WriteString("Unit MB/s better=higher\nUnit msgs/s better=higher\nUnit p50-ns better=lower\n")
	for _, h := range s.header {
		b.WriteString(h + "\n")
	}
	for _, sc := range s.scens {
		for _, l := range s.links {
			for range s.runs {
				q := s.quality(l) * (1 + s.noise*(2*rng.Float64()-1))
				b.WriteString(row(l, sc, q) + "\n")
			}
		}
	}
	return b.String()
}

// row formats one run of a link of quality q.
func row(l Link, sc scen, q float64) string {
	name := fmt.Sprintf("BenchmarkFabric/src=%s/dst=%s/%s", l.Src, l.Dst, sc.name)
	if sc.lat {
		p50 := latBase / q
		return fmt.Sprintf("%s \t 50000\t%.0f ns/op\t%.1f msgs/s\t%.0f p50-ns", name, 2*p50, 1e9/(2*p50), p50)
	}
	mbps := bwBase * q
	msgs := mbps * 1e6 / msgBytes
	return fmt.Sprintf("%s \t 20000\t%.0f ns/op\t%.2f MB/s\t%.0f msgs/s", name, 1e9/msgs, mbps, msgs)
}

// fabric reads the rendered stream.
func (s synth) fabric(t *testing.T) *Fabric {
	t.Helper()
	f, err := Read(strings.NewReader(s.render()))
	require.NoError(t, err)
	return f
}

// names lists the nodes and links a report names.
func names(rep Report) (nodes []string, links []Link) {
	for _, v := range rep.Nodes {
		nodes = append(nodes, v.Node)
	}
	for _, v := range rep.Links {
		links = append(links, v.Link())
	}
	return nodes, links
}

// badNodeAndLink is the 4-node CI cluster (12 directed links) with node3
// 40% slower on all its links and node0 → node1 40% slower.
func badNodeAndLink() synth {
	return synth{
		nodes:      4,
		nodeFactor: map[string]float64{"node3": 0.6},
		factor:     map[Link]float64{{"node0", "node1"}: 0.6},
		header: []string{
			"fabric.node.node3.counter.symbol_error: 12",
			"fabric.node.node0.counter.port_rcv_errors: 3",
		},
	}
}
