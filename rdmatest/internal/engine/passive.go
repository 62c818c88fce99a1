package engine

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest/internal/cpus"
	"github.com/rdmabench/rdmabench/rdmatest/internal/prog"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/verbs"
)

// PassiveAccess is the least access the passive side's memory and QPs
// need for a requester's verb: remote write for WRITE, remote read for
// READ, remote atomic for atomics, none beyond local write for SEND. A
// peer serving remote clients exposes nothing more.
func PassiveAccess(op verbs.Opcode) verbs.Access {
	return verbs.AccessLocalWrite | op.RemoteAccess()
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
	listener  *verbs.CMListener // through rdma_cm: the accepts' listener (Interrupt)
	// program is side B's program (role "program"); own marks a pattern
	// of one's own (a program, or a target with an access list): its
	// memory starts zeroed, as a local side B's does.
	program *prog.Spec
	own     bool
	// streamMsgs and sendDepth (role bidir) are the stream back and the
	// side's send depth.
	streamMsgs int64
	sendDepth  int
	// rpcResp and stride (role write-rpc) are the UD side that sends the
	// responses and the request slots' stride.
	rpcResp *Side
	stride  int
}

// NewPassive builds the passive side that req asks for on d and connects
// it to the client's QPs. req is checked first (CheckSetup): an invalid
// or inconsistent request is an error before anything is created. The
// caller closes it.
func NewPassive(d *Dev, req *oob.Setup, timeout time.Duration) (*Passive, error) {
	if err := CheckSetup(req, d.Limits()); err != nil {
		return nil, err
	}
	sc := req.Scenario
	var spec Spec
	var access verbs.Access
	if passiveRole(sc.Role) == roleProgram {
		t, err := verbs.ParseTransport(sc.Transport)
		if err != nil {
			return nil, fmt.Errorf("rdmatest: setup: %w", err)
		}
		spec = Spec{Transport: t, QPs: sc.QPs, QD: sc.SendDepth, SRQ: sc.SRQ}
	} else {
		var err error
		if spec, err = SetupSpec(req); err != nil {
			return nil, err
		}
		access = PassiveAccess(spec.Op)
	}
	if len(req.Access) > 0 || req.Program != nil {
		access = oob.ParseAccess(req.Access) // exactly what the client's own pattern uses
	}
	p := &Passive{dev: d, cpu: -1, role: passiveRole(sc.Role), recvDepth: sc.RecvDepth, timeout: timeout, spec: spec,
		program: req.Program, own: len(req.Access) > 0 || req.Program != nil, sendDepth: sc.SendDepth}
	if sc.Stream != nil {
		p.streamMsgs = sc.Stream.Msgs
	}
	if sc.RPC != nil {
		p.stride = sc.RPC.Stride
	}
	p.spec.defaults()
	cfg := PairConfig{Transport: spec.Transport, QPs: sc.QPs, SlotSize: sc.SlotSize, SendDepth: sc.SendDepth,
		RecvDepth: sc.RecvDepth, Inline: sc.Inline, SRQ: sc.SRQ}
	if err := p.open(d, req, cfg, access); err != nil {
		p.res.Close()
		return nil, err
	}
	return p, nil
}

// checkProgramSetup is CheckSetup for role "program" (req has passed
// oob validation, the program's static checks included): the passive
// side's sizes within the device's limits. The program itself is built,
// and checked by verbs against the side, at Start.
func checkProgramSetup(req *oob.Setup, lim Limits) error {
	sc, a := req.Scenario, lim.Attr
	var errs []error
	bad := func(format string, v ...any) { errs = append(errs, fmt.Errorf("rdmatest: setup: "+format, v...)) }
	if sc.SendDepth < 2 || sc.SendDepth > a.MaxQPWR {
		bad("send_depth %d out of range 2..%d (%s's max_qp_wr)", sc.SendDepth, a.MaxQPWR, lim.Device)
	}
	if sc.SRQ && sc.RecvDepth > a.MaxSRQWR {
		bad("recv_depth %d (SRQ) exceeds %s's max_srq_wr %d", sc.RecvDepth, lim.Device, a.MaxSRQWR)
	}
	if !sc.SRQ && sc.RecvDepth > a.MaxQPWR {
		bad("recv_depth %d exceeds %s's max_qp_wr %d", sc.RecvDepth, lim.Device, a.MaxQPWR)
	}
	if sc.Inline > a.MaxInline {
		bad("inline %d exceeds %s's max_inline_data %d", sc.Inline, lim.Device, a.MaxInline)
	}
	if a.MaxQP > 0 && sc.QPs > a.MaxQP {
		bad("qps %d exceeds %s's max_qp %d", sc.QPs, lim.Device, a.MaxQP)
	}
	if c := SetupCost(req, lim); a.MaxMRSize > 0 && uint64(c.Registered) > a.MaxMRSize {
		bad("registered memory %d bytes exceeds %s's max_mr_size %d", c.Registered, lim.Device, a.MaxMRSize)
	}
	return errors.Join(errs...)
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
	if req.Resp != nil { // role write-rpc (oob checked); before acceptCM, whose goroutine must be the last thing that can fail
		if err := p.openResp(d, pd, cfg, req.Resp, mtu); err != nil {
			return err
		}
	}
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

// openResp builds role write-rpc's second side: one UD QP, with the
// request side's depths and slots, connected to the client's response
// QP resp. It only sends (local write access).
func (p *Passive) openResp(d *Dev, pd *verbs.PD, cfg PairConfig, resp *oob.Endpoint, mtu int) error {
	cfg.Transport, cfg.QPs, cfg.SRQ = verbs.TransportUD, 1, false
	var err error
	if p.rpcResp, err = NewSide(d, pd, &p.res, cfg, false, verbs.AccessLocalWrite); err != nil {
		return err
	}
	p.rpcResp.QKey = p.side.QKey
	local, err := p.rpcResp.Endpoints(d, 1)
	if err != nil {
		return err
	}
	remote, err := fromOOB([]oob.Endpoint{*resp})
	if err != nil {
		return fmt.Errorf("rdmatest: setup: resp: %w", err)
	}
	if err := p.rpcResp.Connect(d, pd, &p.res, verbs.TransportUD, local, remote, []Target{{QPN: remote[0].QPN}}, verbs.AccessLocalWrite, mtu); err != nil {
		return err
	}
	p.setup.Resp = new(toOOB(local[0]))
	return nil
}

// qps are every QP the passive side made.
func (p *Passive) qps() []*verbs.QP {
	var qps []*verbs.QP
	if p.side != nil {
		qps = append(qps, p.side.QPs...)
	}
	if p.rpcResp != nil {
		qps = append(qps, p.rpcResp.QPs...)
	}
	return qps
}

// SetupOK is the answer for the client: the side's QPs and memory.
func (p *Passive) SetupOK() *oob.SetupOK { return &p.setup }

// Start begins the role: "sink" reposts receives, "echo" answers every
// receive with the same verb, "write-echo" answers every WRITE with a
// WRITE, "write-rpc" sweeps the request slots and answers each over UD
// (EchoRPC's server), "program" runs the client's program (each a C loop on a thread
// of its own), "target" only exposes memory. The side's slots are filled
// with the verification pattern first, as a local passive side's are
// (see fillPatterns), except for a pattern of one's own, whose memory
// starts zeroed. The loop is
// pinned to a CPU that no other passive side of the process holds (see
// CPU and cpus.Plan.Take).
func (p *Passive) Start() error {
	if p.resp != nil {
		return errors.New("rdmatest: the passive side is already started")
	}
	if err := p.waitCM(); err != nil {
		return err
	}
	if !p.own {
		p.side.fillPatterns(&p.spec, true)
	}
	if p.program != nil {
		return p.startProgram()
	}
	if p.role == roleTarget {
		p.resp = &responder{stopFn: func() error { return nil }}
		return nil
	}
	if p.role == roleBidir {
		// The stream back, from now: the client starts its own when it
		// hears Started (the skew is at most that round trip). It takes
		// the client's messages as a local mirror does (reposting).
		l, err := newSideStream(p.side, &p.spec, p.streamMsgs, 0, streamEnv{sendDepth: p.sendDepth, recvDepth: p.recvDepth, timeout: p.timeout})
		if err != nil {
			return err
		}
		return p.run(func(cpu int) (*responder, error) {
			r := readyLoop(l, cpu)
			if bidirCounts(&p.spec) {
				// The client's messages still arriving after the stream
				// back ended: taken on the loop's thread at once, then
				// counted in Stopped.Received.
				r.settleWant = recvsOf(&p.spec, p.streamMsgs, len(p.side.QPs), true)
			}
			if r.err != nil {
				r.begin()
				<-r.done
				return nil, errors.Join(fmt.Errorf("rdmatest: bidir stream: %w", r.err), l.Close())
			}
			r.begin()
			return &responder{run: r, timeout: p.timeout}, nil
		})
	}
	if p.role == roleWriteRPC {
		cfg := writeRPCServe(p.side, p.rpcResp, &p.spec, p.stride, p.timeout)
		return p.run(func(cpu int) (*responder, error) { return startServe(cfg, cpu) })
	}
	cfg, ok := serveConfig(p.side, &p.spec, p.role, p.recvDepth, p.timeout)
	if !ok {
		return fmt.Errorf("rdmatest: unknown passive role %q", p.role)
	}
	return p.run(func(cpu int) (*responder, error) { return startServe(cfg, cpu) })
}

// run starts the role's loop with start on a CPU taken for it, given
// back when the loop does not start.
func (p *Passive) run(start func(cpu int) (*responder, error)) error {
	p.cpu = p.dev.cpus.Take()
	resp, err := start(p.cpu)
	if err != nil {
		cpus.Give(p.cpu)
		p.cpu = -1
		return err
	}
	p.resp = resp
	return nil
}

// startProgram resolves the client's program against the side (its QPs
// and slots, the client's "in" slots as the peer's), builds it (verbs
// checks it: an error names the step) and runs it passive, its first
// wait of each iteration lasting up to the timeout, on a CPU of its own.
func (p *Passive) startProgram() error {
	if err := programUnsupported(p.dev, *p.program); err != nil {
		return fmt.Errorf("rdmatest: side B's program: %w", err)
	}
	l, err := newProgram(p.side, p.spec.Transport, *p.program, prog.Run{Passive: true, Idle: p.timeout, Timeout: p.timeout})
	if err != nil {
		return fmt.Errorf("rdmatest: side B's program: %w", err)
	}
	return p.run(func(cpu int) (*responder, error) { return startProgram(l, cpu, p.timeout) })
}

// CPU is the CPU the role's loop is pinned to while it runs, or -1: not
// pinned (every loop CPU held by other sessions, none to pin to, or no
// loop: a target only exposes memory).
func (p *Passive) CPU() int { return p.cpu }

// Stop ends the role and reports what it saw.
func (p *Passive) Stop() (*oob.Stopped, error) { return p.StopWith(oob.Stop{}) }

// StopWith ends the role and reports what it saw (Received: the
// receives of a sink or a program; Sent: a program's iterations; with
// req.Times a sink's receive interval). A program is first given up to
// the timeout to see req.Expect receives, and a sink settles as a local
// one does (settleRecvs), so that its count is complete.
func (p *Passive) StopWith(req oob.Stop) (*oob.Stopped, error) {
	expect := req.Expect
	settled := int64(-1) // a bidir side's receives after its last ones settled
	if p.resp == nil {
		return nil, errors.New("rdmatest: the passive side is not started")
	}
	switch {
	case p.program != nil && expect > 0:
		deadline := time.Now().Add(p.timeout)
		for uint64(p.resp.recvs()) < expect && !p.resp.ended() && time.Now().Before(deadline) {
			time.Sleep(50 * time.Microsecond)
		}
	case p.role == roleBidir:
		// The stream back runs to its end (its waits are bounded by the
		// timeout): Stop must not cut it short. On UC and UD the loop's
		// goroutine then takes the client's last messages still
		// arriving (settleWant), which done waits for too.
		select {
		case <-p.resp.run.done:
			if p.resp.run.settleWant > 0 {
				settled = p.resp.run.settled
			}
		case <-time.After(p.timeout + time.Second):
		}
	case p.role == roleSink && expect > 0:
		// As a local sink settles (Pair.settle): the client's count
		// of messages and markers, or a count that stopped moving. The
		// client saw its last completion already (on RC: every message
		// acknowledged), so this takes milliseconds; it is bounded well
		// below the client's own wait for the answer.
		settleRecvs(p.resp.recvs, int64(min(expect, math.MaxInt64)), p.spec.Transport == verbs.TransportRC,
			int64(len(p.side.QPs)), min(p.timeout, sinkSettleMax))
	}
	err := p.resp.Stop() // the role's loop has returned: its counts are ours now
	if p.resp.ended() {
		cpus.Give(p.cpu)
	} // else the loop still spins there (Stop's error says so): the CPU stays held
	p.cpu = -1
	st := &oob.Stopped{}
	switch {
	case p.program != nil:
		st.Received, st.Sent = uint64(max(p.resp.res.Recvs, 0)), uint64(max(p.resp.res.Ops, 0))
	case p.role == roleBidir:
		r := p.resp.res
		st.Received, st.StreamOps = uint64(max(r.Recvs, settled, 0)), uint64(max(r.Ops, 0))
		if r.Last > r.First {
			st.StreamNs = min(r.Last-r.First, oob.MaxRecvSpanNs)
		}
		if err == nil && r.Ops != p.streamMsgs {
			err = fmt.Errorf("rdmatest: bidir: the peer's stream back completed %d of %d messages", r.Ops, p.streamMsgs)
		}
	case p.role == roleSink:
		st.Received = uint64(p.resp.res.Recvs)
		if r := p.resp.res; req.Times && r.RecvFirst != 0 && r.RecvLast > r.RecvFirst {
			st.RecvSpanNs = min(r.RecvLast-r.RecvFirst, oob.MaxRecvSpanNs)
		}
	}
	p.resp = nil
	return st, err
}

// sinkSettleMax bounds how long a sink waits for a client's expected
// receives before it answers Stop.
const sinkSettleMax = 5 * time.Second

// Close stops the role if it runs, moves the QPs to the error state (so
// that every outstanding WR is flushed) and releases everything.
func (p *Passive) Close() error {
	var err error
	if p.resp != nil {
		_, err = p.Stop()
	}
	if p.accepted != nil {
		p.Interrupt()  // nobody will start it now
		_ = p.waitCM() // their error was the session's
	}
	for _, qp := range p.qps() {
		qp.ToError()
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
	p.listener = l
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

// Interrupt ends a pending rdma_cm accept (the client left, or never
// dials): Start then returns at once with its error, and Close does not
// wait out the accept's deadline (-idle in rdmapeer). A request already
// being accepted finishes that step first. Safe from any goroutine while
// Start runs; without rdma_cm it does nothing.
func (p *Passive) Interrupt() {
	if p.listener != nil {
		p.listener.Interrupt()
	}
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
