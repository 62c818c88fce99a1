//go:build !linux

package loopback

import "errors"

// Names of the veth pair a native rxe device goes on (Linux only).
const (
	HostVethName = "rdmabench0"
	HostVethPeer = "rdmabench1"
	HostVethAddr = "192.0.2.1/24"
)

// Veth is a veth pair (Linux only).
type Veth struct{ Name, Peer string }

// EnsureVeth is available on Linux only.
func EnsureVeth(name, peer, addr string) (*Veth, error) {
	return nil, errors.New("loopback: veth pairs need Linux")
}

// Close does nothing off Linux.
func (v *Veth) Close() error { return nil }
