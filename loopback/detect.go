package loopback

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Kind is what a machine offers for RDMA.
type Kind int

const (
	// NoRDMA: the kernel has no RDMA support; run inside a VM.
	NoRDMA Kind = iota
	// HasRxeModule: the kernel can make a Soft-RoCE device, none exists yet.
	HasRxeModule
	// HasDevice: at least one RDMA device exists; use it as it is.
	HasDevice
)

// String names the kind in one word, as rxevm prints it.
func (k Kind) String() string {
	switch k {
	case HasDevice:
		return "device"
	case HasRxeModule:
		return "rxe-module"
	default:
		return "no-rdma"
	}
}

// Machine is what Detect found.
type Machine struct {
	Kind Kind
	// Devices are the names under /sys/class/infiniband, sorted.
	Devices []string
	// Kernel is the running kernel's release (uname -r).
	Kernel string
	// Reason says in words how Kind was decided.
	Reason string
}

// Root is the file system Detect reads; tests point it at a fake tree.
type Root struct {
	// Sys is the sysfs mount (normally "/sys").
	Sys string
	// Lib is where kernel modules live (normally "/lib/modules").
	Lib string
	// Proc is the procfs mount (normally "/proc").
	Proc string
}

// HostRoot is the real machine.
var HostRoot = Root{Sys: "/sys", Lib: "/lib/modules", Proc: "/proc"}

// Detect tells which of the three kinds of machine r is.
//
// Rules, in order: any entry in <Sys>/class/infiniband → HasDevice;
// rdma_rxe loaded or built in (<Sys>/module/rdma_rxe exists) or its module
// file present under <Lib>/<release> → HasRxeModule; otherwise NoRDMA.
func Detect(r Root) (Machine, error) {
	m := Machine{}
	rel, err := os.ReadFile(filepath.Join(r.Proc, "sys/kernel/osrelease"))
	if err != nil {
		return m, fmt.Errorf("loopback: reading the kernel release: %w", err)
	}
	m.Kernel = strings.TrimSpace(string(rel))

	entries, err := os.ReadDir(filepath.Join(r.Sys, "class/infiniband"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return m, fmt.Errorf("loopback: listing RDMA devices: %w", err)
	}
	for _, e := range entries {
		m.Devices = append(m.Devices, e.Name())
	}
	sort.Strings(m.Devices)
	if len(m.Devices) > 0 {
		m.Kind = HasDevice
		m.Reason = "RDMA devices present: " + strings.Join(m.Devices, ", ")
		return m, nil
	}
	if _, err := os.Stat(filepath.Join(r.Sys, "module/rdma_rxe")); err == nil {
		m.Kind = HasRxeModule
		m.Reason = "rdma_rxe is loaded (or built in) but no device exists"
		return m, nil
	}
	if p, err := findModule(filepath.Join(r.Lib, m.Kernel), "rdma_rxe"); err == nil {
		m.Kind = HasRxeModule
		m.Reason = "the kernel ships rdma_rxe (" + p + ") but no device exists"
		return m, nil
	}
	m.Kind = NoRDMA
	m.Reason = fmt.Sprintf("kernel %s has no RDMA devices and no rdma_rxe module", m.Kernel)
	return m, nil
}

// moduleSuffixes are the file names a kernel module can have.
var moduleSuffixes = []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"}

// findModule returns the path of module name below dir (a
// /lib/modules/<release> tree). Module names treat '-' and '_' alike.
func findModule(dir, name string) (string, error) {
	want := strings.ReplaceAll(name, "-", "_")
	var found string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || found != "" {
			return nil
		}
		base := strings.ReplaceAll(d.Name(), "-", "_")
		for _, s := range moduleSuffixes {
			if base == want+s {
				found = p
				return fs.SkipAll
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("loopback: looking for module %s in %s: %w", name, dir, err)
	}
	if found == "" {
		return "", fmt.Errorf("loopback: module %s not found in %s", name, dir)
	}
	return found, nil
}

// DefaultNetdev returns the first network interface that is up and not a
// loopback: where a new rxe device goes when none is named.
func DefaultNetdev() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("loopback: listing network interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp != 0 && i.Flags&net.FlagLoopback == 0 {
			return i.Name, nil
		}
	}
	return "", errors.New("loopback: no network interface is up for an rxe device; name one with -netdev")
}
