//go:build linux

package loopback

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
)

// Rxe is a software RDMA device on a network interface: Soft-RoCE (rxe),
// or Soft-iWARP (siw) when [EnsureLink] made it.
type Rxe struct {
	// Name is the RDMA device name, e.g. "rxe0".
	Name string
	// Netdev is the network interface it runs on.
	Netdev string
	// Created tells whether EnsureRxe made the link (and Close removes it).
	Created bool
}

// EnsureRxe makes sure an rxe device runs on netdev and returns it. When
// one already exists on netdev (under any name) it is returned as it is and
// Close leaves it alone; otherwise a link called name is created through
// netlink, and Close deletes it. It needs root (CAP_NET_ADMIN) and a kernel
// with rdma_rxe; it loads the module with modprobe when it is not loaded.
func EnsureRxe(name, netdev string) (*Rxe, error) {
	return EnsureLink(name, LinkRxe, netdev)
}

// EnsureLink makes a software RDMA device of linkType ([LinkRxe] or
// [LinkSiw]) called name on netdev through netlink
// (RDMA_NLDEV_CMD_NEWLINK, as `rdma link add NAME type TYPE netdev DEV`
// does); Close deletes it. For rxe it is [EnsureRxe]: an rxe device
// already on netdev is reused, and rdma_rxe is loaded with modprobe when
// it is not. siw publishes no network interface in sysfs (no "parent",
// and an iWARP port has no GID attributes), so an existing siw device
// cannot be found by its netdev: a second siw link on the same netdev
// fails with EEXIST, and the error says so. The siw module must be loaded
// already: Debian's kernel does not ship it, and the qemu guest loads a
// siw.ko built for it ([VM.ModuleFiles], ci/siw.sh). It needs root
// (CAP_NET_ADMIN).
func EnsureLink(name, linkType, netdev string) (*Rxe, error) {
	module, err := linkModule(linkType)
	if err != nil {
		return nil, err
	}
	if linkType == LinkRxe {
		if existing, ok := rxeOn(HostRoot.Sys, netdev); ok {
			return &Rxe{Name: existing, Netdev: netdev}, nil
		}
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("loopback: creating %s device %s on %s needs root (CAP_NET_ADMIN); run as root or create it with: rdma link add %s type %s netdev %s", linkType, name, netdev, name, linkType, netdev)
	}
	if _, err := os.Stat(filepath.Join(HostRoot.Sys, "module", module)); err != nil {
		if linkType != LinkRxe {
			return nil, fmt.Errorf("loopback: kernel module %s is not loaded (Debian's kernel does not ship it: build siw.ko with ci/siw.sh build and boot the guest with rxevm -siw FILE)", module)
		}
		if out, err := exec.Command("modprobe", module).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("loopback: kernel module %s is not loaded and modprobe failed: %v: %s", module, err, strings.TrimSpace(string(out)))
		}
	}
	if _, err := netlink.LinkByName(netdev); err != nil {
		return nil, fmt.Errorf("loopback: network interface %q for %s: %w", netdev, linkType, err)
	}
	if err := netlink.RdmaLinkAdd(name, linkType, netdev); err != nil {
		return nil, fmt.Errorf("loopback: rdma link add %s type %s netdev %s: %w%s", name, linkType, netdev, err, linkAddHint(linkType, netdev, err))
	}
	return &Rxe{Name: name, Netdev: netdev, Created: true}, nil
}

// linkAddHint explains the errors of `rdma link add` whose cause is known.
func linkAddHint(linkType, netdev string, err error) string {
	switch {
	case linkType == LinkRxe && errors.Is(err, syscall.ENOENT):
		// rxe computes its ICRC with the kernel's crc32 crypto
		// transform; where that is a module nobody loaded, the link
		// fails with ENOENT.
		return " (is the crc32 crypto transform available? try: modprobe crc32_generic)"
	case linkType == LinkSiw && errors.Is(err, syscall.EEXIST):
		return " (a siw device already runs on " + netdev + ": rdma link show)"
	}
	return ""
}

// WaitActive waits until port 1 of the device is ACTIVE, or the deadline.
func (r *Rxe) WaitActive(deadline time.Time) error {
	p := filepath.Join(HostRoot.Sys, "class/infiniband", r.Name, "ports/1/state")
	var last string
	for {
		b, err := os.ReadFile(p)
		last = strings.TrimSpace(string(b))
		if err == nil && strings.HasSuffix(last, "ACTIVE") {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				last = err.Error()
			}
			return fmt.Errorf("loopback: %s port 1 did not become ACTIVE in time (state %q)", r.Name, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Close removes the device if EnsureRxe created it. Calling it twice is
// harmless.
func (r *Rxe) Close() error {
	if r == nil || !r.Created {
		return nil
	}
	r.Created = false
	if err := netlink.RdmaLinkDel(r.Name); err != nil {
		return fmt.Errorf("loopback: rdma link delete %s: %w", r.Name, err)
	}
	return nil
}

// rxeOn returns the name of an rxe device already bound to netdev.
func rxeOn(sys, netdev string) (string, bool) {
	entries, err := os.ReadDir(filepath.Join(sys, "class/infiniband"))
	if err != nil {
		return "", false
	}
	for _, e := range entries {
		if parent, err := deviceNetdev(sys, e.Name()); err == nil && parent == netdev {
			return e.Name(), true
		}
	}
	return "", false
}

// deviceNetdev reads the network interface under an RDMA device: rxe
// publishes it as the "parent" attribute; others through the netdev of
// GID 0 of port 1. siw (Debian's 6.1, built by ci/siw.sh) has neither: no
// "parent", and reading gid_attrs/ndevs/0 of its iWARP port fails with
// EINVAL.
func deviceNetdev(sys, dev string) (string, error) {
	base := filepath.Join(sys, "class/infiniband", dev)
	for _, p := range []string{"parent", "ports/1/gid_attrs/ndevs/0"} {
		if b, err := os.ReadFile(filepath.Join(base, p)); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s, nil
			}
		}
	}
	return "", errors.New("loopback: no network interface found for " + dev)
}
