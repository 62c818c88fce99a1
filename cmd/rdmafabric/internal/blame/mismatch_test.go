package blame

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A healthy fabric where one node's RoCE ECN and PFC settings differ
// from the others': nothing is named (settings explain, they do not
// convict), and the report flags the node's settings, as an MTU
// mismatch.
func TestQoSMismatch(t *testing.T) {
	var header []string
	for i := range 4 {
		n := "fabric.node." + nodeName(i) + "."
		np, pfc := "3", "enabled 0 0 0 1 0 0 0 0"
		if i == 2 {
			np, pfc = "none", "enabled 0 0 0 0 0 0 0 0"
		}
		header = append(header, n+"mtu: 4096", n+"ecn-np: "+np, n+"ecn-rp: 3", n+"qos-trust: dscp", n+"pfc: "+pfc)
	}
	rep := Judge(synth{nodes: 4, header: header}.fabric(t), Options{})
	require.Equal(t, 0, rep.Exit())
	assert.Equal(t, []Evidence{
		{Code: CodeECNDiffers, Node: "node2", Key: "ecn-np", Value: "none", Expected: "3"},
		{Code: CodePFCDiffers, Node: "node2", Key: "pfc", Value: "enabled 0 0 0 0 0 0 0 0", Expected: "enabled 0 0 0 1 0 0 0 0"},
	}, rep.Mismatches)
	var buf bytes.Buffer
	require.NoError(t, rep.WriteText(&buf))
	assert.Contains(t, buf.String(), "CONFIG node2: ecn-differs ecn-np=none (majority 3)\n")
	assert.Contains(t, buf.String(), "CONFIG node2: pfc-differs pfc=enabled 0 0 0 0 0 0 0 0 (majority enabled 0 0 0 1 0 0 0 0)\n")
}

// Fabrics drawn at random (the seed is printed): 3–12 healthy nodes
// with the same QoS facts but for at most one node, whose ECN, trust or
// PFC setting differs. The odd setting, and only it, is listed; nothing
// is named.
func TestQoSMismatchRandom(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	facts := []struct{ key, code, common, odd string }{
		{"ecn-np", CodeECNDiffers, "3", "none"},
		{"ecn-rp", CodeECNDiffers, "3,4", "3"},
		{"qos-trust", CodeTrustDiffers, "dscp", "pcp"},
		{"pfc", CodePFCDiffers, "enabled 0 0 0 1 0 0 0 0", "enabled 0 0 0 0 0 0 0 0"},
	}
	for range 40 {
		n := 3 + rng.IntN(10)
		odd, f := rng.IntN(n+1), facts[rng.IntN(len(facts))] // odd == n: no odd node
		var header []string
		for i := range n {
			p := "fabric.node." + nodeName(i) + "."
			for _, g := range facts {
				v := g.common
				if i == odd && g.key == f.key {
					v = g.odd
				}
				header = append(header, p+g.key+": "+v)
			}
		}
		rep := Judge(synth{nodes: n, header: header, seed: rng.Uint64()}.fabric(t), Options{})
		require.Equal(t, 0, rep.Exit(), "n %d odd %d %s", n, odd, f.key)
		if odd == n {
			assert.Empty(t, rep.Mismatches, "n %d, no odd node", n)
			continue
		}
		assert.Equal(t, []Evidence{{Code: f.code, Node: nodeName(odd), Key: f.key, Value: f.odd, Expected: f.common}}, rep.Mismatches, "n %d odd %d %s", n, odd, f.key)
	}
}
