package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	debian12 = `PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
NAME="Debian GNU/Linux"
VERSION_ID="12"
VERSION_CODENAME=bookworm
ID=debian
`
	ubuntu2404 = `PRETTY_NAME="Ubuntu 24.04.1 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=noble
`
	mint22 = `NAME="Linux Mint"
ID=linuxmint
ID_LIKE="ubuntu debian"
PRETTY_NAME="Linux Mint 22"
`
	raspbian = `PRETTY_NAME='Raspbian GNU/Linux 12 (bookworm)'
ID=raspbian
ID_LIKE=debian
`
	fedora = `NAME="Fedora Linux"
ID=fedora
PRETTY_NAME="Fedora Linux 41 (Workstation Edition)"
`
)

// user is what every machine gets: the user-space stack and tools.
var user = []string{"rdma-core", "ibverbs-providers", "ibverbs-utils", "libibverbs-dev",
	"librdmacm-dev", "perftest", "iproute2", "gcc", "make"}

func plus(extra ...string) []string { return append(append([]string{}, user...), extra...) }

func TestPackages(t *testing.T) {
	const noble = "6.8.0-51-generic"
	tests := []struct {
		name string
		host Host
		want []string
		err  string
	}{
		{"debian amd64, no RDMA (CI)", Host{OSRelease: debian12, Arch: "amd64"},
			plus("qemu-system-x86", "linux-image-amd64", "linux-headers-amd64", "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"debian arm64, no RDMA", Host{OSRelease: debian12, Arch: "arm64"},
			plus("qemu-system-arm", "linux-image-arm64", "linux-headers-arm64", "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"debian amd64, native RDMA", Host{OSRelease: debian12, Arch: "amd64", NativeRDMA: true}, user, ""},
		{"debian arm64, native RDMA", Host{OSRelease: debian12, Arch: "arm64", NativeRDMA: true}, user, ""},
		{"debian, native RDMA, guest asked for (make test)", Host{OSRelease: debian12, Arch: "amd64", NativeRDMA: true, VM: true},
			plus("qemu-system-x86", "linux-image-amd64", "linux-headers-amd64", "busybox-static", "rdmacm-utils", "slurm-wlm", "munge", "chromium"), ""},
		{"debian, no RDMA, make test", Host{OSRelease: debian12, Arch: "amd64", VM: true},
			plus("qemu-system-x86", "linux-image-amd64", "linux-headers-amd64", "busybox-static", "rdmacm-utils", "slurm-wlm", "munge", "chromium"), ""},
		{"ubuntu, no RDMA, make test: no chromium snap", Host{OSRelease: ubuntu2404, Arch: "amd64", UbuntuKernel: noble, VM: true},
			plus("qemu-system-x86", "linux-image-generic", "linux-modules-extra-"+noble, "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"ubuntu amd64, no RDMA", Host{OSRelease: ubuntu2404, Arch: "amd64", UbuntuKernel: noble},
			plus("qemu-system-x86", "linux-image-generic", "linux-modules-extra-"+noble, "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"ubuntu arm64, no RDMA", Host{OSRelease: ubuntu2404, Arch: "arm64", UbuntuKernel: noble},
			plus("qemu-system-arm", "linux-image-generic", "linux-modules-extra-"+noble, "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"ubuntu amd64, native RDMA", Host{OSRelease: ubuntu2404, Arch: "amd64", NativeRDMA: true}, user, ""},
		{"ubuntu arm64, native RDMA", Host{OSRelease: ubuntu2404, Arch: "arm64", NativeRDMA: true}, user, ""},
		{"ubuntu, no RDMA, kernel release unknown", Host{OSRelease: ubuntu2404, Arch: "amd64"},
			nil, "Ubuntu 24.04.1 LTS: the kernel release of linux-image-generic is unknown"},
		{"ubuntu derivative", Host{OSRelease: mint22, Arch: "amd64", UbuntuKernel: noble},
			plus("qemu-system-x86", "linux-image-generic", "linux-modules-extra-"+noble, "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"debian derivative", Host{OSRelease: raspbian, Arch: "arm64"},
			plus("qemu-system-arm", "linux-image-arm64", "linux-headers-arm64", "busybox-static", "rdmacm-utils", "slurm-wlm", "munge"), ""},
		{"no guest for the architecture", Host{OSRelease: debian12, Arch: "riscv64"},
			nil, `no qemu guest for architecture "riscv64"`},
		{"any architecture with native RDMA", Host{OSRelease: debian12, Arch: "riscv64", NativeRDMA: true}, user, ""},
		{"not Debian nor Ubuntu", Host{OSRelease: fedora, Arch: "amd64", NativeRDMA: true},
			nil, "Fedora Linux 41 (Workstation Edition) is neither Debian nor Ubuntu"},
		{"empty os-release", Host{Arch: "amd64"}, nil, "no distribution named in os-release"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Packages(tt.host)
			if tt.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestPackagesDoesNotShareTheList(t *testing.T) {
	a, err := Packages(Host{OSRelease: debian12, Arch: "amd64", NativeRDMA: true})
	require.NoError(t, err)
	a[0] = "changed"
	b, err := Packages(Host{OSRelease: debian12, Arch: "amd64", NativeRDMA: true})
	require.NoError(t, err)
	assert.Equal(t, "rdma-core", b[0])
}

func TestParseDistro(t *testing.T) {
	tests := []struct {
		osRelease string
		want      Distro
		name      string
	}{
		{debian12, Debian, "Debian GNU/Linux 12 (bookworm)"},
		{ubuntu2404, Ubuntu, "Ubuntu 24.04.1 LTS"},
		{mint22, Ubuntu, "Linux Mint 22"},
		{raspbian, Debian, "Raspbian GNU/Linux 12 (bookworm)"},
		{"# comment\nID=debian\n", Debian, "debian"},
		{"ID=\"ubuntu\"\nNAME=Ubuntu\n", Ubuntu, "Ubuntu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, name, err := ParseDistro(tt.osRelease)
			require.NoError(t, err)
			assert.Equal(t, tt.want, d)
			assert.Equal(t, tt.name, name)
		})
	}
}

func TestUbuntuKernel(t *testing.T) {
	tests := []struct {
		name, depends, want string
	}{
		{"apt-cache depends", `linux-image-generic
  Depends: linux-image-6.8.0-51-generic
  Depends: linux-modules-extra-6.8.0-51-generic
  Depends: linux-firmware
  Recommends: thermald
`, "6.8.0-51-generic"},
		{"dpkg Depends field", "linux-image-5.15.0-91-generic, linux-modules-extra-5.15.0-91-generic, linux-firmware, intel-microcode",
			"5.15.0-91-generic"},
		{"signed or unsigned", "linux-firmware, linux-image-unsigned-6.8.0-51-generic (= 6.8.0-51.52) | linux-image-6.8.0-51-generic",
			"6.8.0-51-generic"},
		{"64k flavour", "  Depends: linux-image-6.8.0-51-generic-64k\n", "6.8.0-51-generic-64k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := UbuntuKernel(tt.depends)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	_, err := UbuntuKernel("linux-image-generic\n  Depends: linux-firmware\n")
	assert.ErrorContains(t, err, "no linux-image-<release>")
}

func TestCandidate(t *testing.T) {
	tests := []struct {
		name, policy, want string
		ok                 bool
	}{
		{"installable", "perftest:\n  Installed: (none)\n  Candidate: 4.5+0.17-1\n  Version table:\n", "4.5+0.17-1", true},
		{"virtual or unknown to the sources", "linux-image-generic:\n  Installed: (none)\n  Candidate: (none)\n  Version table:\n", "(none)", false},
		{"no such package (no output)", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Candidate(tt.policy)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.ok, ok)
		})
	}
}
