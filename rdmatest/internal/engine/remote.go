package engine

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// A remote peer (cmd/rdmapeer on another host, selected with -rdma.peer)
// stands in for side B: NewPair then builds side A here, asks the peer
// over TCP (package oob) for the passive side of the scenario, and
// connects A's QPs to the QPs the peer made. The measured loops do not
// change; only the passive role runs in the peer instead of a local
// goroutine.

// remote is the client end of one peer session (one Pair).
type remote struct {
	conn    net.Conn
	timeout time.Duration
	role    string
	hello   oob.HelloOK
}

// dialPeer connects to addr, retrying until the deadline (the peer may
// still be starting: perftest's client gives up at once, we do not), and
// says hello. Every dial error is retried, a host name the resolver does
// not know included: a resolver may answer "no such host" for a name
// that exists in a moment (a peer's service record not yet registered,
// or a search domain's answer masking a temporary failure), and the
// deadline is short (-rdma.timeout, 10 s by default). The last try is at
// the deadline; the error names the last cause that was not the dial's
// own time running out (a refusal, an unknown name), if there was one.
func dialPeer(addr, token string, timeout time.Duration) (*remote, error) {
	deadline := time.Now().Add(timeout)
	var conn net.Conn
	var err, cause error
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		// A zero timeout would mean none: the last try gets at least 1 ms.
		conn, err = net.DialTimeout("tcp", addr, max(time.Until(deadline), time.Millisecond))
		if err == nil {
			break
		}
		var ne net.Error
		if cause == nil || !(errors.As(err, &ne) && ne.Timeout()) {
			cause = err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("rdmatest: peer %s: no connection within %v: %w", addr, timeout, cause)
		}
		time.Sleep(min(wait, left))
	}
	r := &remote{conn: conn, timeout: timeout}
	if err := r.handshake(token); err != nil {
		conn.Close()
		return nil, fmt.Errorf("rdmatest: peer %s: %w", addr, err)
	}
	return r, nil
}

// ErrPeerAuth is a peer that failed to prove it knows the token.
var ErrPeerAuth = oob.ErrPeerAuth

// handshake says hello and proves knowledge of token without sending it
// (package oob, Authentication); with a token, the peer must prove it
// too.
func (r *remote) handshake(token string) error {
	hello, err := oob.Handshake(r.conn, token, hostname(), r.timeout)
	r.hello = hello
	return err
}

// call sends one message and decodes the answer, within the deadline.
func (r *remote) call(t oob.MsgType, req any, want oob.MsgType, resp oob.Validator) error {
	return oob.Call(r.conn, r.timeout, t, req, want, resp)
}

// start tells the peer to run its role, and waits until it does.
func (r *remote) start() error {
	var ok oob.Started
	if err := r.call(oob.MsgStart, &oob.Start{}, oob.MsgStarted, &ok); err != nil {
		return fmt.Errorf("rdmatest: peer: starting %s: %w", r.role, err)
	}
	return nil
}

// stop ends the peer's role; the peer releases everything of this
// session when the connection closes.
func (r *remote) stop() error {
	var done oob.Stopped
	err := r.call(oob.MsgStop, &oob.Stop{}, oob.MsgStopped, &done)
	if err != nil {
		err = fmt.Errorf("rdmatest: peer: stopping %s: %w", r.role, err)
	}
	return errors.Join(err, r.close())
}

func (r *remote) close() error {
	if r.conn == nil {
		return nil
	}
	err := r.conn.Close()
	r.conn = nil
	return err
}

// responder wraps the peer's role as the loops' passive side.
func (r *remote) responder() *responder { return &responder{stopFn: r.stop} }

// passiveRole is what side B plays: who answers what. On the wire
// (oob.Scenario.Role) it is its string.
type passiveRole string

// The passive roles.
const (
	roleSink      passiveRole = "sink"       // consumes receives (streams of SEND, WRITE_WITH_IMM)
	roleEcho      passiveRole = "echo"       // answers every receive with a SEND (ping-pong, RPC)
	roleWriteEcho passiveRole = "write-echo" // answers every WRITE with a WRITE (ping-pong)
	roleTarget    passiveRole = "target"     // nothing runs: the NIC serves READ, WRITE and atomics
)

// roleFor names the passive role for a spec.
func roleFor(s *Spec) passiveRole {
	stream := s.Kind == KindStream
	switch {
	case stream && s.consumesRecv():
		return roleSink
	case !stream && s.Op == verbs.OpWrite:
		return roleWriteEcho
	case !stream && s.consumesRecv():
		return roleEcho
	default:
		return roleTarget
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// openRemote asks the peer for side B and connects side A to it.
func (p *Pair) openRemote(epA []verbs.Endpoint) error {
	d, cfg := p.Dev, p.Cfg
	if cfg.Spec == nil {
		return fmt.Errorf("rdmatest: a pair without PairConfig.Spec (a pattern of one's own, served by Serve) has both sides in this process; the peer -rdma.peer=%s plays only the built-in families' roles: run it without -rdma.peer", d.Opts.Peer)
	}
	r, err := dialPeer(d.Opts.Peer, d.Opts.PeerToken, d.Opts.Timeout)
	if err != nil {
		return err
	}
	p.remote = r
	req := setupRequest(&cfg, cmp.Or(cfg.MTU, d.PortAttr.ActiveMTU), p.A.QKey)
	r.role = req.Scenario.Role
	for i, ep := range epA {
		req.Endpoints = append(req.Endpoints, toOOB(ep))
		req.Targets = append(req.Targets, oob.Target{Addr: p.A.In(i, 1).Addr, RKey: p.A.MR.RKey()})
	}
	var ok oob.SetupOK
	if err := r.call(oob.MsgSetup, req, oob.MsgSetupOK, &ok); err != nil {
		return fmt.Errorf("rdmatest: peer %s: %w", d.Opts.Peer, err)
	}
	if len(ok.Endpoints) != len(epA) {
		return fmt.Errorf("rdmatest: peer %s answered with %d QPs for %d", d.Opts.Peer, len(ok.Endpoints), len(epA))
	}
	remoteEps, err := fromOOB(ok.Endpoints)
	if err != nil {
		return fmt.Errorf("rdmatest: peer %s: %w", d.Opts.Peer, err)
	}
	if cfg.MTU != 0 && ok.MTU != cfg.MTU {
		return unsupported("mtu %d: the peer %s connects at a path MTU of %d (its port's active MTU is lower)", cfg.MTU, d.Opts.Peer, ok.MTU)
	}
	var targets []Target
	for i, t := range ok.Targets {
		targets = append(targets, Target{QPN: remoteEps[i].QPN, Addr: t.Addr, RKey: t.RKey})
	}
	return p.A.Connect(d, p.PD, &p.res, cfg.Transport, epA, remoteEps, targets, allAccess, ok.MTU)
}

// setupRequest is the Setup a client sends for cfg (with defaults
// applied and its Spec set), without the endpoints and targets: the
// scenario, the client's MTU and the session's QKey.
func setupRequest(cfg *PairConfig, mtu int, qkey uint32) *oob.Setup {
	return &oob.Setup{
		Scenario: oob.Scenario{
			Op: cfg.Spec.Op.String(), Transport: cfg.Transport.String(), Role: string(roleFor(cfg.Spec)), Size: cfg.Spec.Size,
			QPs: cfg.QPs, SendDepth: cfg.SendDepth, RecvDepth: cfg.RecvDepth, SlotSize: cfg.SlotSize,
			Inline: cfg.Inline, SRQ: cfg.SRQ,
		},
		MTU:  mtu,
		QKey: qkey,
	}
}

func toOOB(ep verbs.Endpoint) oob.Endpoint {
	return oob.Endpoint{QPN: ep.QPN, PSN: ep.PSN, GID: net.IP(ep.GID[:]).String(), LID: ep.LID}
}

func fromOOB(eps []oob.Endpoint) ([]verbs.Endpoint, error) {
	var out []verbs.Endpoint
	for i, e := range eps {
		ip := net.ParseIP(e.GID).To16()
		if ip == nil {
			return nil, fmt.Errorf("endpoint %d: GID %q is not an IPv6 address", i, e.GID)
		}
		var g verbs.GID
		copy(g[:], ip)
		out = append(out, verbs.Endpoint{QPN: e.QPN, PSN: e.PSN, GID: g, LID: e.LID})
	}
	return out, nil
}
