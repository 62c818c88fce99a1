//go:build !(linux && cgo)

package verbs

import (
	"net/netip"
	"sync/atomic"
	"time"
)

// Without cgo or off Linux, ListenCM and DialCM return ErrNotSupported
// (after the argument checks), so no rdma_cm object is ever created.

type (
	cCMListener struct{}
	cCMConn     struct{}
)

func cmListen(netip.AddrPort, PortSpace) (cCMListener, netip.AddrPort, error) {
	return cCMListener{}, netip.AddrPort{}, ErrNotSupported
}

func cmDial(*CMConn, time.Time) error { return ErrNotSupported }

func (cCMListener) closed() bool { return true }
func (cCMListener) accept(*CMConn, uint32, time.Time, *atomic.Bool) error {
	return ErrNotSupported
}
func (cCMListener) close() error               { return nil }
func (cCMConn) disconnect(*CMConn) error       { return ErrNotSupported }
func (cCMConn) close(*CMConn, time.Time) error { return nil }
