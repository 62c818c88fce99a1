package verbs_test

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/verbs"
)

// The rdma_cm tests connect two QPs of one device through the connection
// manager: a listener on the device's own IPv4 address (its IPv4-mapped
// GID), port 0, and a dial to it.

const cmTimeout = 10 * time.Second // every CM step of these tests gives up after this

// cmAddr is the device's own IPv4 address (the tests' port's).
func cmAddr(t *testing.T, dev *rdmatest.Dev) netip.Addr {
	t.Helper()
	a, err := dev.IPv4Addr(dev.PortNum)
	require.NoError(t, err)
	return a
}

// iwarp tells whether dev is an iWARP device.
func iwarp(dev *rdmatest.Dev) bool { return dev.Attr().NodeTransport == verbs.NodeTransportIWARP }

// skipUnlessTransport skips t on an iWARP device for any QP but RC:
// iWARP defines reliable connected QPs only (siw's ibv_create_qp fails UD
// and UC with EOPNOTSUPP).
func skipUnlessTransport(t *testing.T, dev *rdmatest.Dev, tr verbs.Transport) {
	t.Helper()
	if tr != verbs.TransportRC && iwarp(dev) {
		t.Skipf("%s: %s: transport iWARP: reliable connected QPs only (ibv_create_qp would be EOPNOTSUPP)", dev.Name(), tr)
	}
}

// cmSide is one QP with its CQ and buffer, not connected.
func cmSide(t *testing.T, dev *rdmatest.Dev, pd *verbs.PD, tr verbs.Transport) side {
	t.Helper()
	skipUnlessTransport(t, dev, tr)
	var s side
	var err error
	s.cq, err = dev.NewCQ(64, nil)
	require.NoError(t, err)
	closeLater(t, s.cq)
	s.buf, err = verbs.AllocBuffer(bufSize, false)
	require.NoError(t, err)
	closeLater(t, s.buf)
	s.mr, err = pd.RegMR(s.buf, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
	require.NoError(t, err)
	closeLater(t, s.mr)
	s.qp, err = pd.NewQP(verbs.QPConfig{Transport: tr, SendCQ: s.cq, RecvCQ: s.cq, MaxSendWR: 16, MaxRecvWR: 16})
	require.NoError(t, err)
	closeLater(t, s.qp)
	return s
}

// cmConnect listens on the device's address and dials it: a's QP dials,
// b's accepts. It returns both connections (closed by the caller).
func cmConnect(t *testing.T, dev *rdmatest.Dev, a, b side, ps verbs.PortSpace) (da, db *verbs.CMConn) {
	t.Helper()
	l, err := verbs.ListenCM(netip.AddrPortFrom(cmAddr(t, dev), 0), ps)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Close()) }()
	require.NotZero(t, l.Port(), "an ephemeral port was bound")
	deadline := time.Now().Add(cmTimeout)
	type res struct {
		c   *verbs.CMConn
		err error
	}
	accepted := make(chan res, 1)
	go func() {
		c, err := l.Accept(b.qp, deadline)
		accepted <- res{c, err}
	}()
	da, err = verbs.DialCM(l.Addr(), a.qp, deadline)
	r := <-accepted
	require.NoError(t, err, "dial")
	require.NoError(t, r.err, "accept")
	return da, r.c
}

// closeBoth disconnects both ends, then closes them (one process holds
// both: each end's DISCONNECTED needs the other's answer).
func closeBoth(t *testing.T, conns ...*verbs.CMConn) {
	t.Helper()
	for _, c := range conns {
		assert.NoError(t, c.Disconnect())
	}
	for _, c := range conns {
		assert.NoError(t, c.CloseDeadline(time.Now().Add(cmTimeout)))
	}
	assert.NoError(t, conns[0].Close(), "a second Close does nothing")
}

func liveCM() []verbs.Object {
	var out []verbs.Object
	for _, o := range verbs.Live() {
		if o.Kind == verbs.KindCMID || o.Kind == verbs.KindCMChannel {
			out = append(out, o)
		}
	}
	return out
}

func TestCMRCLoopback(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	a, b := cmSide(t, dev, pd, verbs.TransportRC), cmSide(t, dev, pd, verbs.TransportRC)
	ca, cb := cmConnect(t, dev, a, b, verbs.PortSpaceTCP)
	assert.Equal(t, cb.LocalAddr(), ca.RemoteAddr())
	assert.Equal(t, ca.LocalAddr().Addr(), cb.RemoteAddr().Addr())
	_, ud := ca.UDPeer()
	assert.False(t, ud)
	for _, s := range []side{a, b} {
		st, err := s.qp.State()
		require.NoError(t, err)
		if iwarp(dev) {
			// iw_cm moved the QP to RTS in the kernel; siw's
			// ibv_query_qp reports RESET all the same. The traffic
			// below is what shows the connection works.
			t.Logf("%s (iWARP): QP %#x reports state %v after the connection", dev.Name(), s.qp.QPN(), st)
			continue
		}
		assert.Equal(t, verbs.QPSRTS, st)
	}
	assert.Len(t, liveCM(), 4, "two ids and two channels")
	err = a.qp.Close()
	require.Error(t, err, "the QP refuses to close while its CM id is open")
	assert.Contains(t, err.Error(), "cm_id")

	// A SEND each way, payload checked.
	for i, dir := range [][2]side{{a, b}, {b, a}} {
		src, dst := dir[0], dir[1]
		want := bytes.Repeat([]byte{byte(0x40 + i)}, 512)
		require.NoError(t, dst.qp.PostRecv([]verbs.RecvWR{recvWR(1, dst, 4096, 512)}))
		copy(src.buf.Bytes(), want)
		require.NoError(t, src.qp.PostSend([]verbs.SendWR{sendWR(2, verbs.OpSend, src, 0, 512)}))
		waitOK(t, src.cq, 1)
		wc := waitOK(t, dst.cq, 1)
		assert.Equal(t, uint32(512), wc[0].ByteLen)
		assert.Equal(t, want, dst.buf.Bytes()[4096:4096+512])
	}
	// And an RDMA WRITE: the CM's INIT kept our remote access.
	copy(a.buf.Bytes(), "written through rdma_cm")
	wr := sendWR(3, verbs.OpWrite, a, 0, 23)
	wr.RemoteAddr, wr.RKey = b.mr.Addr()+8192, b.mr.RKey()
	require.NoError(t, a.qp.PostSend([]verbs.SendWR{wr}))
	waitOK(t, a.cq, 1)
	assert.Equal(t, "written through rdma_cm", string(b.buf.Bytes()[8192:8192+23]))

	closeBoth(t, ca, cb)
	assert.Empty(t, liveCM(), "every rdma_cm id and channel released")
}

func TestCMUDLoopback(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	a, b := cmSide(t, dev, pd, verbs.TransportUD), cmSide(t, dev, pd, verbs.TransportUD)
	ca, cb := cmConnect(t, dev, a, b, verbs.PortSpaceUDP)
	pa, ok := ca.UDPeer()
	require.True(t, ok)
	pb, ok := cb.UDPeer()
	require.True(t, ok)
	assert.Equal(t, b.qp.QPN(), pa.QPN, "the dialer learns the acceptor's QPN from the CM")
	assert.Equal(t, a.qp.QPN(), pb.QPN, "the acceptor learns the dialer's QPN from its request")
	assert.Equal(t, uint32(verbs.CMQKey), pa.QKey)
	assert.Equal(t, uint32(verbs.CMQKey), pb.QKey)

	const grh = 40
	for i, x := range []struct {
		src, dst side
		peer     verbs.UDPeer
	}{{a, b, pa}, {b, a, pb}} {
		ah, err := pd.NewAH(x.peer.AH)
		require.NoError(t, err)
		closeLater(t, ah)
		want := bytes.Repeat([]byte{byte(0x60 + i)}, 256)
		require.NoError(t, x.dst.qp.PostRecv([]verbs.RecvWR{recvWR(1, x.dst, 4096, grh+256)}))
		copy(x.src.buf.Bytes(), want)
		wr := sendWR(2, verbs.OpSend, x.src, 0, 256)
		wr.UD = ah.Dest(x.peer.QPN, x.peer.QKey)
		require.NoError(t, x.src.qp.PostSend([]verbs.SendWR{wr}))
		waitOK(t, x.src.cq, 1)
		wc := waitOK(t, x.dst.cq, 1)
		assert.Equal(t, uint32(grh+256), wc[0].ByteLen)
		assert.Equal(t, x.src.qp.QPN(), wc[0].SrcQP)
		assert.Equal(t, want, x.dst.buf.Bytes()[4096+grh:4096+grh+256])
	}
	closeBoth(t, ca, cb)
	assert.Empty(t, liveCM())
}

// freePort returns a port of the device's address nobody listens on (one
// a listener had a moment ago).
func freePort(t *testing.T, dev *rdmatest.Dev, ps verbs.PortSpace) netip.AddrPort {
	l, err := verbs.ListenCM(netip.AddrPortFrom(cmAddr(t, dev), 0), ps)
	require.NoError(t, err)
	addr := l.Addr()
	require.NoError(t, l.Close())
	return addr
}

func TestCMNobodyListens(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)

	t.Run("RC", func(t *testing.T) {
		dst := freePort(t, dev, verbs.PortSpaceTCP)
		a := cmSide(t, dev, pd, verbs.TransportRC)
		start := time.Now()
		c, err := verbs.DialCM(dst, a.qp, time.Now().Add(cmTimeout))
		require.Error(t, err)
		assert.Nil(t, c)
		assert.Less(t, time.Since(start), cmTimeout, "rejected, not timed out")
		assert.ErrorIs(t, err, verbs.ErrCMRejected)
		if iwarp(dev) {
			// siw: the TCP connect under MPA is refused at once, in
			// rdma_connect itself (a hardware RNIC reports a REJECTED
			// event instead).
			if errors.Is(err, syscall.ECONNREFUSED) {
				assert.Contains(t, err.Error(), "rdma_cm connect to "+dst.String()+": rdma_connect: connection refused (ECONNREFUSED)")
			} else {
				assert.Contains(t, err.Error(), "rdma_cm connect to "+dst.String()+": RDMA_CM_EVENT_REJECTED")
			}
		} else {
			assert.Contains(t, err.Error(), "rdma_cm connect to "+dst.String()+": RDMA_CM_EVENT_REJECTED")
		}
		assert.Empty(t, liveCM())
	})
	t.Run("UD", func(t *testing.T) {
		dst := freePort(t, dev, verbs.PortSpaceUDP)
		a := cmSide(t, dev, pd, verbs.TransportUD)
		c, err := verbs.DialCM(dst, a.qp, time.Now().Add(cmTimeout))
		require.Error(t, err)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, verbs.ErrCMUnreachable)
		assert.Contains(t, err.Error(), "rdma_cm connect to "+dst.String()+": RDMA_CM_EVENT_UNREACHABLE")
		assert.Empty(t, liveCM())
	})
}

func TestCMUnreachableAddress(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	a := cmSide(t, dev, pd, verbs.TransportRC)
	// A neighbour on the device's subnet that does not exist: ARP is never
	// answered, so only a deadline ends the address resolution.
	own := cmAddr(t, dev).As4()
	own[3] = 254
	if netip.AddrFrom4(own) == cmAddr(t, dev) {
		own[3] = 253
	}
	dst := netip.AddrPortFrom(netip.AddrFrom4(own), 4791)
	const short = time.Second
	start := time.Now()
	c, err := verbs.DialCM(dst, a.qp, time.Now().Add(short))
	took := time.Since(start)
	require.Error(t, err)
	assert.Nil(t, c)
	assert.Less(t, took, short+2*time.Second, "bounded by the deadline")
	assert.True(t, errors.Is(err, verbs.ErrCMTimedOut) || errors.Is(err, verbs.ErrCMUnreachable), "%v", err)
	assert.Contains(t, err.Error(), "rdma_cm resolve address to "+dst.String())
	t.Logf("%v after %v", err, took.Round(time.Millisecond))
	assert.Empty(t, liveCM())
}

// rcListener opens the device, an RC QP to accept with and a listener on
// the device's address (an ephemeral port) that nobody dials.
func rcListener(t *testing.T) (side, *verbs.CMListener) {
	t.Helper()
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	b := cmSide(t, dev, pd, verbs.TransportRC)
	l, err := verbs.ListenCM(netip.AddrPortFrom(cmAddr(t, dev), 0), verbs.PortSpaceTCP)
	require.NoError(t, err)
	return b, l
}

func TestCMAcceptDeadline(t *testing.T) {
	b, l := rcListener(t)
	start := time.Now()
	c, err := l.Accept(b.qp, time.Now().Add(200*time.Millisecond))
	require.Error(t, err)
	assert.Nil(t, c)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.ErrorIs(t, err, verbs.ErrCMTimedOut)
	assert.True(t, strings.HasPrefix(err.Error(), "verbs: rdma_cm accept on "+l.Addr().String()), err.Error())
	require.NoError(t, l.Close())
	assert.Empty(t, liveCM())
}

// TestCMAcceptInterrupt: Interrupt ends an Accept waiting far from its
// deadline within cmInterruptEvery (100 ms, plus scheduling), and a
// later one at once, with ErrCMInterrupted.
func TestCMAcceptInterrupt(t *testing.T) {
	b, l := rcListener(t)
	done := make(chan error, 1)
	go func() {
		_, err := l.Accept(b.qp, time.Now().Add(time.Minute))
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	l.Interrupt()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, verbs.ErrCMInterrupted)
		t.Logf("%v, %v after Interrupt", err, time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("Accept still waiting 5 s after Interrupt")
	}
	assert.Less(t, time.Since(start), time.Second)
	_, err := l.Accept(b.qp, time.Now().Add(time.Minute))
	assert.ErrorIs(t, err, verbs.ErrCMInterrupted, "a later Accept")
	require.NoError(t, l.Close())
	assert.Empty(t, liveCM())
}

func TestCMRefusesUC(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	u := cmSide(t, dev, pd, verbs.TransportUC)
	addr := netip.AddrPortFrom(cmAddr(t, dev), 4791)
	_, err = verbs.DialCM(addr, u.qp, time.Now().Add(cmTimeout))
	assert.ErrorIs(t, err, verbs.ErrCMUC)
	assert.Contains(t, err.Error(), "UC cannot be connected through rdma_cm")
	l, err := verbs.ListenCM(netip.AddrPortFrom(cmAddr(t, dev), 0), verbs.PortSpaceTCP)
	require.NoError(t, err)
	defer func() { assert.NoError(t, l.Close()) }()
	_, err = l.Accept(u.qp, time.Now().Add(cmTimeout))
	assert.ErrorIs(t, err, verbs.ErrCMUC)
	st, err := u.qp.State()
	require.NoError(t, err)
	assert.Equal(t, verbs.QPSReset, st, "nothing was done to the QP")
}

// TestCMAcceptFrom: a listener waiting for one QP's request rejects
// another QP's (the dialer hears REJECTED) and accepts the right one.
func TestCMAcceptFrom(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	stranger, a, b := cmSide(t, dev, pd, verbs.TransportRC), cmSide(t, dev, pd, verbs.TransportRC), cmSide(t, dev, pd, verbs.TransportRC)
	l, err := verbs.ListenCM(netip.AddrPortFrom(cmAddr(t, dev), 0), verbs.PortSpaceTCP)
	require.NoError(t, err)
	deadline := time.Now().Add(cmTimeout)
	type res struct {
		c   *verbs.CMConn
		err error
	}
	accepted := make(chan res, 1)
	go func() {
		c, err := l.AcceptFrom(b.qp, a.qp.QPN(), deadline)
		accepted <- res{c, err}
	}()
	// Whatever fails below, everything is released before the leak check.
	var sc, ca *verbs.CMConn
	var r res
	done := false
	defer func() {
		if !done {
			r = <-accepted // bounded by deadline
		}
		var conns []*verbs.CMConn
		for _, c := range []*verbs.CMConn{sc, ca, r.c} {
			if c != nil {
				conns = append(conns, c)
			}
		}
		if len(conns) > 0 {
			closeBoth(t, conns...)
		}
		assert.NoError(t, l.Close())
		assert.Empty(t, liveCM(), "every rdma_cm id and channel released")
	}()
	sc, err = verbs.DialCM(l.Addr(), stranger.qp, deadline)
	assert.ErrorIs(t, err, verbs.ErrCMRejected, "another QP's request is turned away")
	assert.Nil(t, sc)
	ca, err = verbs.DialCM(l.Addr(), a.qp, deadline)
	require.NoError(t, err)
	r, done = <-accepted, true
	require.NoError(t, r.err)
	assert.Equal(t, ca.LocalAddr(), r.c.RemoteAddr())
}

// cmRounds is how many times TestCMConnectMany connects and tears down.
const cmRounds = 300

// TestCMConnectMany connects an RC QP pair through rdma_cm and tears it
// down cmRounds times in a row, as the benchmark suite does from one
// point to the next: a listener on a fresh ephemeral port, an accept and
// a dial, the listener closed, both ends disconnected and closed, the
// QPs closed. Every round must connect.
//
// It runs under a storm of SIGURG to every thread (signalStorm). Issue
// #42: on siw, rdma_connect makes a blocking TCP connection in the
// kernel; the Go runtime's own SIGURG, arriving during it, restarted the
// call half done, and the second try failed (ECONNREFUSED: siw's
// listener had died of the first; or EADDRNOTAVAIL: the first one's
// TIME_WAIT), in about one connect in 500. Without the storm a run of
// 300 rounds caught it about every other time; with it, in the first
// ten rounds every time. No rdma_cm id or channel, and no other verbs
// object, may be left after it.
func TestCMConnectMany(t *testing.T) {
	dev := openDevice(t)
	pd, err := dev.AllocPD()
	require.NoError(t, err)
	closeLater(t, pd)
	cq, err := dev.NewCQ(64, nil)
	require.NoError(t, err)
	closeLater(t, cq)
	ip := cmAddr(t, dev)
	before := len(verbs.Live())
	round := func(i int) error {
		var qps []*verbs.QP
		var conns []*verbs.CMConn
		var l *verbs.CMListener
		defer func() {
			for _, c := range conns {
				assert.NoError(t, c.Disconnect(), "round %d", i)
			}
			deadline := time.Now().Add(cmTimeout)
			for _, c := range conns {
				assert.NoError(t, c.CloseDeadline(deadline), "round %d", i)
			}
			if l != nil {
				assert.NoError(t, l.Close(), "round %d", i)
			}
			for _, q := range qps {
				assert.NoError(t, q.Close(), "round %d", i)
			}
		}()
		for range 2 {
			q, err := pd.NewQP(verbs.QPConfig{Transport: verbs.TransportRC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4})
			if err != nil {
				return err
			}
			qps = append(qps, q)
		}
		var err error
		l, err = verbs.ListenCM(netip.AddrPortFrom(ip, 0), verbs.PortSpaceTCP)
		if err != nil {
			return err
		}
		deadline := time.Now().Add(cmTimeout)
		type res struct {
			c   *verbs.CMConn
			err error
		}
		accepted := make(chan res, 1)
		go func() {
			c, err := l.AcceptFrom(qps[1], qps[0].QPN(), deadline)
			accepted <- res{c, err}
		}()
		ca, errDial := verbs.DialCM(l.Addr(), qps[0], deadline)
		r := <-accepted // bounded by deadline
		for _, c := range []*verbs.CMConn{ca, r.c} {
			if c != nil {
				conns = append(conns, c)
			}
		}
		// The listener goes first, as in the benchmarks' pairs.
		errClose := l.Close()
		l = nil
		return errors.Join(errDial, r.err, errClose)
	}
	stop := signalStorm(5 * time.Millisecond)
	start := time.Now()
	for i := range cmRounds {
		err := round(i)
		if err == nil && t.Failed() {
			err = errors.New("see above")
		}
		if err != nil {
			stop()
			t.Fatalf("round %d of %d (after %v): %v", i+1, cmRounds, time.Since(start).Round(time.Millisecond), err)
		}
	}
	took := time.Since(start)
	stop()
	t.Logf("%s: %d rdma_cm connections made and torn down in %v (%v each), SIGURG to every thread every 5 ms", dev.Name(), cmRounds, took.Round(time.Millisecond), (took / cmRounds).Round(time.Microsecond))
	assert.Empty(t, liveCM(), "every rdma_cm id and channel released")
	assert.Len(t, verbs.Live(), before, "every QP released")
}
