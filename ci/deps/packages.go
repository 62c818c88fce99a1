package main

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
)

// Host is what the choice of packages depends on.
type Host struct {
	// OSRelease is the content of /etc/os-release.
	OSRelease string
	// Arch is the Debian architecture (dpkg --print-architecture):
	// amd64, arm64, ...
	Arch string
	// NativeRDMA tells that benchmarks can run on this machine's kernel:
	// an RDMA device exists or the running kernel ships rdma_rxe
	// (loopback.Detect's HasDevice or HasRxeModule).
	NativeRDMA bool
	// VM asks for the qemu guest's packages even when NativeRDMA is true:
	// make test boots guests on every machine (the runner's VM tests and
	// the two-host pass).
	VM bool
	// UbuntuKernel is the kernel release that Ubuntu's linux-image-generic
	// brings (e.g. "6.8.0-51-generic", from its Depends): the modules
	// package that carries rdma_rxe is named after it. Needed only on
	// Ubuntu when the guest's packages are.
	UbuntuKernel string
}

// Distro is a Debian-family distribution as make deps tells them apart:
// they name their kernel packages differently.
type Distro int

const (
	// Debian and its derivatives: linux-image-<arch> carries rdma_rxe.
	Debian Distro = iota + 1
	// Ubuntu and its derivatives: linux-image-generic, with rdma_rxe in
	// linux-modules-extra-<release>.
	Ubuntu
)

// userPackages are what every machine needs: verbs (rdma-core, the
// providers, the headers for cgo), the diagnostic tools, perftest for
// calibration, iproute2 for the rdma tool, a C compiler and make.
var userPackages = []string{
	"rdma-core", "ibverbs-providers", "ibverbs-utils", "libibverbs-dev",
	"librdmacm-dev", "perftest", "iproute2", "gcc", "make",
}

// qemuPackages maps a Debian architecture to the package with its
// qemu-system binary, for the guest that runs where the kernel has no RDMA.
var qemuPackages = map[string]string{
	"amd64": "qemu-system-x86",
	"arm64": "qemu-system-arm",
}

// clusterPackages are what the Slurm cluster of qemu guests runs
// (ci/fabric/cluster.sh): the guests see the host's root read-only, so
// the daemons and the client commands come from the host. Their services
// must not run on the host: see clusterServices.
var clusterPackages = []string{"slurm-wlm", "munge"}

// clusterServices are the systemd units (and, without the .service
// suffix, the init scripts) of clusterPackages: make deps keeps them
// from starting on the host (see deps).
var clusterServices = []string{"munge.service", "slurmd.service", "slurmctld.service"}

// Packages returns the packages h needs, in install order: the user-space
// RDMA stack and tools always; the qemu guest's (qemu, a kernel that
// ships rdma_rxe, busybox-static for the initramfs, rdmacm-utils for
// rping, and on Debian the kernel's headers for ci/siw.sh) and the guest
// cluster's (slurm-wlm, munge) only when h has no native RDMA or asks for
// the guest (VM). The kernel is linux-image-<arch> on Debian, and
// linux-image-generic plus linux-modules-extra-<release> (where Ubuntu
// keeps rdma_rxe) on Ubuntu. It fails for a distribution
// outside the Debian family, and for a guest on an architecture without
// a known qemu package or on Ubuntu without UbuntuKernel.
func Packages(h Host) ([]string, error) {
	d, name, err := ParseDistro(h.OSRelease)
	if err != nil {
		return nil, err
	}
	pkgs := slices.Clone(userPackages)
	if h.NativeRDMA && !h.VM {
		return pkgs, nil
	}
	qemu, ok := qemuPackages[h.Arch]
	if !ok {
		return nil, fmt.Errorf("no RDMA in this kernel and no qemu guest for architecture %q (known: amd64, arm64)", h.Arch)
	}
	pkgs = append(pkgs, qemu)
	switch d {
	case Debian:
		// The headers of the same kernel: ci/siw.sh builds siw.ko,
		// which Debian's kernel lacks, against them (docs/siw.md).
		pkgs = append(pkgs, "linux-image-"+h.Arch, "linux-headers-"+h.Arch)
	case Ubuntu:
		if h.UbuntuKernel == "" {
			return nil, fmt.Errorf("%s: the kernel release of linux-image-generic is unknown, so is the name of its linux-modules-extra package", name)
		}
		pkgs = append(pkgs, "linux-image-generic", "linux-modules-extra-"+h.UbuntuKernel)
	}
	// rdmacm-utils: rping, the Soft-iWARP pass's check that siw moves
	// data without rdmabench's code (ci/siw.sh pass).
	pkgs = append(pkgs, "busybox-static", "rdmacm-utils")
	pkgs = append(pkgs, clusterPackages...)
	// make test (VM) also checks the history's trend page in headless
	// Chromium (cmd/rdmahistory's TestTrendPageChromium). Debian's
	// chromium is a package; Ubuntu's is a snap, which a CI container
	// cannot run: there the test fails under CI=true, naming it.
	if h.VM && d == Debian {
		pkgs = append(pkgs, "chromium")
	}
	return pkgs, nil
}

// ParseDistro reads an os-release file: Debian or Ubuntu by ID, or by
// ID_LIKE for their derivatives (Ubuntu first: its derivatives list
// both), and PRETTY_NAME (or NAME, or ID) for messages.
func ParseDistro(osRelease string) (Distro, string, error) {
	f := parseOSRelease(osRelease)
	name := f["PRETTY_NAME"]
	if name == "" {
		name = f["NAME"]
	}
	if name == "" {
		name = f["ID"]
	}
	ids := append([]string{f["ID"]}, strings.Fields(f["ID_LIKE"])...)
	switch {
	case slices.Contains(ids, "ubuntu"):
		return Ubuntu, name, nil
	case slices.Contains(ids, "debian"):
		return Debian, name, nil
	case name == "":
		return 0, "", fmt.Errorf("no distribution named in os-release (ID, NAME): make deps knows Debian and Ubuntu")
	}
	return 0, name, fmt.Errorf("%s is neither Debian nor Ubuntu (nor derived from them): make deps knows only their packages; install rdma-core, libibverbs and perftest by hand", name)
}

// parseOSRelease reads os-release's KEY=value lines; a value may be
// quoted ("…" or '…'; the escapes os-release allows inside are rare in
// the keys read here and are kept as written).
func parseOSRelease(s string) map[string]string {
	f := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		f[k] = v
	}
	return f
}

// UbuntuKernel finds the kernel release in the dependencies of
// linux-image-generic, as `apt-cache depends linux-image-generic` or
// `dpkg-query -W -f '${Depends}' linux-image-generic` print them
// ("linux-image-6.8.0-51-generic"): the release is what follows
// "linux-image-". Unsigned images (linux-image-unsigned-…) count too.
func UbuntuKernel(depends string) (string, error) {
	for _, f := range strings.FieldsFunc(depends, func(r rune) bool {
		return r == ',' || r == '|' || r == ' ' || r == '\n' || r == '\t' || r == '(' || r == ')'
	}) {
		rel, ok := strings.CutPrefix(f, "linux-image-")
		if !ok {
			continue
		}
		rel = strings.TrimPrefix(rel, "unsigned-")
		if rel != "" && rel[0] >= '0' && rel[0] <= '9' {
			return rel, nil
		}
	}
	return "", fmt.Errorf("no linux-image-<release> among the dependencies of linux-image-generic")
}

// Candidate reads `apt-cache policy PKG`: the version apt would install,
// or ok false when there is none (no such package, or a virtual one).
func Candidate(policy string) (version string, ok bool) {
	for _, line := range strings.Split(policy, "\n") {
		v, found := strings.CutPrefix(strings.TrimSpace(line), "Candidate:")
		if !found {
			continue
		}
		v = strings.TrimSpace(v)
		return v, v != "" && v != "(none)"
	}
	return "", false
}
