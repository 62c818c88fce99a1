package verbs_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/verbs"
)

// These tests need an RDMA device (run them in the VM:
// go run ./loopback/cmd/rxevm -- <verbs.test> -test.v). Both ends of every
// connection are QPs on the same device, connected to each other.

const waitTimeout = 5 * time.Second // every wait for a completion gives up after this

// closeLater closes c when the test ends (cleanups run in reverse order).
func closeLater(tb testing.TB, c interface{ Close() error }) {
	tb.Cleanup(func() { assert.NoError(tb, c.Close(), "closing %T", c) })
}

// openDevice opens the test device with rdmatest's policy (skip without
// a device, fail when one is required) and its leak check; its PortNum and
// GIDEntry are the port and GID chosen by the -rdma.* flags.
func openDevice(tb testing.TB) *rdmatest.Dev {
	tb.Helper()
	return rdmatest.Device(tb)
}

type side struct {
	qp  *verbs.QP
	cq  *verbs.CQ
	buf *verbs.Buffer
	mr  *verbs.MR
}

type pairConfig struct {
	transport verbs.Transport
	access    verbs.Access // access of side b's MR; 0 = all (the QPs always allow all)
	depth     int          // QP queue depths; 0 = 32
	rnrRetry  uint8        // 0 = default
	srq       *verbs.SRQ   // used by side b
	channel   *verbs.Channel
}

type pair struct {
	dev  *verbs.Device
	pd   *verbs.PD
	port int
	gid  verbs.GIDEntry
	a, b side
}

const bufSize = 64 << 10

// newPair creates two QPs on one device and connects them to each other
// through the device's chosen port and GID.
func newPair(tb testing.TB, dev *rdmatest.Dev, pd *verbs.PD, cfg pairConfig) *pair {
	tb.Helper()
	if cfg.access == 0 {
		cfg.access = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	}
	if cfg.depth == 0 {
		cfg.depth = 32
	}
	p := &pair{dev: dev.Device, pd: pd, port: dev.PortNum, gid: dev.GIDEntry}
	var err error
	mk := func(access verbs.Access, srq *verbs.SRQ, ch *verbs.Channel) side {
		var s side
		s.cq, err = dev.NewCQ(4*cfg.depth, ch)
		require.NoError(tb, err)
		closeLater(tb, s.cq)
		s.buf, err = verbs.AllocBuffer(bufSize, false)
		require.NoError(tb, err)
		closeLater(tb, s.buf)
		s.mr, err = pd.RegMR(s.buf, access)
		require.NoError(tb, err)
		closeLater(tb, s.mr)
		s.qp, err = pd.NewQP(verbs.QPConfig{
			Transport: cfg.transport, SendCQ: s.cq, RecvCQ: s.cq, SRQ: srq,
			MaxSendWR: cfg.depth, MaxRecvWR: cfg.depth, MaxSendSGE: verbs.MaxWRSGE, MaxRecvSGE: verbs.MaxWRSGE,
			MaxInline: min(64, dev.Attr().MaxInline),
		})
		require.NoError(tb, err)
		closeLater(tb, s.qp)
		return s
	}
	all := verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead | verbs.AccessRemoteAtomic
	p.a = mk(all, nil, nil)
	p.b = mk(cfg.access, cfg.srq, cfg.channel)
	epA, err := p.a.qp.Endpoint(p.port, p.gid.Index, 100)
	require.NoError(tb, err)
	epB, err := p.b.qp.Endpoint(p.port, p.gid.Index, 200)
	require.NoError(tb, err)
	conn := func(s side, local, remote verbs.Endpoint, access verbs.Access) {
		require.NoError(tb, s.qp.Connect(verbs.ConnectConfig{
			Port: p.port, GIDIndex: p.gid.Index, LocalPSN: local.PSN, Remote: remote, Access: access, RNRRetry: cfg.rnrRetry,
		}))
		st, err := s.qp.State()
		require.NoError(tb, err)
		require.Equal(tb, verbs.QPSRTS, st)
	}
	conn(p.a, epA, epB, all)
	conn(p.b, epB, epA, all)
	return p
}

// newDefaultPair opens the device, a PD and a connected pair.
func newDefaultPair(tb testing.TB, cfg pairConfig) *pair {
	tb.Helper()
	dev := openDevice(tb)
	pd, err := dev.AllocPD()
	require.NoError(tb, err)
	closeLater(tb, pd)
	return newPair(tb, dev, pd, cfg)
}

// waitWCs polls cq until n completions arrived (or fails after waitTimeout).
func waitWCs(tb testing.TB, cq *verbs.CQ, n int) []verbs.WC {
	tb.Helper()
	out := make([]verbs.WC, n)
	got := 0
	deadline := time.Now().Add(waitTimeout)
	for got < n {
		k, err := cq.Poll(out[got:])
		require.NoError(tb, err)
		got += k
		if k == 0 && time.Now().After(deadline) {
			tb.Fatalf("timed out after %v waiting for completions: got %d of %d: %+v", waitTimeout, got, n, out[:got])
		}
	}
	return out
}

// waitOK waits for n completions and requires them all to be successful.
func waitOK(tb testing.TB, cq *verbs.CQ, n int) []verbs.WC {
	tb.Helper()
	wcs := waitWCs(tb, cq, n)
	for i := range wcs {
		require.NoError(tb, wcs[i].Err())
	}
	return wcs
}

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed + byte(i*7)
	}
}

func recvWR(id uint64, s side, off, n int) verbs.RecvWR {
	return verbs.RecvWR{ID: id, NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{s.mr.SGE(off, n)}}
}

func sendWR(id uint64, op verbs.Opcode, s side, off, n int) verbs.SendWR {
	return verbs.SendWR{ID: id, Op: op, Flags: verbs.FlagSignaled, NumSGE: 1, SGE: [verbs.MaxWRSGE]verbs.SGE{s.mr.SGE(off, n)}}
}

func TestOpenUnknownDevice(t *testing.T) {
	name := openDevice(t).Name()
	_, err := verbs.Open("mlx9")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `device "mlx9" not found (present: `)
	assert.Contains(t, err.Error(), name)
}

func TestDeviceAttrAndPort(t *testing.T) {
	dev := openDevice(t)
	a := dev.Attr()
	t.Logf("DeviceAttr: %+v", a)
	assert.Equal(t, dev.Name(), a.Name)
	assert.NotEmpty(t, a.Provider)
	assert.Positive(t, a.MaxQPWR)
	assert.Positive(t, a.MaxCQE)
	assert.Positive(t, a.PhysPortCnt)
	p, err := dev.Port(dev.PortNum)
	require.NoError(t, err)
	t.Logf("PortAttr: %+v", p)
	assert.Equal(t, verbs.PortActive, p.State)
	assert.Contains(t, []int{256, 512, 1024, 2048, 4096}, p.ActiveMTU)
	_, err = dev.Port(a.PhysPortCnt + 1)
	var le *verbs.LimitError
	assert.ErrorAs(t, err, &le)

	gids, err := dev.GIDs(dev.PortNum)
	require.NoError(t, err)
	require.NotEmpty(t, gids)
	for _, g := range gids {
		t.Logf("GID %d: %s %s (score %d)", g.Index, g.GID, g.Type, verbs.ScoreGID(g))
	}
	assert.Contains(t, gids, dev.GIDEntry, "the GID the tests use is in the port's table")
	best, err := dev.BestGID(dev.PortNum)
	require.NoError(t, err)
	t.Logf("BestGID: %d %s %s", best.Index, best.GID, best.Type)
	g, err := dev.GID(dev.PortNum, best.Index)
	require.NoError(t, err)
	assert.Equal(t, best, g)
	_, err = dev.GID(dev.PortNum, p.GIDTableLen)
	assert.ErrorAs(t, err, &le)

	pd, err := dev.AllocPD()
	require.NoError(t, err)
	err = dev.Close()
	assert.ErrorContains(t, err, "still open: pd #", "a device with a live PD must refuse to close")
	require.NoError(t, pd.Close())
	require.NoError(t, pd.Close(), "second Close is a no-op")
}

// TestMaxInline: MaxInline is probed on first use (here by several
// goroutines at once), cached, equal to Attr's; a QP asks for exactly
// that much inline data, and one byte more is refused before creation.
func TestMaxInline(t *testing.T) {
	dev := openDevice(t)
	got := make([]int, 8)
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = dev.MaxInline()
		}()
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		assert.Equal(t, got[0], got[i], "goroutine %d", i)
	}
	n := got[0]
	t.Logf("max inline data: %d", n)
	assert.Equal(t, n, dev.Attr().MaxInline)
	require.LessOrEqual(t, n, 4096, "the probe starts at 4096")

	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	cq, err := dev.NewCQ(4, nil)
	require.NoError(t, err)
	closeLater(t, cq)
	cfg := verbs.QPConfig{SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInline: n}
	qp, err := pd.NewQP(cfg)
	require.NoError(t, err)
	closeLater(t, qp)
	assert.GreaterOrEqual(t, qp.Caps().MaxInline, n)
	cfg.MaxInline = n + 1
	_, err = pd.NewQP(cfg)
	var le *verbs.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, int64(n), le.Limit)
}

func TestRCSendRecv(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	for i, n := range []int{1, 1000, 5000} { // 5000 spans several packets at MTU 1024
		fill(p.a.buf.Bytes()[:n], byte(i))
		require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(10, p.b, 0, n)}))
		require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{sendWR(20, verbs.OpSend, p.a, 0, n)}))
		s := waitOK(t, p.a.cq, 1)[0]
		assert.Equal(t, verbs.WCSend, s.Opcode)
		assert.Equal(t, uint64(20), s.ID)
		r := waitOK(t, p.b.cq, 1)[0]
		assert.Equal(t, verbs.WCRecv, r.Opcode)
		assert.Equal(t, uint64(10), r.ID)
		assert.Equal(t, uint32(n), r.ByteLen)
		assert.Equal(t, p.b.qp.QPN(), r.QPN)
		assert.True(t, bytes.Equal(p.a.buf.Bytes()[:n], p.b.buf.Bytes()[:n]), "payload of %d bytes differs", n)
	}
}

func TestRCSendInline(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	n := p.a.qp.Caps().MaxInline
	skipUnlessCapable(t, p.dev, n > 0, "inline data")
	t.Logf("QP caps: %+v", p.a.qp.Caps())
	fill(p.a.buf.Bytes()[:n], 3)
	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, n)}))
	wr := sendWR(2, verbs.OpSend, p.a, 0, n)
	wr.Flags |= verbs.FlagInline
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, p.a.cq, 1)
	assert.Equal(t, uint32(n), waitOK(t, p.b.cq, 1)[0].ByteLen)
	assert.Equal(t, p.a.buf.Bytes()[:n], p.b.buf.Bytes()[:n])

	wr.SGE[0].Length = uint32(n + 1)
	var le *verbs.LimitError
	assert.ErrorAs(t, p.a.qp.PostSend([]verbs.SendWR{wr}), &le, "inline payload above caps must be refused")
}

func TestRCSendWithImm(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	fill(p.a.buf.Bytes()[:64], 9)
	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, 64)}))
	wr := sendWR(2, verbs.OpSendImm, p.a, 0, 64)
	wr.Imm = 0xdeadbeef
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, p.a.cq, 1)
	r := waitOK(t, p.b.cq, 1)[0]
	assert.Equal(t, verbs.WCRecv, r.Opcode)
	assert.NotZero(t, r.Flags&verbs.WCWithImm)
	assert.Equal(t, uint32(0xdeadbeef), r.Imm)
	assert.Equal(t, p.a.buf.Bytes()[:64], p.b.buf.Bytes()[:64])
}

func TestRCWrite(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	const n = 3000
	fill(p.a.buf.Bytes()[:n], 5)
	wr := sendWR(7, verbs.OpWrite, p.a, 0, n)
	wr.RemoteAddr, wr.RKey = p.b.mr.Addr()+100, p.b.mr.RKey()
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	s := waitOK(t, p.a.cq, 1)[0]
	assert.Equal(t, verbs.WCRDMAWrite, s.Opcode)
	assert.Equal(t, p.a.buf.Bytes()[:n], p.b.buf.Bytes()[100:100+n])
	assert.Equal(t, make([]byte, 100), p.b.buf.Bytes()[:100], "bytes before the target untouched")
}

func TestRCWriteWithImm(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	fill(p.a.buf.Bytes()[:256], 1)
	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{{ID: 3}})) // no SGE: consumed by the immediate only
	wr := sendWR(4, verbs.OpWriteImm, p.a, 0, 256)
	wr.RemoteAddr, wr.RKey, wr.Imm = p.b.mr.Addr(), p.b.mr.RKey(), 0x01020304
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, p.a.cq, 1)
	r := waitOK(t, p.b.cq, 1)[0]
	assert.Equal(t, verbs.WCRecvRDMAWithImm, r.Opcode)
	assert.Equal(t, uint64(3), r.ID)
	assert.Equal(t, uint32(0x01020304), r.Imm)
	assert.Equal(t, uint32(256), r.ByteLen)
	assert.Equal(t, p.a.buf.Bytes()[:256], p.b.buf.Bytes()[:256])
}

func TestRCRead(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	const n = 4000
	fill(p.b.buf.Bytes()[:n], 77)
	wr := sendWR(8, verbs.OpRead, p.a, 512, n)
	wr.RemoteAddr, wr.RKey = p.b.mr.Addr(), p.b.mr.RKey()
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	s := waitOK(t, p.a.cq, 1)[0]
	assert.Equal(t, verbs.WCRDMARead, s.Opcode)
	assert.Equal(t, p.b.buf.Bytes()[:n], p.a.buf.Bytes()[512:512+n])
}

func TestRCAtomics(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	skipUnlessCapable(t, p.dev, p.dev.Attr().AtomicCap != verbs.AtomicNone, "atomics")
	ne := binary.NativeEndian
	remote := p.b.buf.Bytes()[:8]
	local := p.a.buf.Bytes()[:8]
	ne.PutUint64(remote, 100)
	do := func(op verbs.Opcode, compareAdd, swap uint64, wantOpcode verbs.WCOpcode) uint64 {
		t.Helper()
		ne.PutUint64(local, 0xffff)
		wr := sendWR(9, op, p.a, 0, 8)
		wr.RemoteAddr, wr.RKey, wr.CompareAdd, wr.Swap = p.b.mr.Addr(), p.b.mr.RKey(), compareAdd, swap
		require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
		assert.Equal(t, wantOpcode, waitOK(t, p.a.cq, 1)[0].Opcode)
		return ne.Uint64(local)
	}
	assert.Equal(t, uint64(100), do(verbs.OpFetchAdd, 5, 0, verbs.WCFetchAdd), "fetch-add returns the old value")
	assert.Equal(t, uint64(105), ne.Uint64(remote))
	assert.Equal(t, uint64(105), do(verbs.OpCmpSwap, 105, 7, verbs.WCCompSwap), "matching compare-swap returns the old value")
	assert.Equal(t, uint64(7), ne.Uint64(remote))
	assert.Equal(t, uint64(7), do(verbs.OpCmpSwap, 1, 9, verbs.WCCompSwap), "failed compare-swap returns the current value")
	assert.Equal(t, uint64(7), ne.Uint64(remote), "failed compare-swap leaves memory alone")
}

func TestUCSendAndWrite(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportUC})
	fill(p.a.buf.Bytes()[:2000], 11)
	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, 2000)}))
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{sendWR(2, verbs.OpSend, p.a, 0, 2000)}))
	waitOK(t, p.a.cq, 1)
	assert.Equal(t, uint32(2000), waitOK(t, p.b.cq, 1)[0].ByteLen)
	assert.Equal(t, p.a.buf.Bytes()[:2000], p.b.buf.Bytes()[:2000])

	fill(p.a.buf.Bytes()[:2000], 12)
	wr := sendWR(3, verbs.OpWrite, p.a, 0, 2000)
	wr.RemoteAddr, wr.RKey = p.b.mr.Addr()+4096, p.b.mr.RKey()
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, p.a.cq, 1)
	// UC write completes at the requester when sent; give the responder time to place it.
	deadline := time.Now().Add(waitTimeout)
	for !bytes.Equal(p.a.buf.Bytes()[:2000], p.b.buf.Bytes()[4096:6096]) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, p.a.buf.Bytes()[:2000], p.b.buf.Bytes()[4096:6096])

	rd := sendWR(4, verbs.OpRead, p.a, 0, 8)
	assert.ErrorContains(t, p.a.qp.PostSend([]verbs.SendWR{rd}), "not allowed on a UC QP")
}

func TestUDSendWithGRH(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportUD})
	const grh, n = 40, 512
	ah, err := p.pd.NewAH(verbs.AHConfig{Port: p.port, GIDIndex: p.gid.Index, GID: p.gid.GID})
	require.NoError(t, err)
	closeLater(t, ah)
	fill(p.a.buf.Bytes()[:n], 33)
	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, grh+n)}))
	wr := sendWR(2, verbs.OpSend, p.a, 0, n)
	wr.UD = ah.Dest(p.b.qp.QPN(), verbs.DefaultQKey)
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, p.a.cq, 1)
	r := waitOK(t, p.b.cq, 1)[0]
	assert.Equal(t, uint32(grh+n), r.ByteLen, "UD receive length includes the 40-byte GRH")
	assert.NotZero(t, r.Flags&verbs.WCGRH)
	assert.Equal(t, p.a.qp.QPN(), r.SrcQP)
	assert.Equal(t, p.a.buf.Bytes()[:n], p.b.buf.Bytes()[grh:grh+n])
}

func TestSRQ(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	srq, err := pd.NewSRQ(16, 1)
	require.NoError(t, err)
	closeLater(t, srq)
	p := newPair(t, dev, pd, pairConfig{transport: verbs.TransportRC, srq: srq})
	assert.Error(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, 8)}), "a QP with an SRQ has no receive queue")
	require.NoError(t, srq.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, 100), recvWR(2, p.b, 100, 100)}))
	fill(p.a.buf.Bytes()[:200], 44)
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{sendWR(3, verbs.OpSend, p.a, 0, 100), sendWR(4, verbs.OpSend, p.a, 100, 100)}))
	waitOK(t, p.a.cq, 2)
	r := waitOK(t, p.b.cq, 2)
	assert.Equal(t, []uint64{1, 2}, []uint64{r[0].ID, r[1].ID})
	assert.Equal(t, p.a.buf.Bytes()[:200], p.b.buf.Bytes()[:200])
}

func TestEventMode(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	ch, err := dev.NewChannel()
	require.NoError(t, err)
	closeLater(t, ch)
	p := newPair(t, dev, pd, pairConfig{transport: verbs.TransportRC, channel: ch})

	require.NoError(t, p.b.cq.Notify(false))
	start := time.Now()
	_, err = ch.Wait(time.Now().Add(50 * time.Millisecond))
	assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "no traffic: Wait must time out")
	assert.Less(t, time.Since(start), 2*time.Second)

	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(1, p.b, 0, 32)}))
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{sendWR(2, verbs.OpSend, p.a, 0, 32)}))
	cq, err := ch.Wait(time.Now().Add(waitTimeout))
	require.NoError(t, err)
	assert.Same(t, p.b.cq, cq)
	assert.Equal(t, uint64(1), waitOK(t, cq, 1)[0].ID)
	waitOK(t, p.a.cq, 1)
}

func TestBatchWithUnsignaled(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	const count, size = 16, 256
	fill(p.a.buf.Bytes()[:count*size], 21)
	wrs := make([]verbs.SendWR, count)
	var signaled []uint64
	for i := range wrs {
		wrs[i] = sendWR(uint64(i), verbs.OpWrite, p.a, i*size, size)
		wrs[i].RemoteAddr, wrs[i].RKey = p.b.mr.Addr()+uint64(i*size), p.b.mr.RKey()
		if i%4 == 3 {
			signaled = append(signaled, uint64(i))
		} else {
			wrs[i].Flags = 0
		}
	}
	require.NoError(t, p.a.qp.PostSend(wrs))
	wcs := waitOK(t, p.a.cq, len(signaled))
	ids := make([]uint64, len(wcs))
	for i, wc := range wcs {
		ids[i] = wc.ID
	}
	assert.Equal(t, signaled, ids)
	extra := make([]verbs.WC, 4)
	time.Sleep(20 * time.Millisecond)
	n, err := p.a.cq.Poll(extra)
	require.NoError(t, err)
	assert.Zero(t, n, "unsignaled WRs must not complete: %+v", extra[:n])
	assert.Equal(t, p.a.buf.Bytes()[:count*size], p.b.buf.Bytes()[:count*size])
}

func TestGatherSGEs(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	buf := p.a.buf.Bytes()
	fill(buf[:8192], 50)
	wr := verbs.SendWR{ID: 1, Op: verbs.OpSend, Flags: verbs.FlagSignaled, NumSGE: 3, SGE: [verbs.MaxWRSGE]verbs.SGE{
		p.a.mr.SGE(0, 100), p.a.mr.SGE(4000, 1500), p.a.mr.SGE(7000, 10),
	}}
	want := append(append(append([]byte{}, buf[:100]...), buf[4000:5500]...), buf[7000:7010]...)
	require.NoError(t, p.b.qp.PostRecv([]verbs.RecvWR{recvWR(2, p.b, 0, 4096)}))
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, p.a.cq, 1)
	r := waitOK(t, p.b.cq, 1)[0]
	assert.Equal(t, uint32(len(want)), r.ByteLen)
	assert.Equal(t, want, p.b.buf.Bytes()[:len(want)])
}

func TestRemoteAccessError(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC, access: verbs.AccessLocalWrite})
	wr := sendWR(5, verbs.OpWrite, p.a, 0, 64)
	wr.RemoteAddr, wr.RKey = p.b.mr.Addr(), p.b.mr.RKey()
	require.NoError(t, p.a.qp.PostSend([]verbs.SendWR{wr}))
	wc := waitWCs(t, p.a.cq, 1)[0]
	assert.Equal(t, verbs.WCRemAccessErr, wc.Status, "got %s", wc.Status)
	var wce *verbs.WCError
	require.ErrorAs(t, wc.Err(), &wce)
	assert.Equal(t, uint64(5), wce.WRID)
	t.Logf("requester completion: %v", wc.Err())
}

func TestSendQueueFull(t *testing.T) {
	// Nobody posts receives on b and RNR retry is infinite, so the first send
	// never completes and the send queue fills up.
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC, depth: 8})
	depth := p.a.qp.Caps().MaxSendWR
	var err error
	posted := 0
	for ; posted <= 4*depth+8 && err == nil; posted++ {
		err = p.a.qp.PostSend([]verbs.SendWR{sendWR(uint64(posted), verbs.OpSend, p.a, 0, 8)})
	}
	require.Error(t, err, "posting %d WRs into a queue of %d must fail", posted, depth)
	t.Logf("send queue (caps %d) refused WR #%d: %v", depth, posted-1, err)
	assert.ErrorIs(t, err, syscall.ENOMEM)
	var pe *verbs.PostError
	assert.ErrorAs(t, err, &pe)
	assert.GreaterOrEqual(t, posted-1, depth, "the queue took fewer WRs than its caps")

	require.NoError(t, p.a.qp.ToError())
	wcs := waitWCs(t, p.a.cq, posted-1)
	for _, wc := range wcs {
		assert.Contains(t, []verbs.WCStatus{verbs.WCWRFlushErr, verbs.WCRNRRetryExcErr}, wc.Status, "no send can succeed: b posted no receive")
	}

	over := make([]verbs.SendWR, depth+1)
	var le *verbs.LimitError
	assert.ErrorAs(t, p.a.qp.PostSend(over), &le, "a batch longer than the queue is refused before the library")
}

func TestErrorStateFlushesRecvs(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	recvs := []verbs.RecvWR{recvWR(1, p.b, 0, 64), recvWR(2, p.b, 64, 64), recvWR(3, p.b, 128, 64), recvWR(4, p.b, 192, 64)}
	require.NoError(t, p.b.qp.PostRecv(recvs))
	require.NoError(t, p.b.qp.ToError())
	st, err := p.b.qp.State()
	require.NoError(t, err)
	assert.Equal(t, verbs.QPSErr, st)
	wcs := waitWCs(t, p.b.cq, len(recvs))
	for i, wc := range wcs {
		assert.Equal(t, verbs.WCWRFlushErr, wc.Status)
		assert.Equal(t, uint64(i+1), wc.ID)
		assert.ErrorContains(t, wc.Err(), "Work Request Flushed Error")
	}
}

func TestDeviceCloseNamesChildren(t *testing.T) {
	dev := openDevice(t)
	cq, err := dev.NewCQ(4, nil)
	require.NoError(t, err)
	err = dev.Close()
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "cq #") && strings.Contains(err.Error(), "device_test.go:"), err.Error())
	require.NoError(t, cq.Close())
	_, err = dev.NewCQ(dev.Attr().MaxCQE+1, nil)
	var le *verbs.LimitError
	assert.ErrorAs(t, err, &le)
}

// writeRoundTrip posts one signaled 64-byte RDMA write and polls its completion.
func writeRoundTrip(tb testing.TB, p *pair, wr []verbs.SendWR, wcs []verbs.WC) {
	if err := p.a.qp.PostSend(wr); err != nil {
		tb.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		n, err := p.a.cq.Poll(wcs)
		if err != nil || (n == 1 && wcs[0].Status != verbs.WCSuccess) {
			tb.Fatalf("poll: %d %v %v", n, err, wcs[0].Err())
		}
		if n == 1 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatal("timed out waiting for the write completion")
		}
	}
}

func writeWR(p *pair) []verbs.SendWR {
	wr := sendWR(1, verbs.OpWrite, p.a, 0, 64)
	wr.RemoteAddr, wr.RKey = p.b.mr.Addr(), p.b.mr.RKey()
	return []verbs.SendWR{wr}
}

func TestPostPollAllocs(t *testing.T) {
	p := newDefaultPair(t, pairConfig{transport: verbs.TransportRC})
	wr, wcs := writeWR(p), make([]verbs.WC, 1)
	allocs := testing.AllocsPerRun(200, func() { writeRoundTrip(t, p, wr, wcs) })
	t.Logf("AllocsPerRun(PostSend + Poll of one 64-byte RDMA write) = %v", allocs)
	assert.Zero(t, allocs)
}

// BenchmarkPostPoll times one signaled 64-byte RDMA write: PostSend, then
// Poll until its completion (ns/op = one round trip through the device).
func BenchmarkPostPoll(b *testing.B) {
	p := newDefaultPair(b, pairConfig{transport: verbs.TransportRC})
	wr, wcs := writeWR(p), make([]verbs.WC, 1)
	// One round trip before the measurement: the first pass through the
	// path pays one-time costs (as testing.AllocsPerRun's warm-up does).
	writeRoundTrip(b, p, wr, wcs)
	b.ReportAllocs()
	for b.Loop() {
		writeRoundTrip(b, p, wr, wcs)
	}
}

// capableProviders are the providers known to have each capability the
// device tests may skip without: rdma_rxe has inline data and atomics
// (IBV_ATOMIC_HCA).
var capableProviders = map[string][]string{
	"inline data": {"rxe"},
	"atomics":     {"rxe"},
}

// skipUnlessCapable skips t when the device lacks what (have false), and
// fails it instead when the device's provider is one that has it: there
// the "lack" is a regression (a wrong query, a wrong QP size), and a skip
// would hide it (cilium/ebpf's rule: skip when the kernel lacks a
// feature, fail when it should have it).
func skipUnlessCapable(t *testing.T, d *verbs.Device, have bool, what string) {
	t.Helper()
	if have {
		return
	}
	provider := d.Attr().Provider
	if slices.Contains(capableProviders[what], provider) {
		t.Fatalf("device %s (provider %s) reports no %s, but %s devices have it", d.Name(), provider, what, provider)
	}
	t.Skipf("device %s (provider %s) has no %s", d.Name(), provider, what)
}
