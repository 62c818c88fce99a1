package blame

import (
	"bytes"
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
