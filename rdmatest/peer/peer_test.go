package peer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/peer"
	"github.com/rdmabench/rdmabench/verbs"
)

// rxe is an rxe device's limits, as a peer reads them.
var rxe = peer.Limits{
	Device: "rxe0",
	Attr: verbs.DeviceAttr{
		Name: "rxe0", Provider: "rxe", MaxQPWR: 1048576, MaxQP: 1048560, MaxSGE: 32, MaxCQE: 32767,
		MaxInline: 512, AtomicCap: verbs.AtomicHCA, PhysPortCnt: 1, MaxMRSize: 1 << 40,
	},
	Port:     1,
	PortAttr: verbs.PortAttr{Num: 1, State: verbs.PortActive, ActiveMTU: 1024, MaxMTU: 4096, MaxMsgSize: 8388608},
}

// echo is the Setup of an RC SEND ping-pong of 64 B, as a client sends it.
func echo() *oob.Setup {
	return &oob.Setup{
		Scenario: oob.Scenario{Op: "SEND", Transport: "RC", Role: "echo", Size: 64, QPs: 1,
			SendDepth: 64, RecvDepth: 512, SlotSize: 64},
		Endpoints: []oob.Endpoint{{QPN: 0x100, GID: "::ffff:192.0.2.1"}},
		Targets:   []oob.Target{{Addr: 0x1000, RKey: 1}},
		MTU:       1024,
		QKey:      0x1234567,
	}
}

// The peer's door checks and prices a client's Setup before anything is
// created; a bad one is refused naming the value and the limit.
func TestCheckSetup(t *testing.T) {
	require.NoError(t, peer.CheckSetup(echo(), rxe), "precondition: a client's ping-pong passes")
	c := peer.SetupCost(echo(), rxe)
	assert.Equal(t, 1, c.QPs)
	assert.Positive(t, c.WRs)

	for _, tc := range []struct {
		name string
		edit func(*oob.Setup)
		want []string
	}{
		{"send depth over the protocol's bound", func(s *oob.Setup) { s.Scenario.SendDepth = 2 << 20 }, []string{"2097152", "65536"}},
		{"slot smaller than the message", func(s *oob.Setup) { s.Scenario.SlotSize = 32 }, []string{"32", "64"}},
		{"inline over the device's", func(s *oob.Setup) { s.Scenario.Inline = 1024; s.Scenario.Size = 1024; s.Scenario.SlotSize = 1024 }, []string{"1024", "512"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := echo()
			tc.edit(req)
			err := peer.CheckSetup(req, rxe)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
