package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// SkipUCCM is the reason a UC benchmark skips under -rdma.cm.
const SkipUCCM = "UC cannot be connected through rdma_cm (-rdma.cm)"

// UseCM tells whether this device's pairs are connected through rdma_cm
// (-rdma.cm; by default only on an iWARP device, where it is the only
// way).
func (d *Dev) UseCM() bool {
	return d.Opts.CM.Use(d.Attr().NodeTransport == verbs.NodeTransportIWARP)
}

// cmSkip returns why a pair of transport t cannot be made on d (UC under
// rdma_cm), or "". On an iWARP device UC is left to the spec's device
// rules, whose reason names the transport (checkIWARP).
func (d *Dev) cmSkip(t verbs.Transport) string {
	if t == verbs.TransportUC && d.UseCM() && d.Attr().NodeTransport != verbs.NodeTransportIWARP {
		return SkipUCCM
	}
	return ""
}

// skipCM skips b when its pair could not be connected (UC under
// rdma_cm). Latency, Stream and EchoRPC call it before their probe call:
// testing prints a benchmark's SKIP line (which ci/skips.sh checks) only
// for a skip in the first, b.N = 1, call; a skip in the second call shows
// as a result line of 0 iterations and NaN ns/op.
func skipCM(b *testing.B, d *Dev, s *Spec) {
	b.Helper()
	if r := d.cmSkip(s.Transport); r != "" {
		skip(b, r)
	}
	if s.MTU != 0 && d.UseCM() && s.MTU != d.PortAttr.ActiveMTU {
		skip(b, fmt.Sprintf("mtu %d: through rdma_cm (-rdma.cm) the path MTU is the CM's, the port's active MTU %d", s.MTU, d.PortAttr.ActiveMTU))
	}
}

// cmConns are a pair's rdma_cm connections, closed together: every end
// disconnects first, then each waits for its DISCONNECTED (both ends
// live in this process, and each end's event needs the other's answer).
type cmConns struct {
	conns   []*verbs.CMConn
	timeout time.Duration
}

// Close disconnects and closes every connection, each wait bounded by
// the timeout.
func (c *cmConns) Close() error {
	var errs []error
	for _, x := range c.conns {
		errs = append(errs, x.Disconnect())
	}
	deadline := time.Now().Add(c.timeout)
	for _, x := range c.conns {
		errs = append(errs, x.CloseDeadline(deadline))
	}
	c.conns = nil
	return errors.Join(errs...)
}

// connectCM connects QP i of A to QP i of B through rdma_cm in this
// process: B listens on the device's own IPv4 address (an ephemeral
// port) and accepts, A dials; every step is bounded by -rdma.timeout.
// For UD each side's address handle comes from the CM (UDPeer).
func (p *Pair) connectCM() error {
	d, cfg := p.Dev, p.Cfg
	ps, err := verbs.PortSpaceFor(cfg.Transport)
	if err != nil {
		return fmt.Errorf("rdmatest: %w", err)
	}
	ip, err := d.IPv4Addr(d.PortNum)
	if err != nil {
		return fmt.Errorf("rdmatest: -rdma.cm: %w", err)
	}
	l, err := verbs.ListenCM(netip.AddrPortFrom(ip, 0), ps)
	if err != nil {
		return fmt.Errorf("rdmatest: -rdma.cm: %w", err)
	}
	defer l.Close()
	conns := &cmConns{timeout: d.Opts.Timeout}
	p.res.Add(conns) // after the QPs: closed before them
	ta, tb := p.B.Targets(), p.A.Targets()
	for i := range p.A.QPs {
		deadline := time.Now().Add(d.Opts.Timeout)
		type accepted struct {
			c   *verbs.CMConn
			err error
		}
		ch := make(chan accepted, 1)
		go func() {
			c, err := l.Accept(p.B.QPs[i], deadline)
			ch <- accepted{c, err}
		}()
		ca, errA := verbs.DialCM(l.Addr(), p.A.QPs[i], deadline)
		b := <-ch
		for _, c := range []*verbs.CMConn{ca, b.c} {
			if c != nil {
				conns.conns = append(conns.conns, c)
			}
		}
		if err := errors.Join(errA, b.err); err != nil {
			return fmt.Errorf("rdmatest: -rdma.cm: connecting QP %d of %d: %w", i, len(p.A.QPs), err)
		}
		if err := p.A.addCMPeer(p.PD, &p.res, ca, ta[i]); err != nil {
			return err
		}
		if err := p.B.addCMPeer(p.PD, &p.res, b.c, tb[i]); err != nil {
			return err
		}
	}
	return nil
}

// addCMPeer records the remote QP of c (target t; for UD with an address
// handle from the CM and the CM's Q_Key, which the side's QPs now have).
func (s *Side) addCMPeer(pd *verbs.PD, res *Resources, c *verbs.CMConn, t Target) error {
	if peer, ud := c.UDPeer(); ud {
		ah, err := pd.NewAH(peer.AH)
		if err != nil {
			return fmt.Errorf("rdmatest: address handle from rdma_cm: %w", err)
		}
		res.Add(ah)
		t.Dest = ah.Dest(peer.QPN, peer.QKey)
		s.QKey = peer.QKey
	}
	s.Peer = append(s.Peer, t)
	return nil
}
