package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rdmabench/rdmabench/verbs"
)

// A SEND stream on iWARP (no RNR flow control) keeps as many receives
// posted as the device and its CQ allow, up to iwarpRecvDepth; on
// InfiniBand and RoCE, and for streams that consume no receive, the
// pair is pairConfig's.
func TestStreamPairConfigRecvDepth(t *testing.T) {
	siw := verbs.DeviceAttr{NodeTransport: verbs.NodeTransportIWARP, MaxQPWR: 32768, MaxSRQWR: 4096, MaxCQE: 1 << 20}
	rxe := siw
	rxe.NodeTransport = verbs.NodeTransportIB
	send := Spec{Kind: KindStream, Op: verbs.OpSend, Transport: verbs.TransportRC, QD: 128, QPs: 1}
	write := send
	write.Op = verbs.OpWrite
	srq := send
	srq.SRQ = true
	fourQPs := send
	fourQPs.QPs = 4
	smallCQ := siw
	smallCQ.MaxCQE = 8192
	for _, tc := range []struct {
		name string
		s    Spec
		a    verbs.DeviceAttr
		want int
	}{
		{"siw SEND", send, siw, iwarpRecvDepth},
		{"siw SEND, SRQ: max_srq_wr", srq, siw, 4096},
		{"siw SEND, the CQ bounds it", send, smallCQ, 8192 - 129},
		{"siw SEND, 4 QPs share the CQ", fourQPs, smallCQ, 8192/4 - 129},
		{"siw WRITE consumes no receive", write, siw, 1},
		{"rxe SEND: RNR retry, the default", send, rxe, 0},
	} {
		assert.Equal(t, tc.want, tc.s.streamPairConfig(tc.a).RecvDepth, tc.name)
	}
}
