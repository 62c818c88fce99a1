package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// withQPs fills req's endpoints and targets as a client does.
func withQPs(req *oob.Setup) *oob.Setup {
	for i := range req.Scenario.QPs {
		req.Endpoints = append(req.Endpoints, oob.Endpoint{QPN: uint32(0x100 + i), PSN: 1, GID: "::ffff:192.0.2.1"})
		req.Targets = append(req.Targets, oob.Target{Addr: 0x1000, RKey: 1})
	}
	return req
}

// TestOwnSetupRequest: a pair of one's own pattern asks a peer for role
// program with side B's program, or for a target without one, listing
// exactly the accesses side A's program uses; the peer's checks accept
// what the client sends (CheckSetup), and refuse a program that does not
// fit the device.
func TestOwnSetupRequest(t *testing.T) {
	_, b := commitSpecs()
	lim := rxeLimits()
	for _, tc := range []struct {
		name   string
		own    Own
		role   string
		op     string
		access []string
	}{
		{"commit: B's program", Own{B: &b, Access: verbs.AccessRemoteWrite}, "program", "", []string{oob.AccessRemoteWrite}},
		{"B's program, A only sends", Own{B: &b}, "program", "", nil},
		{"locked read: no program on B", Own{Access: verbs.AccessRemoteAtomic | verbs.AccessRemoteRead | verbs.AccessRemoteWrite}, "target",
			"ATOMIC_FETCH_AND_ADD", []string{oob.AccessRemoteWrite, oob.AccessRemoteRead, oob.AccessRemoteAtomic}},
		{"READ only", Own{Access: verbs.AccessRemoteRead}, "target", "RDMA_READ", []string{oob.AccessRemoteRead}},
		{"WRITE only", Own{Access: verbs.AccessRemoteWrite}, "target", "RDMA_WRITE", []string{oob.AccessRemoteWrite}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := PairConfig{SlotSize: 8 + 4096, Own: &tc.own}
			cfg.defaults()
			req, err := ownSetupRequest(&cfg, 1024, 0x1234)
			require.NoError(t, err)
			assert.Equal(t, tc.role, req.Scenario.Role)
			assert.Equal(t, tc.op, req.Scenario.Op)
			assert.Equal(t, tc.access, req.Access)
			assert.Equal(t, tc.own.B, req.Program)
			assert.NoError(t, CheckSetup(withQPs(req), lim))
		})
	}
	t.Run("A only sends and B has no program", func(t *testing.T) {
		cfg := PairConfig{Own: &Own{}}
		cfg.defaults()
		_, err := ownSetupRequest(&cfg, 1024, 0x1234)
		assert.ErrorContains(t, err, "side B has no program to receive")
	})
	t.Run("a program beyond the device", func(t *testing.T) {
		cfg := PairConfig{SlotSize: 8 + 4096, SendDepth: 1 << 16, Own: &Own{B: &b}}
		cfg.defaults()
		req, err := ownSetupRequest(&cfg, 1024, 0x1234)
		require.NoError(t, err)
		small := lim
		small.Attr.MaxQPWR, small.Attr.MaxInline = 4096, 0
		req.Scenario.Inline = 64
		err = CheckSetup(withQPs(req), small)
		assert.ErrorContains(t, err, "send_depth 65536 out of range 2..4096 (rxe0's max_qp_wr)")
		assert.ErrorContains(t, err, "inline 64 exceeds rxe0's max_inline_data 0")
	})
	t.Run("a program out of its slots, named by step", func(t *testing.T) {
		bad := b
		bad.Steps = append([]prog.Step(nil), b.Steps...)
		bad.Steps[1].WRs = []prog.WR{{Op: verbs.OpSend, Local: prog.Mem{Off: 4160, Len: 8}}}
		cfg := PairConfig{SlotSize: 8 + 4096, Own: &Own{B: &bad}}
		cfg.defaults()
		req, err := ownSetupRequest(&cfg, 1024, 0x1234)
		require.NoError(t, err)
		err = CheckSetup(withQPs(req), lim)
		var se *verbs.StepError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, 1, se.Step)
		assert.ErrorContains(t, err, "out of range: a slot holds 4160 bytes")
	})
}
