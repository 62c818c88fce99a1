package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var four = []string{"node1", "node2", "node3", "node4"}

func TestParse(t *testing.T) {
	s, err := Parse("node=node4:loss=5%:egress link=node2-node3:delay=40ms", four)
	require.NoError(t, err)
	assert.Equal(t, Spec{
		{A: "node4", Kind: Loss, Value: 5, Dir: Egress},
		{A: "node2", B: "node3", Kind: Delay, Value: 40, Dir: Both},
	}, s)
	assert.Equal(t, "node=node4:loss=5%:egress link=node2-node3:delay=40ms:both", s.String())
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "no fault"},
		{"node=node5:delay=40ms", `node "node5" is not one of node1,node2,node3,node4`},
		{"node=node1", "want node=NAME:KIND=VALUE"},
		{"node=node1:delay=40", `delay="40": want a number 1-1000 followed by ms`},
		{"node=node1:delay=0ms", "want a number 1-1000"},
		{"node=node1:loss=60%", "want a number 0.1-50"},
		{"node=node1:rate=100%", "want a number 5-95"},
		{"node=node1:jitter=5ms", "want delay=Nms, loss=N% or rate=N%"},
		{"node=node1:delay=5ms:oneway", "want egress, ingress or both"},
		{"link=node1-node2:delay=5ms:egress", "want oneway or both"},
		{"link=node1:delay=5ms", "want A-B"},
		{"link=node1-node1:delay=5ms", "to itself"},
		{"host=node1:delay=5ms", "want node=NAME or link=A-B"},
		{"node=node1:delay=5ms node=node2:loss=2%", "2 node faults"},
		{"link=node1-node2:delay=5ms link=node3-node4:loss=2%", "2 link faults"},
		{"node=node1:delay=5ms link=node1-node2:loss=2%", "touches the bad node node1"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := Parse(tc.spec, four)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestDraw draws from random seeds (printed) and checks what every
// draw must be: parseable as printed, a node and a link away from it,
// values in the drawn ranges, and every kind and direction drawn.
func TestDraw(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	seen := map[string]bool{}
	for range 500 {
		nodes := four
		if r.IntN(2) == 0 {
			nodes = nodeNames(r.IntN(5) + 4)
		}
		s, err := Draw(r.Uint64(), nodes)
		require.NoError(t, err)
		again, err := Parse(s.String(), nodes)
		require.NoError(t, err, "spec %s", s)
		require.Equal(t, s, again)
		n, l := s.Node(), s.Link()
		require.NotNil(t, n)
		require.NotNil(t, l)
		assert.NotContains(t, []string{l.A, l.B}, n.A, "spec %s", s)
		for _, f := range s {
			assert.GreaterOrEqual(t, f.Value, drawn[f.Kind][0], "spec %s", s)
			assert.LessOrEqual(t, f.Value, drawn[f.Kind][1], "spec %s", s)
			seen[string(f.Kind)+" "+string(f.Dir)] = true
		}
	}
	assert.Len(t, seen, 9, "kinds × directions drawn: %v", seen)
	_, err := Draw(1, four[:3])
	assert.ErrorContains(t, err, "3 nodes, want at least 4")
}

// nodeNames is node1..nodeN.
func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("node%d", i+1)
	}
	return out
}

func TestTC(t *testing.T) {
	s, err := Parse("node=node4:rate=40%:both link=node2-node3:delay=40ms:oneway", four)
	require.NoError(t, err)
	want := map[string][]string{
		"node4": {"tc qdisc add dev eth0 root netem rate 16000kbit limit 100000"},
		"node1": {
			"tc qdisc add dev eth0 root handle 1: prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
			"tc qdisc add dev eth0 parent 1:4 handle 40: netem rate 16000kbit limit 100000",
			"tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 192.0.2.4/32 flowid 1:4",
		},
		"node2": {
			"tc qdisc add dev eth0 root handle 1: prio bands 5 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
			"tc qdisc add dev eth0 parent 1:4 handle 40: netem rate 16000kbit limit 100000",
			"tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 192.0.2.4/32 flowid 1:4",
			"tc qdisc add dev eth0 parent 1:5 handle 50: netem delay 40ms limit 100000",
			"tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 192.0.2.3/32 flowid 1:5",
		},
		"node3": {
			"tc qdisc add dev eth0 root handle 1: prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
			"tc qdisc add dev eth0 parent 1:4 handle 40: netem rate 16000kbit limit 100000",
			"tc filter add dev eth0 parent 1: protocol ip prio 1 u32 match ip dst 192.0.2.4/32 flowid 1:4",
		},
	}
	for _, n := range four {
		got, err := TC(s, n, "eth0", 5, segmentAddr)
		require.NoError(t, err)
		assert.Equal(t, want[n], got, n)
	}
	egress, err := Parse("node=node1:loss=3%:egress", four)
	require.NoError(t, err)
	got, err := TC(egress, "node2", "eth0", 0, segmentAddr)
	require.NoError(t, err)
	assert.Empty(t, got, "an egress fault is on the bad node only")
	_, err = TC(s, "node4", "eth0", 0, segmentAddr)
	assert.ErrorContains(t, err, "needs the healthy pass's median MB/s")
}

func TestCheck(t *testing.T) {
	s, err := Parse("node=node4:loss=5%:egress link=node2-node3:delay=40ms:oneway", four)
	require.NoError(t, err)
	node := func(n string, dirs ...string) nodeVerdict {
		v := nodeVerdict{Node: n}
		for _, d := range dirs {
			v.Findings = append(v.Findings, finding{Code: "slow-with-all", Direction: d})
		}
		return v
	}
	link := func(a, b string) linkVerdict { return linkVerdict{a, b} }
	for _, tc := range []struct {
		name  string
		rep   report
		wrong []string
	}{
		{"both named", report{Nodes: []nodeVerdict{node("node4", "sending")}, Links: []linkVerdict{link("node2", "node3")}}, nil},
		{"reverse too", report{Nodes: []nodeVerdict{node("node4", "receiving", "sending")}, Links: []linkVerdict{link("node2", "node3"), link("node3", "node2")}}, nil},
		{"wrong direction", report{Nodes: []nodeVerdict{node("node4", "receiving")}, Links: []linkVerdict{link("node2", "node3")}},
			[]string{"named node node4, but not its sending side"}},
		{"reverse only", report{Nodes: []nodeVerdict{node("node4", "sending")}, Links: []linkVerdict{link("node3", "node2")}},
			[]string{"named the link node2-node3 only from node3"}},
		{"nothing", report{}, []string{"did not name node node4", "did not name the link node2-node3"}},
		{"more", report{Nodes: []nodeVerdict{node("node4", "sending"), node("node1", "sending")}, Links: []linkVerdict{link("node2", "node3"), link("node1", "node2")}},
			[]string{"named node node1, which has no fault", "named link node1 -> node2, which has no fault"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.rep, s)
			require.Len(t, got, len(tc.wrong), "%q", got)
			for i, w := range tc.wrong {
				assert.Contains(t, got[i], w)
			}
		})
	}
	assert.Equal(t, []string{"named node node1, which has no fault"}, Check(report{Nodes: []nodeVerdict{node("node1")}}, nil))
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	rep := filepath.Join(dir, "r.json")
	require.NoError(t, os.WriteFile(rep, []byte(`{"bad_nodes":[],"bad_links":[{"src":"node1","dst":"node2"}]}`), 0o600))
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"draw", "-seed", "7"}, 0, "node="},
		{[]string{"tc", "-spec", "node=node2:delay=30ms", "-node", "node2"}, 0, "netem delay 30ms"},
		{[]string{"check", "-spec", "link=node1-node2:loss=2%", "-report", rep}, 0, "PASS"},
		{[]string{"check", "-spec", "none", "-report", rep}, 1, "named link node1 -> node2, which has no fault"},
		{[]string{"check", "-spec", "none", "-report", filepath.Join(dir, "missing.json")}, 2, "no such file"},
		{[]string{"tc", "-spec", "node=node9:delay=30ms", "-node", "node2"}, 2, `node "node9"`},
		{[]string{"frob"}, 2, `subcommand "frob"`},
		{nil, 2, "usage"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		assert.Equal(t, tc.code, code, "%q: %s%s", tc.args, out.String(), errb.String())
		assert.Contains(t, out.String()+errb.String(), tc.out, "%q", tc.args)
	}
	var a, b bytes.Buffer
	run([]string{"draw", "-seed", "7"}, &a, &bytes.Buffer{})
	run([]string{"draw", "-seed", "7"}, &b, &bytes.Buffer{})
	assert.Equal(t, a.String(), b.String(), "a seed replays its draw")
	assert.True(t, strings.HasPrefix(a.String(), "node="))
}
