//go:build linux

package loopback

import (
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
)

// HostVeth is the veth pair a native rxe device goes on by default, so
// that RoCE is not exposed on the host's real network during a run: one
// end carries 192.0.2.1/24 (TEST-NET-1, RFC 5737: never routed), the
// other leads nowhere. The guest's network is the same.
const (
	HostVethName = "rdmabench0"
	HostVethPeer = "rdmabench1"
	HostVethAddr = "192.0.2.1/24"
)

// Veth is a veth pair made for an rxe device.
type Veth struct {
	// Name carries the address and the rxe device; Peer is the other end.
	Name, Peer string
	created    bool
}

// EnsureVeth creates the veth pair name/peer with addr on name, both up,
// and returns it; Close deletes it. A pair left behind by an earlier run
// that died (same name) is deleted first. It needs root (CAP_NET_ADMIN).
func EnsureVeth(name, peer, addr string) (*Veth, error) {
	ip, ipnet, err := net.ParseCIDR(addr)
	if err != nil {
		return nil, fmt.Errorf("loopback: veth address: %w", err)
	}
	ipnet.IP = ip
	if old, err := netlink.LinkByName(name); err == nil {
		if _, ok := old.(*netlink.Veth); !ok {
			return nil, fmt.Errorf("loopback: %s exists and is not a veth (%s); name another interface with -netdev", name, old.Type())
		}
		if err := netlink.LinkDel(old); err != nil {
			return nil, fmt.Errorf("loopback: deleting the leftover %s: %w", name, err)
		}
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: peer}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("loopback: creating veth %s/%s: %w", name, peer, err)
	}
	v := &Veth{Name: name, Peer: peer, created: true}
	for _, step := range []func() error{
		func() error { return netlink.AddrAdd(veth, &netlink.Addr{IPNet: ipnet}) },
		func() error { return linkUp(peer) },
		func() error { return linkUp(name) },
	} {
		if err := step(); err != nil {
			v.Close()
			return nil, fmt.Errorf("loopback: setting up veth %s: %w", name, err)
		}
	}
	return v, nil
}

// Close deletes the pair (deleting one end deletes both). Calling it
// twice is harmless.
func (v *Veth) Close() error {
	if v == nil || !v.created {
		return nil
	}
	v.created = false
	l, err := netlink.LinkByName(v.Name)
	if err != nil {
		return fmt.Errorf("loopback: veth %s: %w", v.Name, err)
	}
	if err := netlink.LinkDel(l); err != nil {
		return fmt.Errorf("loopback: deleting veth %s: %w", v.Name, err)
	}
	return nil
}
