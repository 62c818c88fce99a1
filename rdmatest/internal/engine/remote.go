package engine

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/peerclient"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// A remote peer (cmd/rdmapeer on another host, selected with -rdma.peer)
// stands in for side B: NewPair then builds side A here, asks the peer
// over TCP (package peerclient) for the passive side of the scenario, and
// connects A's QPs to the QPs the peer made. The measured loops do not
// change; only the passive role runs in the peer instead of a local
// goroutine.

// ErrPeerAuth is a peer that failed to prove it knows the token.
var ErrPeerAuth = peerclient.ErrPeerAuth

// remoteResponder wraps the peer's role as the loops' passive side.
func remoteResponder(r *peerclient.Session) *responder {
	return &responder{stopFn: r.Stop, remote: r}
}

// passiveRole is what side B plays: who answers what. On the wire
// (oob.Scenario.Role) it is its string.
type passiveRole string

// The passive roles.
const (
	roleSink      passiveRole = "sink"       // consumes receives (streams of SEND, WRITE_WITH_IMM)
	roleEcho      passiveRole = "echo"       // answers every receive with a SEND (ping-pong, RPC)
	roleWriteEcho passiveRole = "write-echo" // answers every WRITE with a WRITE (ping-pong)
	roleTarget    passiveRole = "target"     // nothing runs: the NIC serves READ, WRITE and atomics
	roleProgram   passiveRole = "program"    // side B's program of a pattern of one's own (oob.Setup.Program)
	roleBidir     passiveRole = "bidir"      // streams back from Start (oob.Scenario.Stream) and takes the client's stream
	roleWriteRPC  passiveRole = "write-rpc"  // EchoRPC's server over RDMA_WRITE: sweeps the requests, answers over UD (oob.Scenario.RPC)
)

// roleFor names the passive role for a spec.
func roleFor(s *Spec) passiveRole {
	stream := s.Kind == KindStream
	switch {
	case s.Kind == KindRPC && s.Op == verbs.OpWrite:
		return roleWriteRPC
	case stream && s.Bidir:
		return roleBidir
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

// openRemote asks the peer for side B and connects side A to it.
func (p *Pair) openRemote(epA []verbs.Endpoint) error {
	d, cfg := p.Dev, p.Cfg
	var req *oob.Setup
	switch {
	case cfg.Own != nil:
		var err error
		if req, err = ownSetupRequest(&cfg, cmp.Or(cfg.MTU, d.PortAttr.ActiveMTU), p.A.QKey); err != nil {
			return err
		}
	case cfg.Spec != nil:
		req = setupRequest(&cfg, cmp.Or(cfg.MTU, d.PortAttr.ActiveMTU), p.A.QKey)
	default:
		return fmt.Errorf("rdmatest: a pair without PairConfig.Spec or Own: the peer -rdma.peer=%s cannot know which role to play", d.Opts.Peer)
	}
	r, err := peerclient.Dial(d.Opts.Peer, d.Opts.PeerToken, d.Opts.Timeout)
	if err != nil {
		return err
	}
	p.remote = r
	req.CM = d.UseCM()
	var epResp []verbs.Endpoint
	if p.rpcResp != nil { // write-rpc: the responses' UD QP
		if epResp, err = p.rpcResp.Endpoints(d, 0); err != nil {
			return err
		}
		req.Resp = new(toOOB(epResp[0]))
	}
	for i, ep := range epA {
		req.Endpoints = append(req.Endpoints, toOOB(ep))
		req.Targets = append(req.Targets, oob.Target{Addr: p.A.In(i, 1).Addr, RKey: p.A.MR.RKey()})
	}
	ok, err := r.Setup(req)
	if err != nil {
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
	if p.rpcResp != nil {
		if err := p.connectResp(epResp, ok.Resp, ok.MTU); err != nil {
			return err
		}
	}
	if req.CM {
		return p.dialCM(ok.CMAddr, targets)
	}
	return p.A.Connect(d, p.PD, &p.res, cfg.Transport, epA, remoteEps, targets, allAccess, ok.MTU)
}

// connectResp connects the client's response QP (write-rpc) to the
// peer's, told in SetupOK.Resp.
func (p *Pair) connectResp(local []verbs.Endpoint, resp *oob.Endpoint, mtu int) error {
	d := p.Dev
	if resp == nil {
		return fmt.Errorf("rdmatest: peer %s: role write-rpc: no response QP in its answer (an older rdmapeer?)", d.Opts.Peer)
	}
	remote, err := fromOOB([]oob.Endpoint{*resp})
	if err != nil {
		return fmt.Errorf("rdmatest: peer %s: response QP: %w", d.Opts.Peer, err)
	}
	return p.rpcResp.Connect(d, p.PD, &p.res, verbs.TransportUD, local, remote, []Target{{QPN: remote[0].QPN}}, allAccess, mtu)
}

// dialCM connects side A's QPs, in order, to the peer's rdma_cm listener
// at addr (SetupOK.CMAddr), each dial within -rdma.timeout.
func (p *Pair) dialCM(addr string, targets []Target) error {
	d := p.Dev
	dst, err := netip.ParseAddrPort(addr)
	if err != nil {
		return fmt.Errorf("rdmatest: peer %s: asked for rdma_cm, it gave no listener address (cm_addr %q)", d.Opts.Peer, addr)
	}
	conns := &cmConns{timeout: d.Opts.Timeout}
	p.res.Add(conns) // after the QPs: closed before them
	for i, qp := range p.A.QPs {
		c, err := verbs.DialCM(dst, qp, time.Now().Add(d.Opts.Timeout))
		if err != nil {
			return fmt.Errorf("rdmatest: peer %s: rdma_cm: QP %d of %d: %w", d.Opts.Peer, i+1, len(p.A.QPs), err)
		}
		conns.conns = append(conns.conns, c)
		if err := p.A.addCMPeer(p.PD, &p.res, c, targets[i]); err != nil {
			return err
		}
	}
	return nil
}

// setupRequest is the Setup a client sends for cfg (with defaults
// applied and its Spec set), without the endpoints and targets: the
// scenario, the client's MTU and the session's QKey.
func setupRequest(cfg *PairConfig, mtu int, qkey uint32) *oob.Setup {
	var stream *oob.Stream
	if s := cfg.Spec; s.Bidir {
		stream = &oob.Stream{Msgs: cfg.msgs, QD: s.QD, Batch: s.Batch, Signal: s.Signal}
	}
	var rpc *oob.RPC
	if roleFor(cfg.Spec) == roleWriteRPC {
		rpc = &oob.RPC{Window: cfg.Spec.QD, Stride: rpcStride(cfg.Spec)}
	}
	return &oob.Setup{
		Scenario: oob.Scenario{
			Op: cfg.Spec.Op.String(), Transport: cfg.Transport.String(), Role: string(roleFor(cfg.Spec)), Size: cfg.Spec.Size,
			QPs: cfg.QPs, SendDepth: cfg.SendDepth, RecvDepth: cfg.RecvDepth, SlotSize: cfg.SlotSize,
			Inline: cfg.Inline, SRQ: cfg.SRQ, SignalAll: cfg.Spec.SignalAll, Stream: stream, RPC: rpc,
		},
		MTU:  mtu,
		QKey: qkey,
	}
}

// ownSetupRequest is the Setup for a pair of one's own pattern (cfg.Own,
// defaults applied): role "program" with side B's program, or, without
// one, role "target" (the NIC serves; its verb is the strongest access
// side A uses, for the peer's checks). Either way Access lists exactly
// the remote accesses side A's program uses, and the peer's memory
// starts zeroed, as a local side B's does.
func ownSetupRequest(cfg *PairConfig, mtu int, qkey uint32) (*oob.Setup, error) {
	own := cfg.Own
	sc := oob.Scenario{Transport: cfg.Transport.String(), Role: string(roleProgram), QPs: cfg.QPs, SendDepth: cfg.SendDepth,
		RecvDepth: cfg.RecvDepth, SlotSize: cfg.SlotSize, Inline: cfg.Inline, SRQ: cfg.SRQ}
	if own.B == nil {
		sc.Role = string(roleTarget)
		switch a := own.Access; {
		case a&verbs.AccessRemoteAtomic != 0:
			sc.Op, sc.Size = verbs.OpFetchAdd.String(), 8
		case a&verbs.AccessRemoteRead != 0:
			sc.Op, sc.Size = verbs.OpRead.String(), min(cfg.SlotSize, 8)
		case a&verbs.AccessRemoteWrite != 0:
			sc.Op, sc.Size = verbs.OpWrite.String(), min(cfg.SlotSize, 8)
		default:
			return nil, errors.New("rdmatest: side A's program only sends, and side B has no program to receive: give B one (Serve)")
		}
	}
	return &oob.Setup{Scenario: sc, MTU: mtu, QKey: qkey, Program: own.B, Access: oob.AccessNames(own.Access)}, nil
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
