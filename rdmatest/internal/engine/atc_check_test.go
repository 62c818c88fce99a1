package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestATC16Checks covers the validation of the rdma_bench (ATC'16)
// knobs: each refused spec must name the value and the limit; each
// accepted one must pass.
func TestATC16Checks(t *testing.T) {
	lim := rxeLimits()
	const (
		write, read, send = verbs.OpWrite, verbs.OpRead, verbs.OpSend
		sendImm, writeImm = verbs.OpSendImm, verbs.OpWriteImm
		fadd              = verbs.OpFetchAdd
		ud                = verbs.TransportUD
		stream, latency   = true, false
		notHere           = true // the error must be an *Unsupported
	)
	cases := []struct {
		name      string
		spec      Spec
		streaming bool
		want      []string // nil: accepted
		unsupp    bool
	}{
		{name: "batch above signal", spec: Spec{Op: write, Size: 32, Batch: 16, Signal: 8, SignalRules: true}, streaming: stream,
			want: []string{"batch 16", "signal interval 8", "postlist ≤ unsig_batch"}},
		{name: "qd below 2×signal", spec: Spec{Op: write, Size: 32, QD: 100, Signal: 64, SignalRules: true}, streaming: stream,
			want: []string{"qd) 100", "2 × signal interval 64 = 128", "sq_depth ≥ 2·unsig_batch"}},
		{name: "qd exactly 2×signal", spec: Spec{Op: write, Size: 32, QD: 128, Batch: 16, Signal: 64, SignalRules: true}, streaming: stream},
		{name: "batch above signal allowed without the rules", spec: Spec{Op: write, Size: 32, Batch: 16, Signal: 8}, streaming: stream},
		{name: "inline above the device limit", spec: Spec{Op: send, Size: 600, Inline: true, SignalRules: true}, streaming: stream,
			want: []string{"inline size 600", "max_inline_data 512"}, unsupp: notHere},
		{name: "header-only UD SEND_WITH_IMM", spec: Spec{Op: sendImm, Transport: ud, HeaderOnly: true}, streaming: stream},
		{name: "header-only WRITE_WITH_IMM", spec: Spec{Op: writeImm, HeaderOnly: true}, streaming: stream},
		{name: "header-only with a payload", spec: Spec{Op: sendImm, Size: 8, HeaderOnly: true}, streaming: stream,
			want: []string{"size 8", "must be 0"}},
		{name: "header-only without immediate", spec: Spec{Op: send, HeaderOnly: true}, streaming: stream,
			want: []string{"immediate data", "not SEND"}},
		{name: "size 0 without header-only", spec: Spec{Op: sendImm}, streaming: stream,
			want: []string{"size 0", "at least 1 byte", "HeaderOnly"}},
		{name: "4096 counters stride 64", spec: Spec{Op: fadd, Counters: 4096, Stride: 64}, streaming: stream},
		{name: "counters 0 on atomics is the default", spec: Spec{Op: fadd, Counters: 0}, streaming: stream},
		{name: "counters negative", spec: Spec{Op: fadd, Counters: -1}, streaming: stream, want: []string{"counters -1", "at least 1"}},
		{name: "stride not a multiple of 8", spec: Spec{Op: fadd, Counters: 4, Stride: 12}, streaming: stream,
			want: []string{"stride 12", "multiple of 8"}},
		{name: "counters on a WRITE", spec: Spec{Op: write, Size: 8, Counters: 4}, streaming: stream,
			want: []string{"counters 4", "atomics only", "RDMA_WRITE"}},
		{name: "counters span above MaxSize", spec: Spec{Op: fadd, Counters: 1 << 24, Stride: 128}, streaming: stream,
			want: []string{"16777216 counters", "128 bytes apart", "1073741824"}},
		{name: "bidir on latency", spec: Spec{Op: send, Size: 8, Bidir: true}, streaming: latency, want: []string{"bidir", "streaming"}},
		{name: "bidir stream", spec: Spec{Op: send, Size: 8, Bidir: true}, streaming: stream},
		{name: "threads negative", spec: Spec{Op: write, Size: 8, Threads: -1}, streaming: stream, want: []string{"threads -1", "at least 0"}},
		{name: "threads with bidir", spec: Spec{Op: write, Size: 8, Threads: 2, Bidir: true}, streaming: stream,
			want: []string{"threads 2", "one-way streams"}},
		{name: "threads × qps above max_qp", spec: Spec{Op: write, Size: 8, Threads: 1000, QPs: 1000}, streaming: stream,
			want: []string{"threads 1000 × qps 1000", "2000000 QPs", "max_qp 1048560"}},
		{name: "inbound READ", spec: Spec{Op: read, Size: 8, Inbound: true}, streaming: stream,
			want: []string{"inbound", "RDMA_READ"}, unsupp: notHere},
		{name: "inbound WRITE_WITH_IMM", spec: Spec{Op: writeImm, Size: 8, Inbound: true}, streaming: stream},
		{name: "inbound with bidir", spec: Spec{Op: send, Size: 8, Inbound: true, Bidir: true}, streaming: stream,
			want: []string{"inbound and bidir"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertVerdict(t, withKind(tc.spec, tc.streaming).CheckLimits(lim), tc.want, tc.unsupp)
		})
	}
}

// assertVerdict checks a validation's verdict: accepted when want is
// nil, else refused with every want substring in the message and, when
// unsupp, as an *Unsupported (a plain error otherwise).
func assertVerdict(t *testing.T, err error, want []string, unsupp bool) {
	t.Helper()
	if want == nil {
		assert.NoError(t, err)
		return
	}
	require.Error(t, err)
	for _, w := range want {
		assert.ErrorContains(t, err, w)
	}
	assert.Equal(t, unsupp, IsUnsupported(err), "IsUnsupported(%v)", err)
}

// TestCounterSpan checks the passive side's slot holds every counter.
func TestCounterSpan(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		want int
	}{
		{Spec{Op: verbs.OpFetchAdd}, 8},
		{Spec{Op: verbs.OpFetchAdd, Counters: 4096, Stride: 64}, 4095*64 + 8},
		{Spec{Op: verbs.OpCmpSwap, Counters: 16}, 15*8 + 8},
		{Spec{Op: verbs.OpWrite, Size: 100}, 100},
	} {
		tc.spec.defaults()
		assert.Equal(t, tc.want, tc.spec.counterSpan(), "%+v", tc.spec)
		assert.Equal(t, tc.want, withKind(tc.spec, true).pairConfig().SlotSize, "%+v", tc.spec)
	}
}
