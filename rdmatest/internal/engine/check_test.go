package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
	"github.com/rdmabench/rdmabench/verbs"
)

// withKind is s as the runner of a stream (stream) or of a latency run
// sets it.
func withKind(s Spec, stream bool) Spec {
	s.Kind = KindLatency
	if stream {
		s.Kind = KindStream
	}
	return s
}

// rxeLimits are the limits of a Soft-RoCE device as rxe reports them.
func rxeLimits() Limits {
	return Limits{
		Device: "rxe0",
		Attr: verbs.DeviceAttr{
			Name: "rxe0", Provider: "rxe", MaxQPWR: 1048576, MaxQP: 1048560, MaxSGE: 32, MaxCQE: 32767,
			MaxInline: 512, AtomicCap: verbs.AtomicHCA, PhysPortCnt: 1,
		},
		Port:     1,
		PortAttr: verbs.PortAttr{Num: 1, State: verbs.PortActive, ActiveMTU: 1024, MaxMTU: 4096, MaxMsgSize: 8388608},
	}
}

// badInput is one input that must be refused with a message naming the
// offending value and the limit (want: substrings of the message).
type badInput struct {
	name        string
	err         func() error
	want        []string
	unsupported bool   // the error must be an *Unsupported
	todo        string // non-empty: the message is known to lack the value or the limit
}

func TestBadInputs(t *testing.T) {
	lim := rxeLimits()
	noAtomics := rxeLimits()
	noAtomics.Attr.AtomicCap = verbs.AtomicNone
	stream := func(s Spec) func() error { return func() error { return withKind(s, true).CheckLimits(lim) } }
	latency := func(s Spec) func() error { return func() error { return withKind(s, false).CheckLimits(lim) } }
	cq := &verbs.CQ{} // never used: Validate only checks that it is set
	qp := func(c verbs.QPConfig) func() error {
		return func() error {
			if c.SendCQ == nil && c.RecvCQ == nil {
				c.SendCQ, c.RecvCQ = cq, cq
			}
			if c.MaxSendWR == 0 {
				c.MaxSendWR = 128
			}
			return c.Validate(lim.Attr)
		}
	}
	const (
		write, read, send = verbs.OpWrite, verbs.OpRead, verbs.OpSend
		fadd, cas         = verbs.OpFetchAdd, verbs.OpCmpSwap
		uc, ud            = verbs.TransportUC, verbs.TransportUD
	)

	cases := []badInput{
		// Spec.CheckLimits: malformed values.
		{name: "size 0", err: stream(Spec{Op: write}), want: []string{"size 0", "at least 1"}},
		{name: "gap negative", err: latency(Spec{Op: write, Size: 8, Gap: -time.Microsecond}), want: []string{"gap -1µs", "0 … 1s"}},
		{name: "gap above 1s", err: latency(Spec{Op: write, Size: 8, Gap: 2 * time.Second}), want: []string{"gap 2s", "0 … 1s"}},
		{name: "gap on a stream", err: stream(Spec{Op: write, Size: 8, Gap: time.Microsecond}), want: []string{"gap", "latency runs"}},
		{name: "load above 1", err: stream(Spec{Op: send, Size: 64, Load: 1.5}), want: []string{"load 1.5", "(0, 1]"}},
		{name: "load negative", err: stream(Spec{Op: send, Size: 64, Load: -0.1}), want: []string{"load -0.1", "(0, 1]"}},
		{name: "load on a latency run", err: latency(Spec{Op: send, Size: 64, Load: 0.5}), want: []string{"offered load", "not latency runs"}},
		{name: "load on atomics", err: stream(Spec{Op: fadd, Load: 0.5}), want: []string{"offered load", "atomics"}},
		{name: "load with bidir", err: stream(Spec{Op: send, Size: 64, Load: 0.5, Bidir: true}), want: []string{"offered load", "bidir"}},
		{name: "size negative", err: stream(Spec{Op: write, Size: -4}), want: []string{"size -4", "at least 1"}},
		{name: "qd negative", err: stream(Spec{Op: write, Size: 8, QD: -1}), want: []string{"qd -1", "at least 1"}},
		{name: "qps negative", err: stream(Spec{Op: write, Size: 8, QPs: -2}), want: []string{"qps -2", "at least 1"}},
		{name: "batch negative", err: stream(Spec{Op: write, Size: 8, Batch: -1}), want: []string{"batch -1", "at least 1"}},
		{name: "signal negative", err: stream(Spec{Op: write, Size: 8, Signal: -3}), want: []string{"signal interval -3", "at least 1"}},
		{name: "batch above qd", err: stream(Spec{Op: write, Size: 8, QD: 16, Batch: 17}), want: []string{"batch 17", "qd 16"}},
		{name: "signal above qd", err: stream(Spec{Op: write, Size: 8, QD: 16, Signal: 32}), want: []string{"signal interval 32", "qd 16"}},
		{name: "several at once", err: stream(Spec{Op: write, QD: -1}), want: []string{"size 0", "qd -1", "at least 1"}},
		// Spec.CheckLimits: device limits.
		{name: "qd above max_qp_wr", err: stream(Spec{Op: write, Size: 8, QD: 1048577}), want: []string{"qd 1048577", "max_qp_wr 1048576"}},
		{name: "qps above max_qp", err: stream(Spec{Op: write, Size: 8, QPs: 600000}), want: []string{"qps 600000", "1200000 QPs", "max_qp 1048560"}},
		{name: "size above max_msg_sz", err: stream(Spec{Op: write, Size: 8388609}), want: []string{"size 8388609", "max_msg_sz 8388608"}, unsupported: true},
		{name: "inline above max_inline_data", err: stream(Spec{Op: send, Size: 513, Inline: true}), want: []string{"inline size 513", "max_inline_data 512"}, unsupported: true},
		{name: "UD size above MTU", err: stream(Spec{Op: send, Transport: ud, Size: 1025}), want: []string{"size 1025", "MTU 1024"}, unsupported: true},
		{name: "atomic size 16", err: stream(Spec{Op: fadd, Size: 16}), want: []string{"not 16", "exactly 8 bytes"}},
		{name: "atomics without device support", err: func() error { return Spec{Kind: KindStream, Op: cas}.CheckLimits(noAtomics) }, want: []string{"rxe0", "no atomic support"}, unsupported: true},
		// Spec.CheckLimits: combinations the verb or transport cannot do.
		{name: "inline on READ", err: stream(Spec{Op: read, Size: 64, Inline: true}), want: []string{"inline", "RDMA_READ"}, unsupported: true},
		{name: "inline on fetch-add", err: stream(Spec{Op: fadd, Inline: true}), want: []string{"inline", "ATOMIC_FETCH_AND_ADD"}, unsupported: true},
		{name: "fetch-add on UC", err: stream(Spec{Op: fadd, Transport: uc}), want: []string{"UC", "ATOMIC_FETCH_AND_ADD"}, unsupported: true},
		{name: "cmp-swap on UD", err: stream(Spec{Op: cas, Transport: ud}), want: []string{"UD", "ATOMIC_CMP_AND_SWP"}, unsupported: true},
		{name: "READ on UD", err: stream(Spec{Op: read, Transport: ud, Size: 64}), want: []string{"UD", "RDMA_READ"}, unsupported: true},
		{name: "READ on UC", err: stream(Spec{Op: read, Transport: uc, Size: 64}), want: []string{"UC", "RDMA_READ"}, unsupported: true},
		{name: "WRITE on UD", err: stream(Spec{Op: write, Transport: ud, Size: 64}), want: []string{"UD", "RDMA_WRITE"}, unsupported: true},
		{name: "SRQ with WRITE", err: stream(Spec{Op: write, Size: 64, SRQ: true}), want: []string{"SRQ", "RDMA_WRITE"}, unsupported: true},
		{name: "qps above 1 for latency", err: latency(Spec{Op: send, Size: 64, QPs: 2}), want: []string{"one QP", "not 2"}, unsupported: true},
		{name: "event mode for write latency", err: latency(Spec{Op: write, Size: 64, Event: true}), want: []string{"event mode", "write latency"}, unsupported: true},
		// Options given to OpenDevWith directly: refused before anything opens.
		{name: "OpenDevWith zero Options", err: func() error { _, err := OpenDevWith(flags.Options{}); return err }, want: []string{"-rdma.port 0", "1..255", "-rdma.timeout 0s"}},
		{name: "OpenDevWith bad CPU list", err: func() error {
			_, err := OpenDevWith(flags.Options{Port: 1, GIDIndex: -1, Timeout: time.Second, CPUs: "1-0"})
			return err
		}, want: []string{"-rdma.cpus", "1-0"}},
		// verbs.QPConfig.Validate.
		{name: "QP send depth negative", err: qp(verbs.QPConfig{MaxSendWR: -1}), want: []string{"send queue depth -1", "minimum 1"}},
		{name: "QP send depth 0", err: func() error { return verbs.QPConfig{SendCQ: cq, RecvCQ: cq}.Validate(lim.Attr) }, want: []string{"send queue depth 0", "minimum 1"}},
		{name: "QP send depth above max_qp_wr", err: qp(verbs.QPConfig{MaxSendWR: 1048577}), want: []string{"send queue depth 1048577", "1048576", "max_qp_wr"}},
		{name: "QP recv depth negative", err: qp(verbs.QPConfig{MaxRecvWR: -1}), want: []string{"receive queue depth -1", "minimum 0"}},
		{name: "QP recv depth above max_qp_wr", err: qp(verbs.QPConfig{MaxRecvWR: 2000000}), want: []string{"receive queue depth 2000000", "1048576", "max_qp_wr"}},
		{name: "QP send SGEs above max_sge", err: qp(verbs.QPConfig{MaxSendSGE: 33}), want: []string{"send SGEs per WR 33", "32", "max_sge"}},
		{name: "QP inline above max_inline_data", err: qp(verbs.QPConfig{MaxInline: 513}), want: []string{"max inline data 513", "512", "max_inline_data"}},
		{name: "QP inline negative", err: qp(verbs.QPConfig{MaxInline: -1}), want: []string{"max inline data -1", "minimum 0"}},
		{name: "QP invalid transport", err: qp(verbs.QPConfig{Transport: 7}), want: []string{"invalid transport 7", "0=RC", "2=UD"}},
		{name: "QP without CQs", err: func() error { return verbs.QPConfig{MaxSendWR: 1}.Validate(lim.Attr) }, want: []string{"SendCQ and RecvCQ"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
			assert.Equal(t, tc.unsupported, IsUnsupported(err), "IsUnsupported(%v)", err)
		})
	}
}

// TestGoodInputs makes sure the table above fails for the reason it
// names and not because the base values are themselves refused.
func TestGoodInputs(t *testing.T) {
	lim := rxeLimits()
	for _, s := range []Spec{
		{Op: verbs.OpWrite, Size: 8388608, QD: 1048576, Batch: 16, Signal: 16},
		{Op: verbs.OpSend, Size: 512, Inline: true, SRQ: true},
		{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 1024},
		{Op: verbs.OpFetchAdd},
		{Op: verbs.OpWrite, Size: 64, Signal: 0}, // Signal 0 means the default, 1
	} {
		assert.NoError(t, withKind(s, true).CheckLimits(lim), "%+v", s)
	}
	cq := &verbs.CQ{}
	assert.NoError(t, verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1048576, MaxRecvWR: 1048576, MaxInline: 512}.Validate(lim.Attr))
}
