package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// Step 1 prints the RoCE netdev's ECN and PFC settings as sysfs shows
// them (facts.ReadQoS), and nothing of them on InfiniBand.
func TestPortPrintsQoS(t *testing.T) {
	f := PortFacts{Device: "mlx5_0", Port: 1, State: verbs.PortActive, PhysState: "LinkUp", LinkLayer: verbs.LinkLayerEthernet,
		Netdev: "ens1f0", NetdevState: "up", ActiveMTU: 4096, QoS: "ecn-np=3 ecn-rp=3 trust=dscp"}
	line, serr := checkPort(f)
	require.Nil(t, serr)
	assert.Contains(t, line, "on netdev ens1f0, MTU 4096; ECN/PFC: ecn-np=3 ecn-rp=3 trust=dscp")

	f.LinkLayer, f.Netdev, f.QoS = verbs.LinkLayerInfiniBand, "", ""
	line, serr = checkPort(f)
	require.Nil(t, serr)
	assert.NotContains(t, line, "ECN")
}
