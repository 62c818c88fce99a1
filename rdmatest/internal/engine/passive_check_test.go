package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// peerLimits are rxe's limits with the SRQ and MR facts a peer checks.
func peerLimits() Limits {
	lim := rxeLimits()
	lim.Attr.MaxSRQWR, lim.Attr.MaxMRSize, lim.Attr.MaxSRQ = 1048576, 1<<40, 917503
	return lim
}

// clientSetup is the Setup a client sends for s, as openRemote builds it,
// with made-up endpoints.
func clientSetup(s Spec, streaming bool) *oob.Setup {
	s.defaults()
	s = withKind(s, streaming)
	cfg := s.pairConfig()
	cfg.defaults()
	req := setupRequest(&cfg, 1024, 0x1234567)
	for i := range cfg.QPs {
		req.Endpoints = append(req.Endpoints, oob.Endpoint{QPN: uint32(0x100 + i), GID: "::ffff:192.0.2.1"})
		req.Targets = append(req.Targets, oob.Target{Addr: 0x1000, RKey: 1})
	}
	return req
}

// TestCheckSetupAcceptsClients: every scenario a client asks a peer for
// passes the peer's check (the two sides build and check the same Spec).
func TestCheckSetupAcceptsClients(t *testing.T) {
	for _, tc := range []struct {
		spec      Spec
		streaming bool
	}{
		{Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 64}, false},
		{Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64}, false},
		{Spec{Op: verbs.OpSendImm, Transport: verbs.TransportUD, HeaderOnly: true}, true},
		{Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 8}, false},
		{Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 64, Inline: true}, false},
		{Spec{Op: verbs.OpRead, Transport: verbs.TransportRC, Size: 8}, false},
		{Spec{Op: verbs.OpFetchAdd, Transport: verbs.TransportRC}, false},
		{Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024, QD: 32, SRQ: true}, true},
		{Spec{Op: verbs.OpWriteImm, Transport: verbs.TransportUC, Size: 4096, QPs: 8}, true},
		{Spec{Op: verbs.OpWrite, Transport: verbs.TransportUC, Size: 65536, QD: 16, QPs: 2, Signal: 4}, true},
		{Spec{Op: verbs.OpRead, Transport: verbs.TransportRC, Size: 4096, QD: 512, QPs: 4}, true},
		{Spec{Op: verbs.OpCmpSwap, Transport: verbs.TransportRC, QD: 16, Counters: 64, Stride: 64}, true},
	} {
		req := clientSetup(tc.spec, tc.streaming)
		t.Run(fmt.Sprintf("%s %s %s size=%d qps=%d", req.Scenario.Role, req.Scenario.Transport, req.Scenario.Op, req.Scenario.Size, req.Scenario.QPs), func(t *testing.T) {
			require.NoError(t, withKind(tc.spec, tc.streaming).CheckLimits(peerLimits()), "precondition: the client's own check")
			assert.NoError(t, CheckSetup(req, peerLimits()))
		})
	}
}

// TestCheckSetupRefuses: hostile or inconsistent Setups are refused
// before anything is created, naming the value and the limit.
func TestCheckSetupRefuses(t *testing.T) {
	writeEcho := func() *oob.Setup {
		return clientSetup(Spec{Op: verbs.OpWrite, Transport: verbs.TransportRC, Size: 8}, false)
	}
	sink := func() *oob.Setup {
		return clientSetup(Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1024}, true)
	}
	lim := peerLimits()
	for _, tc := range []struct {
		name string
		req  func() *oob.Setup
		mod  func(*oob.Setup)
		want []string
	}{
		{"write-echo size 0 (the remote crash)", writeEcho, func(r *oob.Setup) { r.Scenario.Size = 0 },
			[]string{"message size 0 must be at least 1 byte"}},
		{"size larger than the slot", writeEcho, func(r *oob.Setup) { r.Scenario.Size = 4096 },
			[]string{"slot_size 8 is smaller than the message size 4096"}},
		{"echo size larger than the slot", sink, func(r *oob.Setup) { r.Scenario.Role = "echo"; r.Scenario.SlotSize = 64 },
			[]string{"slot_size 64 is smaller than the message size 1024"}},
		{"write-echo for SEND", sink, func(r *oob.Setup) { r.Scenario.Role = "write-echo" },
			[]string{`role "write-echo" does not serve SEND`, `asks for "echo"`}},
		{"sink for READ", writeEcho, func(r *oob.Setup) { r.Scenario.Op = "RDMA_READ"; r.Scenario.Role = "sink" },
			[]string{`role "sink" does not serve RDMA_READ`, `"target"`}},
		{"echo for WRITE", writeEcho, func(r *oob.Setup) { r.Scenario.Role = "echo" },
			[]string{`role "echo" does not serve RDMA_WRITE`}},
		{"target for SEND", sink, func(r *oob.Setup) { r.Scenario.Role = "target" },
			[]string{`role "target" does not serve SEND`}},
		{"READ over UC", writeEcho, func(r *oob.Setup) { r.Scenario.Op, r.Scenario.Role, r.Scenario.Transport = "RDMA_READ", "target", "UC" },
			[]string{"UC supports SEND and RDMA WRITE only, not RDMA_READ"}},
		{"WRITE over UD", writeEcho, func(r *oob.Setup) { r.Scenario.Transport = "UD" },
			[]string{"UD supports SEND only, not RDMA_WRITE"}},
		{"UD larger than the path MTU", sink, func(r *oob.Setup) { r.Scenario.Transport = "UD"; r.MTU = 512 },
			[]string{"UD message size 1024 exceeds the path MTU 512"}},
		{"latency role on 2 QPs", writeEcho, func(r *oob.Setup) {
			r.Scenario.QPs = 2
			r.Endpoints, r.Targets = append(r.Endpoints, r.Endpoints[0]), append(r.Targets, r.Targets[0])
		}, []string{"latency is measured on one QP, not 2"}},
		{"answering role with send depth 1", writeEcho, func(r *oob.Setup) { r.Scenario.SendDepth = 1 },
			[]string{"send_depth 1: the write-echo role answers every message and needs at least 2"}},
		{"send depth over max_qp_wr", sink, func(r *oob.Setup) { r.Scenario.SendDepth = oob.MaxDepth; lim.Attr.MaxQPWR = 4096 },
			[]string{"send_depth 65536 exceeds rxe0's max_qp_wr 4096"}},
		{"recv depth over max_qp_wr", sink, func(r *oob.Setup) { r.Scenario.RecvDepth = 8192; lim.Attr.MaxQPWR = 4096 },
			[]string{"recv_depth 8192 exceeds rxe0's max_qp_wr 4096"}},
		{"SRQ depth over max_srq_wr", sink, func(r *oob.Setup) { r.Scenario.SRQ = true; lim.Attr.MaxSRQWR = 256 },
			[]string{"recv_depth 512 (SRQ) exceeds rxe0's max_srq_wr 256"}},
		{"SRQ for WRITE", writeEcho, func(r *oob.Setup) { r.Scenario.SRQ = true },
			[]string{"an SRQ only matters for verbs that consume a receive"}},
		{"inline over the device's", sink, func(r *oob.Setup) { r.Scenario.Inline = 4096 },
			[]string{"inline 4096 exceeds rxe0's max_inline_data 512"}},
		{"inline below the message", sink, func(r *oob.Setup) { r.Scenario.Inline = 64 },
			[]string{"inline 64 is smaller than the message size 1024"}},
		{"inline READ", writeEcho, func(r *oob.Setup) { r.Scenario.Op, r.Scenario.Role, r.Scenario.Inline = "RDMA_READ", "target", 8 },
			[]string{"inline does not apply to RDMA_READ"}},
		{"atomic of 16 bytes", writeEcho, func(r *oob.Setup) {
			r.Scenario.Op, r.Scenario.Role, r.Scenario.Size = "ATOMIC_FETCH_AND_ADD", "target", 16
		}, []string{"atomic operations move exactly 8 bytes, not 16"}},
		{"size over max_msg_sz", writeEcho, func(r *oob.Setup) {
			r.Scenario.Size, r.Scenario.SlotSize = 16<<20, 16<<20
		}, []string{"size 16777216 exceeds rxe0 port 1 max_msg_sz 8388608"}},
		{"registered memory over max_mr_size", sink, func(r *oob.Setup) { lim.Attr.MaxMRSize = 1024 },
			[]string{"registered memory ", " bytes exceeds rxe0's max_mr_size 1024"}},
		{"out of oob bounds", sink, func(r *oob.Setup) { r.Scenario.QPs = 0 },
			[]string{"qps 0 out of range 1..256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim = peerLimits()
			req := tc.req()
			tc.mod(req)
			err := CheckSetup(req, lim)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestSetupCost counts what a Setup makes the peer create.
func TestSetupCost(t *testing.T) {
	lim := peerLimits()
	req := clientSetup(Spec{Op: verbs.OpSend, Transport: verbs.TransportRC, Size: 1000, QPs: 4, QD: 127}, true)
	c := SetupCost(req, lim)
	page := int64(os.Getpagesize())
	assert.Equal(t, Cost{Sides: 1, QPs: 4, WRs: 4 * (128 + 512), CQEs: 4 * (128 + 512), Registered: (8192 + page - 1) / page * page}, c,
		"2 slots of 1024 bytes per QP, page rounded")
	req.Scenario.SRQ, req.Scenario.Inline = true, 1000
	c = SetupCost(req, lim)
	assert.Equal(t, 4*128+512, c.WRs, "one SRQ instead of four receive queues")
	assert.Equal(t, int64(4*128*1000), c.Inline)
	assert.Equal(t, c.Registered+c.Inline, c.Memory())
	req.Scenario.SendDepth, req.Scenario.RecvDepth = 65536, 65536
	assert.Equal(t, lim.Attr.MaxCQE, SetupCost(req, lim).CQEs, "the CQ is clamped to max_cqe, as NewSide does")
}

// TestCheckSetupAcceptsRPCClients: the Setup a client sends for an echo
// RPC over RDMA_WRITE (role write-rpc), for random specs the client's own
// check takes (seeded, printed), passes the peer's check, and the peer
// reads back the spec's verb, transport, size, window and inline; the
// cost counts the response side.
func TestCheckSetupAcceptsRPCClients(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	lim := peerLimits()
	mtu := lim.PortAttr.ActiveMTU
	for n := 0; n < 500; {
		s := Spec{Op: verbs.OpWrite, Transport: []verbs.Transport{verbs.TransportRC, verbs.TransportUC}[rng.IntN(2)],
			Size: 1 + rng.IntN(mtu), QD: 1 + rng.IntN(maxWindow), Inline: rng.IntN(2) == 0}
		s.Kind = KindRPC
		s.defaults()
		if s.CheckRPC(lim) != nil {
			continue // e.g. inline beyond max_inline_data: the client skips it
		}
		n++
		cfg := rpcPairConfig(&s)
		cfg.defaults()
		req := setupRequest(&cfg, mtu, 0x1234567)
		req.Endpoints = []oob.Endpoint{{QPN: 0x100, GID: "::ffff:192.0.2.1"}}
		req.Targets = []oob.Target{{Addr: 0x1000, RKey: 1}}
		req.Resp = &oob.Endpoint{QPN: 0x200, GID: "::ffff:192.0.2.1"}
		require.NoError(t, CheckSetup(req, lim), "%+v", s)
		got, err := SetupSpec(req)
		require.NoError(t, err)
		assert.Equal(t, []any{s.Op, s.Transport, s.Size, s.QD, s.Inline}, []any{got.Op, got.Transport, got.Size, got.QD, got.Inline}, "%+v", s)
		one := *req
		one.Scenario.Role, one.Scenario.RPC, one.Resp = string(roleTarget), nil, nil
		c, c1 := SetupCost(req, lim), SetupCost(&one, lim)
		assert.Equal(t, []int{2, 2, 2 * c1.WRs}, []int{c.Sides, c.QPs, c.WRs}, "%+v", s)
		req.Scenario.RPC.Window++ // one request slot beyond the peer's buffer
		assert.Error(t, CheckSetup(req, lim), "%+v: window %d", s, req.Scenario.RPC.Window)
	}
}
