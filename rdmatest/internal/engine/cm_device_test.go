package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
	"github.com/rdmabench/rdmabench/verbs"
)

// Device tests of -rdma.cm: pairs connected through rdma_cm move data,
// and release every rdma_cm id and channel.

// cmDevice is Device with -rdma.cm on.
func cmDevice(t *testing.T) *Dev {
	t.Helper()
	d := Device(t)
	d.Opts.CM = flags.CMOn
	require.True(t, d.UseCM())
	return d
}

func liveCMObjects() int {
	n := 0
	for _, o := range verbs.Live() {
		if o.Kind == verbs.KindCMID || o.Kind == verbs.KindCMChannel {
			n++
		}
	}
	return n
}

// TestCMLatencyRunsVerify: the latency families' round trips on pairs
// connected through rdma_cm pass their verification (every echoed or
// read byte checked, the counters of the atomics), and a corrupted byte
// still fails it.
func TestCMLatencyRunsVerify(t *testing.T) {
	d := cmDevice(t)
	for _, tc := range []struct {
		name string
		s    Spec
	}{
		{"RC write", Spec{Op: verbs.OpWrite, Size: 64}},
		{"RC send", Spec{Op: verbs.OpSend, Size: 64}},
		{"UD send", Spec{Op: verbs.OpSend, Transport: verbs.TransportUD, Size: 64}},
		{"RC read", Spec{Op: verbs.OpRead, Size: 64}},
		{"RC fetch-add", Spec{Op: verbs.OpFetchAdd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loopErr, verr := latencyRun(t, d, tc.s, 50, func(*Pair) {})
			require.NoError(t, loopErr)
			require.NoError(t, verr)
		})
	}
	loopErr, verr := latencyRun(t, d, Spec{Op: verbs.OpSend, Size: 64}, 50, func(p *Pair) { p.A.OutBytes(0)[3] ^= 0xff })
	require.NoError(t, loopErr)
	assert.ErrorContains(t, verr, "verification", "a corrupted byte still fails the check over rdma_cm")
}

// TestCMPairSends: every QP of a two-QP pair is connected through the CM
// (one rdma_cm id and channel per end while the pair is open, none after),
// and a SEND on QP 1 arrives with its payload; for UD with the CM's
// address handle and Q_Key.
func TestCMPairSends(t *testing.T) {
	d := cmDevice(t)
	for _, tr := range []verbs.Transport{verbs.TransportRC, verbs.TransportUD} {
		t.Run(tr.String(), func(t *testing.T) {
			before := liveCMObjects()
			t.Cleanup(func() { assert.Equal(t, before, liveCMObjects(), "every rdma_cm id and channel released") })
			p := NewPair(t, d, PairConfig{Transport: tr, QPs: 2, SlotSize: 256, SendDepth: 8, RecvDepth: 8})
			assert.Equal(t, before+8, liveCMObjects(), "2 QPs × 2 ends × (id + channel)")
			if tr == verbs.TransportUD {
				assert.Equal(t, uint32(verbs.CMQKey), p.A.Peer[1].Dest.QKey)
				assert.Equal(t, p.B.QPs[1].QPN(), p.A.Peer[1].Dest.QPN)
			}
			payload := []byte("through rdma_cm, QP 1")
			copy(p.A.OutBytes(1), payload)
			off := 0
			if tr == verbs.TransportUD {
				off = grhBytes
			}
			require.NoError(t, p.B.QPs[1].PostRecv([]verbs.RecvWR{{ID: 1, NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{p.B.In(1, off+len(payload))}}}))
			wr := verbs.SendWR{ID: 2, Op: verbs.OpSend, Flags: verbs.FlagSignaled, NumSGE: 1,
				SGE: [verbs.MaxWRSGE]verbs.SGE{p.A.Out(1, len(payload))}, UD: p.A.Peer[1].Dest}
			require.NoError(t, p.A.QPs[1].PostSend([]verbs.SendWR{wr}))
			pollOK(t, p.A.CQ)
			wc := pollOK(t, p.B.CQ)
			assert.Equal(t, p.B.QPs[1].QPN(), wc.QPN)
			assert.Equal(t, payload, p.B.InBytes(1)[off:off+len(payload)])
		})
	}
}

// pollOK polls cq for one successful completion (5 s at most).
func pollOK(t *testing.T, cq *verbs.CQ) verbs.WC {
	t.Helper()
	wcs := make([]verbs.WC, 1)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		n, err := cq.Poll(wcs)
		require.NoError(t, err)
		if n == 1 {
			require.NoError(t, wcs[0].Err())
			return wcs[0]
		}
	}
	t.Fatal("no completion within 5 s")
	return verbs.WC{}
}

// TestCMSkipsUC: under -rdma.cm a UC pair is refused with the reason the
// UC benchmarks skip with (ci/skips.allow's cm pass allows it); by hand
// it is not.
func TestCMSkipsUC(t *testing.T) {
	d := cmDevice(t)
	assert.Equal(t, "UC cannot be connected through rdma_cm (-rdma.cm)", d.cmSkip(verbs.TransportUC))
	assert.Empty(t, d.cmSkip(verbs.TransportRC))
	assert.Empty(t, d.cmSkip(verbs.TransportUD))
	d.Opts.CM = flags.CMOff
	assert.Empty(t, d.cmSkip(verbs.TransportUC))
	d.Opts.CM = flags.CMAuto
	assert.Equal(t, d.Attr().NodeTransport == verbs.NodeTransportIWARP, d.UseCM(), "auto: rdma_cm only on iWARP")
}
