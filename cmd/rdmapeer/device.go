package main

import (
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/peer"
)

// device is what a session needs of the RDMA device: its description for
// the client, its limits for the checks, and the passive side of a
// scenario. Tests substitute a fake, so that everything a client can send
// is exercised without a device. Its methods are called by every session
// at once, without a lock of the server's: they must be safe for
// concurrent use.
type device interface {
	info() oob.HelloOK
	limits() peer.Limits
	// open creates the passive side of req (already checked by
	// peer.CheckSetup and counted against the budgets).
	open(req *oob.Setup) (passive, error)
}

// passive is one session's passive side (*peer.Passive).
type passive interface {
	SetupOK() *oob.SetupOK
	Start() error
	// Interrupt ends Start's wait for the client's rdma_cm connections
	// (the client left); safe while Start runs.
	Interrupt()
	// CPU is the CPU the started role's loop is pinned to; -1: none.
	CPU() int
	// StopWith ends the role, a program or a sink after up to
	// req.Expect receives (see peer.Passive).
	StopWith(req oob.Stop) (*oob.Stopped, error)
	// Abort moves the QPs to the error state (the session ends early).
	Abort() error
	Close() error
}

// rdmaDevice is the real device. It is safe for concurrent use without a
// lock of its own, so that one session's slow Setup (address resolution
// for its QPs) does not hold the others: peer.NewPassive creates every
// object of a session (PD, CQ, completion channel, buffer, MR, SRQ, QPs,
// AHs) from the shared *verbs.Device, whose Go fields it only reads
// (its context, attributes and ID, set when it was opened) except
// MaxInline's cache, which has its own lock, as do verbs' table of live
// objects and the passive loops' CPUs (taken at Start); the verbs calls
// themselves are thread-safe in libibverbs; and each session's objects
// are its own. The budget of the sessions together is reserved before
// open, by pool.take under the pool's lock.
type rdmaDevice struct {
	d *rdmatest.Dev
	// timeout is the passive side's deadline (NewPassive): how long its
	// loop waits for a request, and for room to answer (-idle).
	timeout time.Duration
}

func (r *rdmaDevice) info() oob.HelloOK {
	a := r.d.Attr()
	return oob.HelloOK{Device: a.Name, Provider: a.Provider, FW: a.FWVersion, MTU: r.d.PortAttr.ActiveMTU}
}

func (r *rdmaDevice) limits() peer.Limits { return r.d.Limits() }

func (r *rdmaDevice) open(req *oob.Setup) (passive, error) {
	p, err := peer.NewPassive(r.d, req, r.timeout)
	if err != nil {
		return nil, err
	}
	return p, nil
}
