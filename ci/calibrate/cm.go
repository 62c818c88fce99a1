package main

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// sysInfiniband is where the kernel lists RDMA devices (a test points it
// at a fake tree).
var sysInfiniband = "/sys/class/infiniband"

// deviceIPv4 returns the IPv4 address held by GID index gid of dev's
// port (an IPv4-mapped RoCE v2 GID, as rxe and RoCE HCAs publish for an
// IPv4 address of their netdev), read from sysfs under root: the address
// perftest -R's client resolves to the device.
func deviceIPv4(root, dev string, port, gid int) (string, error) {
	if gid < 0 {
		return "", fmt.Errorf("no GID index (the benchmark's configuration has no rdma-gid-index)")
	}
	path := filepath.Join(root, dev, "ports", strconv.Itoa(port), "gids", strconv.Itoa(gid))
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("%s port %d GID index %d: %w", dev, port, gid, err)
	}
	text := strings.TrimSpace(string(b))
	a, err := netip.ParseAddr(text)
	if err != nil {
		return "", fmt.Errorf("%s port %d GID index %d: %q in %s is not a GID: %w", dev, port, gid, text, path, err)
	}
	if !a.Is4In6() {
		return "", fmt.Errorf("%s port %d GID index %d is %s, not an IPv4-mapped GID (::ffff:a.b.c.d): give the device an IPv4 address", dev, port, gid, a)
	}
	return a.Unmap().String(), nil
}
