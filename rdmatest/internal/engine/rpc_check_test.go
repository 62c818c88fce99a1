package engine

import (
	"testing"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestRPCChecks covers the validation of echo RPC specs: each refused
// spec names the value and the limit; each accepted one passes.
func TestRPCChecks(t *testing.T) {
	lim := rxeLimits()
	small := rxeLimits()
	small.Attr.MaxQPWR = 64
	const (
		write, sendImm, read = verbs.OpWrite, verbs.OpSendImm, verbs.OpRead
		rc, uc, ud           = verbs.TransportRC, verbs.TransportUC, verbs.TransportUD
	)
	cases := []struct {
		name   string
		spec   Spec
		lim    Limits
		want   []string // nil: accepted
		unsupp bool
	}{
		{name: "write over UC", spec: Spec{Op: write, Transport: uc, Size: 32, QD: 16, Inline: true}},
		{name: "write over RC", spec: Spec{Op: write, Transport: rc, Size: 1, QD: 1}},
		{name: "send over UD", spec: Spec{Op: sendImm, Transport: ud, Size: 1, QD: 256}},
		{name: "send over RC", spec: Spec{Op: sendImm, Transport: rc, Size: 32},
			want: []string{"SEND_WITH_IMM (UD)", "not SEND_WITH_IMM over RC"}, unsupp: true},
		{name: "write over UD", spec: Spec{Op: write, Transport: ud, Size: 32},
			want: []string{"not RDMA_WRITE over UD"}, unsupp: true},
		{name: "read", spec: Spec{Op: read, Size: 32}, want: []string{"not RDMA_READ over RC"}, unsupp: true},
		{name: "window above 256", spec: Spec{Op: write, Transport: uc, Size: 32, QD: 257}, want: []string{"window (qd) 257", "exceeds 256"}},
		{name: "window above max_qp_wr/2", spec: Spec{Op: write, Transport: uc, Size: 32, QD: 33}, lim: small,
			want: []string{"window (qd) 33", "2 × 33", "max_qp_wr 64"}},
		{name: "window 0", spec: Spec{Op: write, Transport: uc, Size: 32, QD: -1}, want: []string{"qd -1", "at least 1"}},
		{name: "size 0", spec: Spec{Op: sendImm, Transport: ud}, want: []string{"size 0", "at least 1 byte"}},
		{name: "response above the MTU", spec: Spec{Op: write, Transport: uc, Size: 2048},
			want: []string{"response size 2048", "path MTU 1024"}, unsupp: true},
		{name: "inline above the device limit", spec: Spec{Op: write, Transport: uc, Size: 600, Inline: true},
			want: []string{"inline size 600", "max_inline_data 512"}, unsupp: true},
		{name: "batch", spec: Spec{Op: write, Transport: uc, Size: 32, Batch: 4}, want: []string{"batch 4", "do not apply"}},
		{name: "bidir", spec: Spec{Op: write, Transport: uc, Size: 32, Bidir: true}, want: []string{"bidir", "do not apply"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.lim
			if l.Device == "" {
				l = lim
			}
			assertVerdict(t, tc.spec.CheckRPC(l), tc.want, tc.unsupp)
		})
	}
}
