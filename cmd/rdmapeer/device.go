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
// is exercised without a device.
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
	// CPU is the CPU the started role's loop is pinned to; -1: none.
	CPU() int
	Stop() (*oob.Stopped, error)
	// Abort moves the QPs to the error state (the session ends early).
	Abort() error
	Close() error
}

// rdmaDevice is the real device.
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
