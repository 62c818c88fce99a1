package engine

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// newTestStream builds a pair for streaming spec s (which must be valid)
// and the requester's C stream of n messages on it, ready to run.
func newTestStream(t *testing.T, d *Dev, s Spec, n int64, timeout time.Duration) (*Pair, *verbs.Loop) {
	t.Helper()
	s.defaults()
	s.Kind = KindStream
	require.NoError(t, s.Check(d))
	p := NewPair(t, d, s.pairConfig())
	p.Dev = &Dev{Device: d.Device, PortNum: d.PortNum, PortAttr: d.PortAttr, GIDEntry: d.GIDEntry, Opts: d.Opts}
	p.Dev.Opts.Timeout = timeout
	l, err := newStreamLoop(p, p.A, &s, n, 0)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, l.Close()) })
	return p, l
}

// runStream streams n WRs of s and waits for all of them.
func runStream(t *testing.T, d *Dev, s Spec, n int) {
	t.Helper()
	_, l := newTestStream(t, d, s, int64(n), d.Opts.Timeout)
	_, err := readyLoop(l, -1).result()
	require.NoError(t, err)
}

// TestFaultQPErrorMidStream forces the requester's QP into ERR while a
// stream of RDMA WRITEs runs: the C loop must end with the flush status
// (or the provider's refusal to post) well within its deadline.
func TestFaultQPErrorMidStream(t *testing.T) {
	d := Device(t)
	const timeout = 5 * time.Second
	p, l := newTestStream(t, d, Spec{Op: verbs.OpWrite, Size: 4096, QD: 64}, 1<<40, timeout)
	qp := p.A.QPs[0]
	toErr := make(chan error, 1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		toErr <- qp.ToError()
	}()
	start := time.Now()
	_, err := readyLoop(l, -1).result()
	elapsed := time.Since(start)
	require.NoError(t, <-toErr)
	require.Error(t, err, "the stream ran %v without noticing the ERR state", elapsed)
	t.Logf("after %v: %v", elapsed, err)
	var le *verbs.LoopError
	require.ErrorAs(t, err, &le)
	var pe *verbs.PostError
	if !errors.As(err, &pe) {
		var wce *verbs.WCError
		require.ErrorAs(t, err, &wce)
		assert.Equal(t, verbs.WCWRFlushErr, wce.Status)
		assert.Contains(t, err.Error(), "Work Request Flushed Error")
	}
	assert.Less(t, elapsed, timeout)
	state, err := qp.State()
	require.NoError(t, err)
	assert.Equal(t, verbs.QPSErr, state)
}

// TestFaultPeerNeverAnswers is a ping whose peer never posts a receive:
// the requester's wait for the answer must end at its deadline with a
// message saying what it waited for and the QP state. On RC the ping
// itself never completes (RNR retries forever); on UD it completes and
// is dropped at the peer.
func TestFaultPeerNeverAnswers(t *testing.T) {
	for _, tr := range []verbs.Transport{verbs.TransportRC, verbs.TransportUD} {
		t.Run(tr.String(), func(t *testing.T) {
			d := Device(t)
			const timeout = 2 * time.Second
			p := NewPair(t, d, PairConfig{Transport: tr, SendDepth: 4, RecvDepth: 4})
			recvLen := 64
			if tr == verbs.TransportUD {
				recvLen += grhBytes
			}
			require.NoError(t, p.A.QPs[0].PostRecv([]verbs.RecvWR{{ID: 2, NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{p.A.In(0, recvLen)}}}))
			require.NoError(t, p.A.QPs[0].PostSend([]verbs.SendWR{{
				ID: 1, Op: verbs.OpSend, Flags: verbs.FlagSignaled, NumSGE: 1,
				SGE: [verbs.MaxWRSGE]verbs.SGE{p.A.Out(0, 64)}, UD: p.A.Peer[0].Dest,
			}}))
			poll := NewPoller(p.A, 4, timeout)
			outstanding := 2 // the ping and the receive for the answer
			start := time.Now()
			var err error
			for err == nil {
				var wcs []verbs.WC
				wcs, err = poll.Wait("B's answer to the ping (a receive completion on A)", outstanding)
				for _, wc := range wcs {
					require.False(t, isRecv(&wc), "got an answer from a peer that posts no receive: %+v", wc)
					outstanding--
				}
			}
			elapsed := time.Since(start)
			t.Logf("after %v: %v", elapsed, err)
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
			var se *StallError
			if assert.ErrorAs(t, err, &se) {
				assert.Equal(t, timeout, se.Timeout)
			}
			for _, want := range []string{"deadline 2s exceeded", "B's answer to the ping", "RTS"} {
				assert.ErrorContains(t, err, want)
			}
			wantOut := map[verbs.Transport]string{verbs.TransportRC: "2 WRs outstanding", verbs.TransportUD: "1 WRs outstanding"}[tr]
			assert.ErrorContains(t, err, wantOut)
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+time.Second)
		})
	}
}

// TestFaultRemoteAccess writes where the requester has no right to: the
// completion must carry the remote access error status.
func TestFaultRemoteAccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		rkey func(t *testing.T, p *Pair) uint32
	}{
		{"bad rkey", func(t *testing.T, p *Pair) uint32 { return p.A.Peer[0].RKey ^ 0xff }},
		{"MR without remote write", func(t *testing.T, p *Pair) uint32 {
			mr, err := p.PD.RegMRRange(p.B.Buf, 0, p.B.Buf.Len(), verbs.AccessLocalWrite|verbs.AccessRemoteRead)
			require.NoError(t, err)
			Close(t, mr)
			return mr.RKey()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Device(t)
			p := NewPair(t, d, PairConfig{Transport: verbs.TransportRC, SendDepth: 4, RecvDepth: 1})
			require.NoError(t, p.A.QPs[0].PostSend([]verbs.SendWR{{
				ID: 7, Op: verbs.OpWrite, Flags: verbs.FlagSignaled, NumSGE: 1,
				SGE: [verbs.MaxWRSGE]verbs.SGE{p.A.Out(0, 64)}, RemoteAddr: p.A.Peer[0].Addr, RKey: tc.rkey(t, p),
			}}))
			wcs, err := NewPoller(p.A, 4, 5*time.Second).Wait("the RDMA WRITE's completion", 1)
			require.Empty(t, wcs)
			t.Logf("%v", err)
			var wce *verbs.WCError
			require.ErrorAs(t, err, &wce)
			assert.Equal(t, verbs.WCRemAccessErr, wce.Status)
			assert.Equal(t, uint64(7), wce.WRID)
			assert.ErrorContains(t, err, "remote access error")
		})
	}
}

// TestFaultResourceLimits asks for more than the device allows: the
// error must be a *verbs.LimitError naming the device limit.
func TestFaultResourceLimits(t *testing.T) {
	d := Device(t)
	a := d.Attr()
	pd, err := d.AllocPD()
	require.NoError(t, err)
	Close(t, pd)
	cq, err := d.NewCQ(16, nil)
	require.NoError(t, err)
	Close(t, cq)
	for _, tc := range []struct {
		name   string
		create func() (interface{ Close() error }, error)
		limit  int
		source string
	}{
		{"CQ entries above max_cqe", func() (interface{ Close() error }, error) { return d.NewCQ(a.MaxCQE+1, nil) }, a.MaxCQE, "max_cqe"},
		{"QP send WRs above max_qp_wr", func() (interface{ Close() error }, error) {
			return pd.NewQP(verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: a.MaxQPWR + 1})
		}, a.MaxQPWR, "max_qp_wr"},
		{"SRQ WRs above max_srq_wr", func() (interface{ Close() error }, error) { return pd.NewSRQ(a.MaxSRQWR+1, 1) }, a.MaxSRQWR, "max_srq_wr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj, err := tc.create()
			if err == nil {
				Close(t, obj)
			}
			t.Logf("%v", err)
			var le *verbs.LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, int64(tc.limit), le.Limit)
			assert.Equal(t, int64(tc.limit+1), le.Value)
			assert.Equal(t, tc.source, le.Source)
			assert.True(t, strings.Contains(err.Error(), tc.source))
		})
	}
}
