package blame

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstPass is an 8-node fabric with node3 slow with all and node0 →
// node1 slow, judged for suspects.
func firstPass(t *testing.T) (*Fabric, Report) {
	t.Helper()
	s := synth{nodes: 8, nodeFactor: map[string]float64{"node3": 0.6}, factor: map[Link]float64{{"node0", "node1"}: 0.6}, seed: 1}
	f := s.fabric(t)
	rep := Judge(f, Options{Confirm: true})
	require.True(t, rep.Suspects)
	nodes, links := names(rep)
	require.Equal(t, []string{"node3"}, nodes)
	require.Equal(t, []Link{{"node0", "node1"}}, links)
	return f, rep
}

func TestRetests(t *testing.T) {
	_, rep := firstPass(t)
	all := []string{"node0", "node1", "node2", "node3", "node4", "node5", "node6", "node7"}
	tests := []struct {
		name       string
		healthy    []string
		perSuspect int
		want       []Pair
	}{
		{"two each", all, 2, []Pair{
			{"node3", "node2"}, {"node2", "node3"}, {"node3", "node4"}, {"node4", "node3"},
			{"node0", "node1"},
			{"node0", "node5"}, {"node5", "node0"}, {"node1", "node6"}, {"node6", "node1"},
		}},
		{"at least one", all, 0, []Pair{
			{"node3", "node2"}, {"node2", "node3"},
			{"node0", "node1"},
			{"node0", "node4"}, {"node4", "node0"}, {"node1", "node5"}, {"node5", "node1"},
		}},
		{"no more than the healthy", []string{"node6", "node3", "node6"}, 5, []Pair{
			{"node3", "node6"}, {"node6", "node3"},
			{"node0", "node1"},
			{"node0", "node6"}, {"node6", "node0"}, {"node1", "node6"}, {"node6", "node1"},
		}},
		{"no healthy node", nil, 2, []Pair{{"node0", "node1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Retests(rep, tt.healthy, tt.perSuspect))
		})
	}
}

func TestConfirm(t *testing.T) {
	first, rep := firstPass(t)
	pairs := Retests(rep, first.Nodes, 2)
	slowNode := map[string]float64{"node3": 0.6}
	slowLink := map[Link]float64{{"node0", "node1"}: 0.6}
	tests := []struct {
		name        string
		second      synth
		nodes       []string
		links       []Link
		unconfirmed []string
	}{
		{"both again", synth{links: pairs, nodeFactor: slowNode, factor: slowLink}, []string{"node3"}, []Link{{"node0", "node1"}}, nil},
		{"node again", synth{links: pairs, nodeFactor: slowNode}, []string{"node3"}, nil, []string{"node0 -> node1"}},
		{"link again", synth{links: pairs, factor: slowLink}, nil, []Link{{"node0", "node1"}}, []string{"node3"}},
		{"neither", synth{links: pairs}, nil, nil, []string{"node3", "node0 -> node1"}},
		{"link again but its end is slow with a third node", synth{links: pairs, factor: slowLink, nodeFactor: map[string]float64{"node0": 0.6}},
			nil, nil, []string{"node3", "node0 -> node1"}},
		{"not retested", synth{links: []Link{{"node2", "node4"}}}, nil, nil, []string{"node3", "node0 -> node1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := Confirm(first, tt.second.fabric(t), Options{})
			nodes, links := names(rep)
			assert.False(t, rep.Suspects)
			assert.Equal(t, tt.nodes, nodes)
			assert.Equal(t, tt.links, links)
			assert.Equal(t, tt.unconfirmed, rep.Unconfirmed)
			assert.Equal(t, min(1, len(tt.nodes)+len(tt.links)), rep.Exit())
			for _, v := range rep.Nodes {
				// slow both ways: a sending and a receiving finding a pass
				assert.Equal(t, []int{1, 1, 2, 2}, passes(v.Findings), v.Node)
			}
			for _, v := range rep.Links {
				assert.Equal(t, []int{1, 2}, passes(v.Findings), v.Link().String())
				assert.InDelta(t, 0.6, v.Findings[1].Score, 0.03, "the re-run against the first pass's links")
			}
		})
	}
}

func TestConfirmFloorAndSilent(t *testing.T) {
	rates := []string{
		"fabric.node.node0.link-rate-mbps: 25000", "fabric.node.node1.link-rate-mbps: 25000",
		"fabric.node.node2.link-rate-mbps: 25000", "fabric.node.node3.link-rate-mbps: 25000",
	}
	first := synth{nodes: 4, header: append(rates, "fabric.node.node9.dev: mlx5_0")}.fabric(t)
	rep := Judge(first, Options{Confirm: true})
	nodes, _ := names(rep)
	require.Equal(t, []string{"node0", "node1", "node2", "node3", "node9"}, nodes)
	second := synth{nodes: 4, nodeFactor: map[string]float64{"node0": 2}, header: []string{"fabric.node.node9.dev: mlx5_0"}}.fabric(t)
	got := Confirm(first, second, Options{})
	nodes, _ = names(got)
	assert.Equal(t, []string{"node1", "node2", "node3", "node9"}, nodes, "node0 reached the floor in the second pass; node9 again gave nothing")
	assert.Equal(t, []string{"node0"}, got.Unconfirmed)
}

func passes(fds []Finding) []int {
	var out []int
	for _, fd := range fds {
		out = append(out, fd.Pass)
	}
	return out
}
