package loopback

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GuestModules are the kernel modules the guest loads, in this order: virtio
// PCI and 9p for the shared file systems, crc32_generic (rxe computes its
// ICRC with the crc32 crypto transform; without it `rdma link add` fails
// with ENOENT), the RDMA core, the connection managers (ib_cm, iw_cm,
// rdma_cm with its configfs, and rdma_ucm for librdmacm's
// /dev/infiniband/rdma_cm: -rdma.cm), rxe, and veth for the netdev under
// rxe.
var GuestModules = []string{
	"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"netfs", "fscache", "9pnet", "9pnet_virtio", "9p",
	"crc32_generic", "ib_core", "ib_uverbs", "configfs", "ib_cm", "iw_cm", "rdma_cm", "rdma_ucm", "udp_tunnel", "ip6_udp_tunnel", "rdma_rxe", "veth",
}

// SiwModules are the modules of the guest kernel's tree that siw.ko needs
// loaded before it (modinfo -F depends: ib_core, which GuestModules
// loads, and libcrc32c), in order: crc32c_generic first, because
// libcrc32c allocates the crc32c crypto transform when it loads and fails
// without one (the initramfs has no modprobe to fetch it). rxevm -siw
// appends them to GuestModules.
var SiwModules = []string{"crc32c_generic", "libcrc32c"}

// Link types of `rdma link add NAME type TYPE netdev DEV` that
// [EnsureLink] and [Job.LinkType] know: Soft-RoCE and Soft-iWARP.
const (
	LinkRxe = "rxe"
	LinkSiw = "siw"
)

// linkModule is the kernel module behind a link type, or an error naming
// the type and the known ones.
func linkModule(linkType string) (string, error) {
	switch linkType {
	case LinkRxe:
		return "rdma_rxe", nil
	case LinkSiw:
		return "siw", nil
	}
	return "", fmt.Errorf("loopback: unknown RDMA link type %q (known: %s, %s)", linkType, LinkRxe, LinkSiw)
}

// Job is what the guest runs.
type Job struct {
	// Args is the command and its arguments; Args[0] is looked up in the
	// guest's PATH (the host's root file system).
	Args []string `json:"args"`
	// Dir is the working directory (a host path).
	Dir string `json:"dir"`
	// Env is the command's environment.
	Env []string `json:"env"`
	// Device is the name of the device to create (default "rxe0", or
	// "siw0" when LinkType is [LinkSiw]).
	Device string `json:"device"`
	// LinkType is the kind of software RDMA device the guest makes:
	// [LinkRxe] (the default when empty) or [LinkSiw], whose module the
	// guest kernel does not ship: the VM must load a siw.ko built for it
	// ([VM.ModuleFiles]) after [SiwModules].
	LinkType string `json:"link_type,omitempty"`
	// ActiveTimeout bounds the wait for the device's port to become ACTIVE.
	ActiveTimeout time.Duration `json:"active_timeout"`
	// Net, when set, puts the device on the guest's virtio NIC (see
	// [VM.NIC]) instead of a veth pair. [Pair.Run] and [Cluster.Run] set
	// it.
	Net *GuestNet `json:"net,omitempty"`
	// Hostname, when set, is the guest's host name ([Cluster.Run] sets
	// it); the default is the kernel's, "(none)".
	Hostname string `json:"hostname,omitempty"`
}

// linkType is the job's link type, [LinkRxe] when unset.
func (j Job) linkType() string {
	if j.LinkType == "" {
		return LinkRxe
	}
	return j.LinkType
}

// device is the name of the device the guest makes: Device, else the
// link type's first name (rxe0, siw0).
func (j Job) device() string {
	if j.Device != "" {
		return j.Device
	}
	return j.linkType() + "0"
}

// GuestNet is the address of a guest's virtio NIC, which rxe runs on.
type GuestNet struct {
	// MAC identifies the interface in the guest (normally eth0).
	MAC string `json:"mac"`
	// Addr is its address with prefix length, e.g. "192.0.2.1/24".
	Addr string `json:"addr"`
	// Hosts, when set, are the lines of the guest's /etc/hosts after
	// the localhost entries ("192.0.2.1 node1", ...): the guest sees them
	// instead of the host's file, which it cannot change (the host root
	// is read-only).
	Hosts []string `json:"hosts,omitempty"`
}

// NIC is a guest's virtio network card on qemu's UDP socket backend: each
// qemu sends the guest's Ethernet frames as datagrams from its Port on
// 127.0.0.1 to the other's PeerPort, one frame a datagram (a [Pair]'s
// wire), or, when Group is set, to a multicast group that every qemu of
// the same virtual L2 has joined on 127.0.0.1 (a [Cluster]'s hub).
//
// Datagrams, not qemu's TCP mode (listen=/connect=): over a TCP stream the
// guests' small frames wait on Nagle's algorithm and delayed ACKs of the
// host's TCP, which put tens of milliseconds under every round trip
// (measured here: perftest's 8-byte write latency between the guests was
// 23.3 ms over TCP and 0.38 ms over UDP, same machine, same boot setup).
type NIC struct {
	// MAC is the card's Ethernet address, e.g. "52:54:00:00:02:01".
	MAC string
	// Port is this qemu's UDP port on 127.0.0.1; PeerPort the other's.
	Port, PeerPort int
	// Group, when set, is the multicast group and UDP port of the L2
	// ("239.1.2.3:40000"); Port and PeerPort are then unused.
	Group string
}

// VM boots a qemu guest with Soft-RoCE and runs one Job in it.
type VM struct {
	// Qemu is the qemu-system-x86_64 binary.
	Qemu string
	// Kernel is the guest kernel image (vmlinuz).
	Kernel string
	// Modules is the kernel's module tree, /lib/modules/<release>.
	Modules string
	// LoadModules are the modules the guest loads, in order; nil means
	// [GuestModules]. Each must be an uncompressed .ko file under Modules.
	LoadModules []string
	// ModuleFiles are kernel module files (host paths of plain .ko
	// files) the guest loads after LoadModules, in order: modules the
	// kernel's package does not ship, such as a siw.ko that ci/siw.sh
	// builds. Each must have been built for the guest kernel: its
	// vermagic must name the release of Modules ([ReadModuleInfo]).
	ModuleFiles []string
	// Busybox is a statically linked busybox for the initramfs.
	Busybox string
	// Agent is a binary whose main calls [MaybeGuest] first: the guest
	// side of the runner (rxevm itself). It runs inside the host root, so
	// it may be linked dynamically.
	Agent string
	// Share is a host directory mounted read-write in the guest at the same
	// path (results, test binaries); the rest of the host is read-only.
	// Empty means none.
	Share string
	// MemoryMiB and CPUs size the guest; zero means 2048 MiB and 2 vCPUs.
	MemoryMiB, CPUs int
	// Timeout bounds the whole run, boot included. The guest is killed when
	// it is exceeded. Zero means 30 minutes.
	Timeout time.Duration
	// KVM uses hardware virtualisation (when /dev/kvm is usable).
	KVM bool
	// Console, when set, receives the guest's console (kernel messages and
	// the init script's progress) as it is printed.
	Console io.Writer
	// NIC, when set, gives the guest a virtio network card (see [Pair]).
	// The job's Net must then name its MAC, and LoadModules must include
	// [NetModules].
	NIC *NIC
}

// NewVM returns a VM for this host: the newest kernel under /boot whose
// modules include rdma_rxe, busybox from PATH (or /bin/busybox), this
// process's binary as the agent, KVM when /dev/kvm can be opened.
func NewVM() (*VM, error) {
	kernel, modules, err := FindKernel("/boot", HostRoot.Lib)
	if err != nil {
		return nil, err
	}
	vm := &VM{Kernel: kernel, Modules: modules, MemoryMiB: defaultMemoryMiB, CPUs: defaultCPUs, Timeout: defaultTimeout}
	if vm.Qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, fmt.Errorf("loopback: qemu-system-x86_64 not found (apt-get install qemu-system-x86): %w", err)
	}
	if vm.Busybox, err = exec.LookPath("busybox"); err != nil {
		return nil, fmt.Errorf("loopback: busybox not found (apt-get install busybox-static): %w", err)
	}
	if err := checkStatic(vm.Busybox); err != nil {
		return nil, err
	}
	if vm.Agent, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("loopback: locating the agent binary: %w", err)
	}
	vm.KVM = kvmUsable("/dev/kvm", "/proc/cpuinfo")
	return vm, nil
}

// Defaults for the zero values of VM's fields.
const (
	defaultMemoryMiB = 2048
	defaultCPUs      = 2
	defaultTimeout   = 30 * time.Minute
)

// checkStatic fails when the ELF binary at p needs a dynamic loader: the
// initramfs has no libraries, so a dynamic busybox cannot run as /init.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("loopback: busybox: %w", err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("loopback: %s is linked dynamically; the guest needs a static busybox (apt-get install busybox-static)", p)
		}
	}
	return nil
}

// kvmUsable tells whether hardware virtualisation works: /dev/kvm opens
// and the CPU advertises vmx or svm. Some sandboxes (Firecracker guests
// among them) have a /dev/kvm that opens but no virtualisation extensions,
// where a KVM guest never runs; they get TCG.
func kvmUsable(dev, cpuinfo string) bool {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	b, err := os.ReadFile(cpuinfo)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "flags") {
			for _, f := range strings.Fields(l) {
				if f == "vmx" || f == "svm" {
					return true
				}
			}
			return false
		}
	}
	return false
}

// FindKernel picks the newest vmlinuz-<release> in boot whose module tree
// lib/<release> contains rdma_rxe. Releases compare as versions: runs of
// digits by their numeric value, so 6.1.0-10 is newer than 6.1.0-9.
func FindKernel(boot, lib string) (kernel, modules string, err error) {
	images, _ := filepath.Glob(filepath.Join(boot, "vmlinuz-*"))
	slices.SortFunc(images, func(a, b string) int { return compareVersions(b, a) })
	var tried []string
	for _, img := range images {
		rel := strings.TrimPrefix(filepath.Base(img), "vmlinuz-")
		dir := filepath.Join(lib, rel)
		if _, err := findModule(dir, "rdma_rxe"); err == nil {
			return img, dir, nil
		}
		tried = append(tried, rel)
	}
	if len(tried) == 0 {
		return "", "", fmt.Errorf("loopback: no kernel image %s/vmlinuz-* (apt-get install linux-image-amd64)", boot)
	}
	return "", "", fmt.Errorf("loopback: no kernel in %s ships rdma_rxe (tried %s)", boot, strings.Join(tried, ", "))
}

// versionChunk is a run of digits or a run of anything else.
var versionChunk = regexp.MustCompile(`[0-9]+|[^0-9]+`)

// compareVersions orders a and b like strings, except that runs of digits
// compare by their numeric value.
func compareVersions(a, b string) int {
	ca, cb := versionChunk.FindAllString(a, -1), versionChunk.FindAllString(b, -1)
	for i := 0; i < len(ca) && i < len(cb); i++ {
		x, y := ca[i], cb[i]
		if isDigit(x[0]) && isDigit(y[0]) {
			x, y = strings.TrimLeft(x, "0"), strings.TrimLeft(y, "0")
			if c := cmp.Compare(len(x), len(y)); c != 0 {
				return c
			}
		}
		if c := strings.Compare(x, y); c != 0 {
			return c
		}
	}
	return cmp.Compare(len(ca), len(cb))
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// modules returns the modules the guest loads, in order.
func (vm *VM) modules() []string {
	if vm.LoadModules != nil {
		return vm.LoadModules
	}
	return GuestModules
}

// Initramfs builds the guest's initramfs for job.
func (vm *VM) Initramfs(job Job) ([]byte, error) {
	a := newArchive()
	if err := a.addFile("bin/busybox", vm.Busybox, 0o755); err != nil {
		return nil, err
	}
	a.symlink("bin/sh", "busybox")
	if err := a.addFile("agent", vm.Agent, 0o755); err != nil {
		return nil, err
	}
	var list bytes.Buffer
	for _, m := range vm.modules() {
		p, err := findModule(vm.Modules, m)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(p, ".ko") {
			return nil, fmt.Errorf("loopback: module %s is compressed (%s); busybox insmod needs plain .ko files", m, p)
		}
		if err := a.addFile("modules/"+m+".ko", p, 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintln(&list, m)
	}
	loaded := slices.Clone(vm.modules())
	for _, p := range vm.ModuleFiles {
		info, err := vm.CheckModuleFile(p)
		if err != nil {
			return nil, err
		}
		if slices.Contains(loaded, info.Name) {
			return nil, fmt.Errorf("loopback: module file %s: the guest loads a module %s already", p, info.Name)
		}
		loaded = append(loaded, info.Name)
		if err := a.addFile("modules/"+info.Name+".ko", p, 0o644); err != nil {
			return nil, err
		}
		fmt.Fprintln(&list, info.Name)
	}
	if _, err := linkModule(job.linkType()); err != nil {
		return nil, err
	}
	a.add("modules.list", 0o644, list.Bytes())
	j, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("loopback: encoding the job: %w", err)
	}
	a.add("job.json", 0o644, j)
	a.add("share.path", 0o644, []byte(vm.Share))
	if job.Hostname != "" {
		a.add("hostname", 0o644, []byte(job.Hostname))
	}
	if job.Net != nil && len(job.Net.Hosts) > 0 {
		a.add("hosts", 0o644, []byte(hostsFile(job.Net.Hosts)))
	}
	for _, d := range []string{"proc", "sys", "dev", "tmp", "newroot"} {
		a.mkdirAll(d)
	}
	a.add("init", 0o755, []byte(initScript))
	var buf bytes.Buffer
	if err := a.writeTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ModuleInfo is what a kernel module file says of itself in its .modinfo
// section (what modinfo prints).
type ModuleInfo struct {
	// Name is the module's name ("siw").
	Name string
	// Vermagic is the kernel it was built for: its release, then
	// flags ("6.1.0-57-amd64 SMP preempt mod_unload modversions").
	Vermagic string
	// Depends are the modules it needs loaded first.
	Depends []string
}

// Release is the kernel release the module was built for: the first word
// of Vermagic.
func (m ModuleInfo) Release() string {
	if f := strings.Fields(m.Vermagic); len(f) > 0 {
		return f[0]
	}
	return ""
}

// ReadModuleInfo reads the .modinfo section of the kernel module file p
// (a plain ELF .ko, not a compressed one).
func ReadModuleInfo(p string) (ModuleInfo, error) {
	f, err := elf.Open(p)
	if err != nil {
		return ModuleInfo{}, fmt.Errorf("loopback: module file %s is not a plain .ko (ELF) file: %w", p, err)
	}
	defer f.Close()
	sec := f.Section(".modinfo")
	if sec == nil {
		return ModuleInfo{}, fmt.Errorf("loopback: module file %s has no .modinfo section: not a kernel module", p)
	}
	b, err := sec.Data()
	if err != nil {
		return ModuleInfo{}, fmt.Errorf("loopback: module file %s: reading .modinfo: %w", p, err)
	}
	return parseModinfo(p, b)
}

// parseModinfo reads the NUL-separated key=value strings of a .modinfo
// section; name and vermagic must be there.
func parseModinfo(p string, b []byte) (ModuleInfo, error) {
	var m ModuleInfo
	for _, kv := range bytes.Split(b, []byte{0}) {
		k, v, ok := strings.Cut(string(kv), "=")
		if !ok {
			continue
		}
		switch k {
		case "name":
			m.Name = v
		case "vermagic":
			m.Vermagic = v
		case "depends":
			for _, d := range strings.Split(v, ",") {
				if d != "" {
					m.Depends = append(m.Depends, d)
				}
			}
		}
	}
	switch {
	case m.Name == "":
		return m, fmt.Errorf("loopback: module file %s: .modinfo has no name", p)
	case strings.ContainsAny(m.Name, "/ \t\n") || m.Name == "." || m.Name == "..":
		return m, fmt.Errorf("loopback: module file %s: .modinfo names the module %q, which is no module name", p, m.Name)
	case m.Release() == "":
		return m, fmt.Errorf("loopback: module file %s: .modinfo has no vermagic", p)
	}
	return m, nil
}

// KernelRelease is the guest kernel's release: the name of its module
// tree (Modules), e.g. "6.1.0-57-amd64".
func (vm *VM) KernelRelease() string { return filepath.Base(vm.Modules) }

// CheckModuleFile reads the module file p and checks that the guest can
// load it after its modules: built for the guest kernel (vermagic names
// KernelRelease), and each module it depends on loaded before it
// (LoadModules, or an earlier ModuleFiles entry). [VM.Initramfs] checks
// every ModuleFiles entry this way; call it to check a file before
// anything is made.
func (vm *VM) CheckModuleFile(p string) (ModuleInfo, error) {
	info, err := ReadModuleInfo(p)
	if err != nil {
		return info, err
	}
	if rel := vm.KernelRelease(); info.Release() != rel {
		return info, fmt.Errorf("loopback: module file %s was built for kernel %s (vermagic %q), but the guest runs %s: rebuild it against that kernel's headers (ci/siw.sh build)", p, info.Release(), info.Vermagic, rel)
	}
	before := slices.Clone(vm.modules())
	for _, q := range vm.ModuleFiles {
		if q == p {
			break
		}
		if i, err := ReadModuleInfo(q); err == nil {
			before = append(before, i.Name)
		}
	}
	for _, d := range info.Depends {
		if !slices.Contains(before, d) {
			return info, fmt.Errorf("loopback: module file %s (%s) depends on %s, which the guest does not load before it (its modules: %s)", p, info.Name, d, strings.Join(before, ", "))
		}
	}
	return info, nil
}

// hostsFile is the guest's /etc/hosts: localhost, then lines.
func hostsFile(lines []string) string {
	return "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" + strings.Join(lines, "\n") + "\n"
}

// Markers the guest prints on its console.
const (
	markerExit  = "RDMABENCH-EXIT="
	markerFatal = "RDMABENCH-FATAL: "
)

// initScript is the guest's /init (busybox sh). It loads the modules, mounts
// the host root read-only, /tmp as tmpfs and the share read-write, then
// hands over to the agent inside the host root. Any failure prints a
// FATAL marker and powers the guest off; so does an agent that returns.
const initScript = `#!/bin/sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fatal() { echo "` + markerFatal + `$*"; sync; reboot -f; sleep 10; }
echo "rdmabench guest: loading modules"
for m in $(cat /modules.list); do
  insmod /modules/$m.ko || fatal "kernel module $m failed to load (insmod /modules/$m.ko)"
done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /newroot || fatal "cannot mount the host root over 9p"
mount -t tmpfs -o mode=1777 tmpfs /newroot/tmp || fatal "cannot mount tmpfs on /tmp"
mount -t proc proc /newroot/proc || fatal "cannot mount /proc"
mount -t sysfs sys /newroot/sys || fatal "cannot mount /sys"
mount -t devtmpfs dev /newroot/dev || fatal "cannot mount /dev"
share=$(cat /share.path)
if [ -n "$share" ]; then
  mkdir -p "/newroot$share" 2>/dev/null # a share under /tmp is on the new tmpfs
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "/newroot$share" || fatal "cannot mount the share $share read-write"
fi
if [ -f /hostname ]; then
  hostname "$(cat /hostname)" || fatal "cannot set the host name $(cat /hostname)"
fi
if [ -f /hosts ]; then
  mount --bind /hosts /newroot/etc/hosts || fatal "cannot mount the guest's /etc/hosts"
fi
cp /agent /newroot/tmp/rdmabench-agent && cp /job.json /newroot/tmp/rdmabench-job.json || fatal "cannot copy the agent"
echo "rdmabench guest: starting the agent"
chroot /newroot /tmp/rdmabench-agent ` + GuestArg + ` /tmp/rdmabench-job.json
fatal "the agent returned without reporting an exit status"
`

// QemuArgs returns qemu's command line. consoleFD and outputFD are file
// descriptors in qemu's process for the guest console (ttyS0) and the
// command's output (ttyS1).
func (vm *VM) QemuArgs(initrd string, consoleFD, outputFD int) []string {
	accel, cpu := "tcg,thread=multi", "max"
	if vm.KVM {
		accel, cpu = "kvm", "host"
	}
	mem, cpus := vm.MemoryMiB, vm.CPUs
	if mem <= 0 {
		mem = defaultMemoryMiB
	}
	if cpus <= 0 {
		cpus = defaultCPUs
	}
	args := []string{
		"-accel", accel, "-cpu", cpu,
		"-m", strconv.Itoa(mem), "-smp", strconv.Itoa(cpus),
		// Named vCPU threads ("CPU n/TCG"): Run pins them (pinVCPUs).
		"-name", "rxevm,debug-threads=on",
		"-nodefaults", "-display", "none", "-no-reboot", "-nic", "none",
		"-kernel", vm.Kernel, "-initrd", initrd,
		// Keep the command line short: a long one panics the kernel
		// ("Too many boot init vars"); the job travels in the initramfs.
		"-append", kernelCmdline,
		"-serial", fmt.Sprintf("file:/proc/self/fd/%d", consoleFD),
		"-serial", fmt.Sprintf("file:/proc/self/fd/%d", outputFD),
		"-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
	}
	if n := vm.NIC; n != nil {
		netdev := fmt.Sprintf("socket,id=n0,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d", n.PeerPort, n.Port)
		if n.Group != "" {
			netdev = "socket,id=n0,mcast=" + n.Group + ",localaddr=127.0.0.1"
		}
		args = append(args, "-netdev", netdev, "-device", "virtio-net-pci,netdev=n0,mac="+n.MAC)
	}
	if vm.Share != "" {
		// qemu's option syntax escapes a comma in a value by doubling it.
		share := strings.ReplaceAll(vm.Share, ",", ",,")
		// mapped-xattr: the guest's owners, modes and special files are
		// kept in extended attributes; on the host every file it makes is
		// a plain file or directory owned by qemu's user, mode 0600/0700,
		// so no setuid file or device node can be planted through it.
		args = append(args,
			"-fsdev", "local,id=share,path="+share+",security_model=mapped-xattr,multidevs=remap",
			"-device", "virtio-9p-pci,fsdev=share,mount_tag=share")
	}
	return args
}

// kernelCmdline is the guest kernel's command line. tsc=reliable: under
// TCG the kernel finds the vCPUs' TSCs "unsynchronized" and falls back to
// the emulated HPET, which turns every clock_gettime into a trap into
// qemu (tens of µs) and would inflate every latency sample; TCG derives
// all vCPUs' TSCs from one host clock, so they are in fact synchronized.
const kernelCmdline = "console=ttyS0 quiet panic=-1 tsc=reliable"

// Run boots the guest, runs job in it with its output (stdout and stderr
// together) streamed to out, and returns the command's exit status (128+N
// when a signal N killed it). The error is non-nil when the guest failed
// rather than the command: a module that did not load, a kernel panic, a
// device that did not come up, a deadline exceeded, qemu failing to start,
// or out failing to take the output. A nil out discards the output. qemu
// never outlives Run.
func (vm *VM) Run(ctx context.Context, job Job, out io.Writer) (int, error) {
	if out == nil {
		out = io.Discard
	}
	if vm.Share != "" {
		if err := checkXattr(vm.Share); err != nil {
			return -1, err
		}
	}
	CleanTemp(os.TempDir(), time.Now())
	tmp, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return -1, fmt.Errorf("loopback: %w", err)
	}
	defer os.RemoveAll(tmp)
	lock, err := lockDir(tmp)
	if err != nil {
		return -1, err
	}
	defer lock.Close()
	img, err := vm.Initramfs(job)
	if err != nil {
		return -1, err
	}
	initrd := filepath.Join(tmp, "initrd.cpio")
	if err := os.WriteFile(initrd, img, 0o600); err != nil {
		return -1, fmt.Errorf("loopback: %w", err)
	}

	consoleR, consoleW, err := os.Pipe()
	if err != nil {
		return -1, fmt.Errorf("loopback: %w", err)
	}
	defer consoleR.Close()
	outR, outW, err := os.Pipe()
	if err != nil {
		consoleW.Close()
		return -1, fmt.Errorf("loopback: %w", err)
	}
	defer outR.Close()

	timeout := vm.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limit, _ := ctx.Deadline() // the caller's deadline when it is sooner
	cmd := exec.CommandContext(ctx, vm.Qemu, vm.QemuArgs(initrd, 3, 4)...)
	cmd.ExtraFiles = []*os.File{consoleW, outW}
	// qemu dies with this process (childAttr): the thread that starts it
	// must live until it is waited for.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cmd.SysProcAttr = childAttr()
	qemuOut := &headWriter{max: maxQemuOut}
	cmd.Stdout, cmd.Stderr = qemuOut, qemuOut
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	// qemu holds its own copies; ours must go so that the readers see EOF.
	consoleW.Close()
	outW.Close()
	if err != nil {
		return -1, fmt.Errorf("loopback: starting qemu: %w", err)
	}
	// A single guest's vCPUs get a host CPU each; the guests of a pair
	// or a cluster share the host's CPUs, and none is pinned.
	if vm.NIC == nil {
		cpus := vm.CPUs
		if cpus <= 0 {
			cpus = defaultCPUs
		}
		go func() {
			msg := pinVCPUs(ctx, cmd.Process.Pid, cpus)
			if vm.Console != nil {
				fmt.Fprintf(vm.Console, "rxevm: %s\n", msg)
			}
		}()
	}

	// Both readers drain their pipe to the end whatever happens to the
	// lines or to out: a reader that stopped would leave qemu blocked on a
	// full pipe until the deadline.
	var wg sync.WaitGroup
	console := &consoleLog{}
	var outErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(consoleR)
		sc.Buffer(make([]byte, 64<<10), maxConsoleLine)
		sc.Split(splitLines)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			console.add(line)
			if vm.Console != nil {
				fmt.Fprintln(vm.Console, line)
			}
		}
		if err := sc.Err(); err != nil {
			console.add(fmt.Sprintf("[rdmabench: console unreadable from here on: %v]", err))
		}
		io.Copy(io.Discard, consoleR)
	}()
	go func() {
		defer wg.Done()
		if _, err := io.Copy(out, outR); err != nil {
			outErr = err
			io.Copy(io.Discard, outR)
		}
	}()
	waitErr := cmd.Wait()
	// The pipes reach EOF when qemu exits, unless a process it started
	// still holds them: then stop reading after a grace period.
	readers := make(chan struct{})
	go func() { wg.Wait(); close(readers) }()
	select {
	case <-readers:
	case <-time.After(cmd.WaitDelay):
		consoleR.Close()
		outR.Close()
		<-readers
	}
	code, err := console.verdict(ctx.Err(), waitErr, time.Since(start), limit.Sub(start), qemuOut.String())
	if err == nil && outErr != nil {
		return code, fmt.Errorf("loopback: passing on the guest's output: %w", outErr)
	}
	return code, err
}

// maxQemuOut bounds what is kept of qemu's own output (its errors; the
// guest speaks on the console and output pipes).
const maxQemuOut = 64 << 10

// headWriter keeps the first max bytes written to it and counts the rest.
type headWriter struct {
	mu      sync.Mutex
	max     int
	buf     []byte
	dropped int
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := min(len(p), w.max-len(w.buf))
	w.buf = append(w.buf, p[:n]...)
	w.dropped += len(p) - n
	return len(p), nil
}

func (w *headWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dropped > 0 {
		return fmt.Sprintf("%s[… %d more bytes]", w.buf, w.dropped)
	}
	return string(w.buf)
}

// tempPrefix names the runs' temporary directories (under os.TempDir);
// lockName is the file in one that its run holds an exclusive flock on
// while it lives.
const (
	tempPrefix = "rdmabench-vm-"
	lockName   = "lock"
)

// CleanTemp removes what runs that died left in tmp: rdmabench-vm-*
// directories whose run no longer holds their lock (and is more than a
// minute old, so that a run between creating and locking its directory
// is safe), and those of older versions without a lock file once they
// are older than twice the default deadline. It returns what it removed.
func CleanTemp(tmp string, now time.Time) []string {
	dirs, _ := filepath.Glob(filepath.Join(tmp, tempPrefix+"*"))
	var removed []string
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || now.Sub(fi.ModTime()) < time.Minute {
			continue
		}
		_, err = os.Stat(filepath.Join(d, lockName))
		if unlocked(d) || (errors.Is(err, fs.ErrNotExist) && now.Sub(fi.ModTime()) > 2*defaultTimeout) {
			if os.RemoveAll(d) == nil {
				removed = append(removed, d)
			}
		}
	}
	return removed
}

// maxConsoleLine is where a console line without a newline is cut.
const maxConsoleLine = 1 << 20

// splitLines is [bufio.ScanLines], except that a line longer than
// maxConsoleLine comes out in pieces instead of stopping the scanner.
func splitLines(data []byte, atEOF bool) (int, []byte, error) {
	advance, token, err := bufio.ScanLines(data, atEOF)
	if advance == 0 && err == nil && len(data) >= maxConsoleLine {
		return maxConsoleLine, data[:maxConsoleLine], nil
	}
	return advance, token, err
}

// consoleLog keeps the guest console's lines.
type consoleLog struct {
	mu sync.Mutex
	// What verdict needs, kept as the lines arrive so that a console
	// that never stops talking costs bounded memory: the first FATAL
	// marker line, the first kernel panic line, the last exit marker
	// line, and the last consoleTail lines.
	fatal, panicked, exit string
	tail                  []string
}

// consoleTail is how many of the last console lines an error shows, and
// maxTailLine how much of each: a console that prints megabyte lines
// costs at most 2×consoleTail×maxTailLine for the tail.
const (
	consoleTail = 25
	maxTailLine = 4 << 10
)

func (c *consoleLog) add(l string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fatal == "" && strings.Contains(l, markerFatal) {
		c.fatal = l
	}
	if c.panicked == "" && panicRE.MatchString(l) {
		c.panicked = l
	}
	if exitRE.MatchString(l) {
		c.exit = l
	}
	if len(c.tail) == 2*consoleTail { // trimmed in halves: amortised O(1)
		c.tail = append(c.tail[:0], c.tail[consoleTail:]...)
	}
	if len(l) > maxTailLine {
		l = fmt.Sprintf("%s[… %d more bytes]", l[:maxTailLine], len(l)-maxTailLine)
	}
	c.tail = append(c.tail, l)
}

var (
	panicRE = regexp.MustCompile(`Kernel panic - not syncing.*`)
	exitRE  = regexp.MustCompile(markerExit + `(-?[0-9]+)`)
)

// verdict turns what the console showed into an exit status or an error.
// ctxErr is the run's context error, waitErr qemu's exit, took how long
// qemu ran and limit its deadline, both from its start.
//
// In order: a FATAL marker or a kernel panic fails the run; then an exit
// marker gives the command's status (even when qemu was killed afterwards,
// e.g. hung on the way down); then the deadline or the caller's
// cancellation; anything else is a guest that stopped without a word.
func (c *consoleLog) verdict(ctxErr, waitErr error, took, limit time.Duration, qemuOut string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := func() string {
		from := max(0, len(c.tail)-consoleTail)
		return "\n--- last guest console lines ---\n" + strings.Join(c.tail[from:], "\n")
	}
	if l := c.fatal; l != "" {
		i := strings.Index(l, markerFatal)
		return -1, fmt.Errorf("loopback: guest failed: %s%s", l[i+len(markerFatal):], tail())
	}
	if c.panicked != "" {
		return -1, fmt.Errorf("loopback: guest kernel panic: %s%s", panicRE.FindString(c.panicked), tail())
	}
	if m := exitRE.FindStringSubmatch(c.exit); m != nil {
		code, err := strconv.Atoi(m[1])
		if err != nil {
			return -1, fmt.Errorf("loopback: malformed exit marker %q: %w", c.exit, err)
		}
		return code, nil
	}
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return -1, fmt.Errorf("loopback: the guest was killed after %s: it exceeded its deadline of %s (the command or the guest hung)%s", took.Round(time.Second), limit.Round(time.Second), tail())
	}
	if ctxErr != nil {
		return -1, fmt.Errorf("loopback: the guest was stopped: %w", ctxErr)
	}
	msg := strings.TrimSpace(qemuOut)
	if waitErr != nil {
		msg = waitErr.Error() + ": " + msg
	}
	return -1, fmt.Errorf("loopback: the guest stopped without reporting an exit status (qemu: %s)%s", msg, tail())
}
