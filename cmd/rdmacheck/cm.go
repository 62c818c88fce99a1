package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// Step 5's connection over verbs' rdma_cm API: our own RC QP, connected by
// DialCM or CMListener.Accept, with its receives posted as soon as it
// can take them.

// rcRecvs is the receives kept posted on a connection (a ping-pong has
// one message in flight each way).
const rcRecvs = 4

// cmListener is the real CMListener.
type cmListener struct {
	d    *verbsDevice
	l    *verbs.CMListener
	size int
}

func (v *verbsDevice) ListenCM(addr netip.AddrPort, size int) (CMListener, error) {
	l, err := verbs.ListenCM(addr, verbs.PortSpaceTCP)
	if err != nil {
		return nil, err
	}
	return &cmListener{d: v, l: l, size: size}, nil
}

func (l *cmListener) Accept(deadline time.Time) (Conn, error) {
	c, err := l.d.newRC(l.size)
	if err != nil {
		return nil, err
	}
	return c.connected(l.l.Accept(c.qp, deadline))
}

func (l *cmListener) Close() error { return l.l.Close() }

func (v *verbsDevice) DialCM(dst netip.AddrPort, size int, deadline time.Time) (Conn, error) {
	c, err := v.newRC(size)
	if err != nil {
		return nil, err
	}
	return c.connected(verbs.DialCM(dst, c.qp, deadline))
}

// connected finishes an Accept or DialCM of c: on success it keeps the
// connection and posts c's receives; on any failure it closes c.
func (c *rcConn) connected(cm *verbs.CMConn, err error) (Conn, error) {
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	c.cm = cm
	if err := c.postRecvs(); err != nil {
		return nil, errors.Join(err, c.Close())
	}
	return c, nil
}

// rcConn is the real Conn: an RC QP, its CQ and a buffer of rcRecvs
// receive slots and one send slot.
type rcConn struct {
	size    int
	pd      *verbs.PD
	cq      *verbs.CQ
	buf     *verbs.Buffer
	mr      *verbs.MR
	qp      *verbs.QP
	cm      *verbs.CMConn
	pending []verbs.WC // receive completions seen while waiting for a send's
	wc      [1]verbs.WC
}

// newRC makes an RC QP and what it needs, not connected.
func (v *verbsDevice) newRC(size int) (_ *rcConn, err error) {
	c := &rcConn{size: size}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	if c.pd, err = v.d.AllocPD(); err != nil {
		return nil, err
	}
	if c.cq, err = v.d.NewCQ(2*rcRecvs+4, nil); err != nil {
		return nil, err
	}
	if c.buf, err = verbs.AllocBuffer((rcRecvs+1)*size, false); err != nil {
		return nil, err
	}
	if c.mr, err = c.pd.RegMR(c.buf, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if c.qp, err = c.pd.NewQP(verbs.QPConfig{Transport: verbs.TransportRC, SendCQ: c.cq, RecvCQ: c.cq, MaxSendWR: 4, MaxRecvWR: rcRecvs}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *rcConn) recvWR(i int) verbs.RecvWR {
	wr := verbs.RecvWR{ID: uint64(i), NumSGE: 1}
	wr.SGE[0] = c.mr.SGE(i*c.size, c.size)
	return wr
}

func (c *rcConn) postRecvs() error {
	wrs := make([]verbs.RecvWR, rcRecvs)
	for i := range wrs {
		wrs[i] = c.recvWR(i)
	}
	return c.qp.PostRecv(wrs)
}

func (c *rcConn) QPN() uint32 { return c.qp.QPN() }

func (c *rcConn) Send(p []byte, deadline time.Time) error {
	if len(p) > c.size {
		return fmt.Errorf("a message of %d bytes exceeds the connection's %d", len(p), c.size)
	}
	off := rcRecvs * c.size
	copy(c.buf.Bytes()[off:], p)
	wr := verbs.Send(c.mr.SGE(off, len(p))).Signaled()
	wr.ID = sendID
	if err := c.qp.PostSend([]verbs.SendWR{wr}); err != nil {
		return err
	}
	for {
		wc, err := c.poll(deadline, "the send's completion")
		if err != nil {
			return err
		}
		if wc.ID == sendID {
			return nil
		}
		c.pending = append(c.pending, wc)
	}
}

func (c *rcConn) Recv(p []byte, deadline time.Time) (int, error) {
	var wc verbs.WC
	if len(c.pending) > 0 {
		wc, c.pending = c.pending[0], c.pending[1:]
	} else {
		for {
			var err error
			if wc, err = c.poll(deadline, "a message"); err != nil {
				return 0, err
			}
			if wc.ID != sendID {
				break
			}
		}
	}
	i := int(wc.ID)
	if i < 0 || i >= rcRecvs {
		return 0, fmt.Errorf("a receive completion with wr_id %d (posted: 0-%d)", wc.ID, rcRecvs-1)
	}
	n := copy(p, c.buf.Bytes()[i*c.size:i*c.size+min(int(wc.ByteLen), c.size)])
	return n, c.qp.PostRecv([]verbs.RecvWR{c.recvWR(i)})
}

// poll returns the next completion, or an error for a failed one or none
// before the deadline.
func (c *rcConn) poll(deadline time.Time, what string) (verbs.WC, error) {
	for {
		n, err := c.cq.Poll(c.wc[:])
		if err != nil {
			return verbs.WC{}, err
		}
		if n == 1 {
			return c.wc[0], c.wc[0].Err()
		}
		if time.Now().After(deadline) {
			return verbs.WC{}, fmt.Errorf("no %s within the deadline: %w", what, os.ErrDeadlineExceeded)
		}
		runtime.Gosched()
	}
}

// Close disconnects (waiting for the far end's side of it within
// verbs.DefaultCMCloseTimeout) and releases the QP and the rest, also when
// the disconnect fails.
func (c *rcConn) Close() error {
	var errs []error
	if c.cm != nil {
		errs = append(errs, c.cm.Close())
	}
	if c.qp != nil {
		errs = append(errs, c.qp.Close())
	}
	if c.cq != nil {
		errs = append(errs, c.cq.Close())
	}
	if c.mr != nil {
		errs = append(errs, c.mr.Close())
	}
	if c.buf != nil {
		errs = append(errs, c.buf.Close())
	}
	if c.pd != nil {
		errs = append(errs, c.pd.Close())
	}
	return errors.Join(errs...)
}

// cmCause names the likely cause of an rdma_cm failure.
func cmCause(err error) string {
	switch {
	case errors.Is(err, verbs.ErrCMRejected):
		return "the far end's connection manager refused it: nothing listens on that port (a wrong -port, or the far end is not rdmacheck -listen), or the far end refused the QP"
	case errors.Is(err, verbs.ErrCMWrongDevice):
		return "the address is on another RDMA device than the one checked: give -d the device on the interface that reaches the far end"
	case errors.Is(err, verbs.ErrCMTimedOut), isTimeout(err):
		return "no answer from the far end's connection manager in time: RoCE packets (UDP 4791) dropped on the path (firewall, switch port without RoCE), a wrong GID/RoCE version, or the far end did not accept"
	case errors.Is(err, verbs.ErrCMUnreachable):
		return "no RDMA path to the far end: its address does not resolve to an RDMA device here (no RoCE device on the interface that routes to it), no route or neighbour, or RoCE packets dropped on the path"
	case errors.Is(err, verbs.ErrNotSupported):
		return "this build or host has no rdma_cm (librdmacm, the rdma_ucm module: /dev/infiniband/rdma_cm)"
	}
	return "the connection manager failed (see its error)"
}
