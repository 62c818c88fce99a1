package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/cpus"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// PassiveAccess is the least access the passive side's memory and QPs
// need for a requester's verb: remote write for WRITE, remote read for
// READ, remote atomic for atomics, none beyond local write for SEND. A
// peer serving remote clients exposes nothing more.
func PassiveAccess(op verbs.Opcode) verbs.Access {
	a := verbs.AccessLocalWrite
	switch op {
	case verbs.OpWrite, verbs.OpWriteImm:
		a |= verbs.AccessRemoteWrite
	case verbs.OpRead:
		a |= verbs.AccessRemoteRead
	case verbs.OpFetchAdd, verbs.OpCmpSwap:
		a |= verbs.AccessRemoteAtomic
	}
	return a
}

// Passive is the passive side of one scenario, made for a remote client
// (by cmd/rdmapeer): its memory, QPs connected to the client's, and the
// role it plays once started.
type Passive struct {
	dev       *Dev
	cpu       int // its loop's CPU while it runs (cpus.Plan.Take); -1: unpinned
	side      *Side
	res       Resources
	spec      Spec
	role      passiveRole
	recvDepth int
	timeout   time.Duration
	resp      *responder
	setup     oob.SetupOK
	accepted  chan error // through rdma_cm: the accepts' result (acceptCM), read once by waitCM
	cmErr     error
}

// NewPassive builds the passive side that req asks for on d and connects
// it to the client's QPs. req is checked first (CheckSetup): an invalid
// or inconsistent request is an error before anything is created. The
// caller closes it.
func NewPassive(d *Dev, req *oob.Setup, timeout time.Duration) (*Passive, error) {
	if err := CheckSetup(req, d.Limits()); err != nil {
		return nil, err
	}
	spec, err := SetupSpec(req)
	if err != nil {
		return nil, err
	}
	sc := req.Scenario
	p := &Passive{dev: d, cpu: -1, role: passiveRole(sc.Role), recvDepth: sc.RecvDepth, timeout: timeout, spec: spec}
	p.spec.defaults()
	cfg := PairConfig{Transport: spec.Transport, QPs: sc.QPs, SlotSize: sc.SlotSize, SendDepth: sc.SendDepth,
		RecvDepth: sc.RecvDepth, Inline: sc.Inline, SRQ: sc.SRQ}
	if err := p.open(d, req, cfg, PassiveAccess(spec.Op)); err != nil {
		p.res.Close()
		return nil, err
	}
	return p, nil
}

func (p *Passive) open(d *Dev, req *oob.Setup, cfg PairConfig, access verbs.Access) error {
	pd, err := d.AllocPD()
	if err != nil {
		return fmt.Errorf("rdmatest: %w", err)
	}
	p.res.Add(pd)
	if p.side, err = NewSide(d, pd, &p.res, cfg, cfg.SRQ, access); err != nil {
		return err
	}
	if req.QKey != 0 {
		p.side.QKey = req.QKey // the client's, for both directions
	}
	local, err := p.side.Endpoints(d, 1)
	if err != nil {
		return err
	}
	remote, err := fromOOB(req.Endpoints)
	if err != nil {
		return err
	}
	var targets []Target
	for i, t := range req.Targets {
		targets = append(targets, Target{QPN: remote[i].QPN, Addr: t.Addr, RKey: t.RKey})
	}
	mtu := min(req.MTU, d.PortAttr.ActiveMTU)
	if req.CM {
		if err := p.acceptCM(d, pd, remote, targets); err != nil {
			return err
		}
	} else if err := p.side.Connect(d, pd, &p.res, cfg.Transport, local, remote, targets, access, mtu); err != nil {
		return err
	}
	p.setup.MTU = mtu
	for i, ep := range local {
		p.setup.Endpoints = append(p.setup.Endpoints, toOOB(ep))
		t := p.side.Targets()[i]
		p.setup.Targets = append(p.setup.Targets, oob.Target{Addr: t.Addr, RKey: t.RKey})
	}
	return nil
}

// SetupOK is the answer for the client: the side's QPs and memory.
func (p *Passive) SetupOK() *oob.SetupOK { return &p.setup }

// Start begins the role: "sink" reposts receives, "echo" answers every
// receive with the same verb, "write-echo" answers every WRITE with a
// WRITE (each a C loop on a thread of its own), "target" only exposes
// memory. The side's slots are filled with the verification pattern
// first, as a local passive side's are (see fillPatterns). The loop is
// pinned to a CPU that no other passive side of the process holds (see
// CPU and cpus.Plan.Take).
func (p *Passive) Start() error {
	if p.resp != nil {
		return errors.New("rdmatest: the passive side is already started")
	}
	if err := p.waitCM(); err != nil {
		return err
	}
	p.side.fillPatterns(&p.spec, true)
	if p.role == roleTarget {
		p.resp = &responder{stopFn: func() error { return nil }}
		return nil
	}
	cfg, ok := serveConfig(p.side, &p.spec, p.role, p.recvDepth, p.timeout)
	if !ok {
		return fmt.Errorf("rdmatest: unknown passive role %q", p.role)
	}
	p.cpu = p.dev.cpus.Take()
	resp, err := startServe(cfg, p.cpu)
	if err != nil {
		cpus.Give(p.cpu)
		p.cpu = -1
		return err
	}
	p.resp = resp
	return nil
}

// CPU is the CPU the role's loop is pinned to while it runs, or -1: not
// pinned (every loop CPU held by other sessions, none to pin to, or no
// loop: a target only exposes memory).
func (p *Passive) CPU() int { return p.cpu }

// Stop ends the role and reports what it saw.
func (p *Passive) Stop() (*oob.Stopped, error) {
	err := p.resp.Stop() // the role's loop has returned: its counts are ours now
	if p.resp.ended() {
		cpus.Give(p.cpu)
	} // else the loop still spins there (Stop's error says so): the CPU stays held
	p.cpu = -1
	st := &oob.Stopped{}
	if p.role == roleSink {
		st.Received = uint64(p.resp.res.Recvs)
	}
	p.resp = nil
	return st, err
}

// Close stops the role if it runs, moves the QPs to the error state (so
// that every outstanding WR is flushed) and releases everything.
func (p *Passive) Close() error {
	var err error
	if p.resp != nil {
		_, err = p.Stop()
	}
	if p.accepted != nil {
		_ = p.waitCM() // the accepts end by their deadline; their error was the session's
	}
	if p.side != nil {
		for _, qp := range p.side.QPs {
			qp.ToError()
		}
	}
	return errors.Join(err, p.res.Close())
}

// acceptCM listens through rdma_cm on the device's IPv4 address (an
// ephemeral port, told to the client in SetupOK.CMAddr) and accepts, in
// a goroutine, the request of each client QP in order (remote[i].QPN:
// requests from other QPs are turned away), each within the timeout.
// Start (and Close) wait for it: the client dials after SetupOK.
func (p *Passive) acceptCM(d *Dev, pd *verbs.PD, remote []verbs.Endpoint, targets []Target) error {
	ps, err := verbs.PortSpaceFor(p.spec.Transport)
	if err != nil {
		return fmt.Errorf("rdmatest: %w", err)
	}
	ip, err := d.IPv4Addr(d.PortNum)
	if err != nil {
		return fmt.Errorf("rdmatest: rdma_cm: %w", err)
	}
	l, err := verbs.ListenCM(netip.AddrPortFrom(ip, 0), ps)
	if err != nil {
		return fmt.Errorf("rdmatest: rdma_cm: %w", err)
	}
	p.setup.CMAddr = l.Addr().String()
	conns := &cmConns{timeout: p.timeout}
	p.res.Add(conns) // after the QPs: closed before them
	p.accepted = make(chan error, 1)
	side, timeout := p.side, p.timeout
	go func() {
		defer l.Close()
		for i, qp := range side.QPs {
			c, err := l.AcceptFrom(qp, remote[i].QPN, time.Now().Add(timeout))
			if err != nil {
				p.accepted <- fmt.Errorf("rdmatest: rdma_cm: accepting the client's QP %#x (%d of %d): %w", remote[i].QPN, i+1, len(side.QPs), err)
				return
			}
			conns.conns = append(conns.conns, c)
			if err := side.addCMPeer(pd, &p.res, c, targets[i]); err != nil {
				p.accepted <- err
				return
			}
		}
		p.accepted <- nil
	}()
	return nil
}

// waitCM waits for acceptCM's goroutine (nil without rdma_cm) and
// returns its error, the same on every call.
func (p *Passive) waitCM() error {
	if p.accepted != nil {
		p.cmErr = <-p.accepted
		p.accepted = nil
	}
	return p.cmErr
}
