package main

import (
	"errors"
	"net/netip"
	"time"
)

// errNoCM: this build has no rdma_cm in verbs yet.
var errNoCM = errors.New("rdma_cm is not available in this build of verbs")

func (v *verbsDevice) ListenCM(addr netip.AddrPort, size int) (CMListener, error) {
	return nil, errNoCM
}

func (v *verbsDevice) DialCM(dst netip.AddrPort, size int, deadline time.Time) (Conn, error) {
	return nil, errNoCM
}

// cmCause names the likely cause of an rdma_cm failure.
func cmCause(err error) string {
	if isTimeout(err) {
		return "no rdma_cm answer in time: RoCE packets dropped on the path (firewall, switch port without RoCE), or a wrong GID/RoCE version"
	}
	return "the connection manager failed (see the error)"
}
