package loopback

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// GuestModules are the kernel modules the guest loads, in this order: virtio
// PCI and 9p for the shared file systems, crc32_generic (rxe computes its
// ICRC with the crc32 crypto transform; without it `rdma link add` fails
// with ENOENT), the RDMA core, rxe, and veth for the netdev under rxe.
var GuestModules = []string{
	"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev", "virtio_pci",
	"netfs", "fscache", "9pnet", "9pnet_virtio", "9p",
	"crc32_generic", "ib_core", "ib_uverbs", "udp_tunnel", "ip6_udp_tunnel", "rdma_rxe", "veth",
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
	// Device is the name of the rxe device to create (default "rxe0").
	Device string `json:"device"`
	// ActiveTimeout bounds the wait for the device's port to become ACTIVE.
	ActiveTimeout time.Duration `json:"active_timeout"`
}

// VM boots a qemu guest with Soft-RoCE and runs one Job in it.
type VM struct {
	// Qemu is the qemu-system-x86_64 binary.
	Qemu string
	// Kernel is the guest kernel image (vmlinuz).
	Kernel string
	// Modules is the kernel's module tree, /lib/modules/<release>.
	Modules string
	// Busybox is a statically linked busybox for the initramfs.
	Busybox string
	// Agent is a binary whose main calls [GuestMain] when its first
	// argument is [GuestArg]: the guest side of the runner (rxevm itself).
	Agent string
	// Share is a host directory mounted read-write in the guest at the same
	// path (results, test binaries); the rest of the host is read-only.
	Share string
	// MemoryMiB and CPUs size the guest.
	MemoryMiB, CPUs int
	// Timeout bounds the whole run, boot included. The guest is killed when
	// it is exceeded.
	Timeout time.Duration
	// KVM uses hardware virtualisation (when /dev/kvm is usable).
	KVM bool
	// Console, when set, receives the guest's console (kernel messages and
	// the init script's progress) as it is printed.
	Console io.Writer
}

// NewVM returns a VM for this host: the newest kernel under /boot whose
// modules include rdma_rxe, busybox from PATH (or /bin/busybox), this
// process's binary as the agent, KVM when /dev/kvm can be opened.
func NewVM() (*VM, error) {
	kernel, modules, err := FindKernel("/boot", HostRoot.Lib)
	if err != nil {
		return nil, err
	}
	vm := &VM{Kernel: kernel, Modules: modules, MemoryMiB: 2048, CPUs: 2, Timeout: 30 * time.Minute}
	if vm.Qemu, err = exec.LookPath("qemu-system-x86_64"); err != nil {
		return nil, fmt.Errorf("loopback: qemu-system-x86_64 not found (apt-get install qemu-system-x86): %w", err)
	}
	if vm.Busybox, err = exec.LookPath("busybox"); err != nil {
		return nil, fmt.Errorf("loopback: busybox not found (apt-get install busybox-static): %w", err)
	}
	if vm.Agent, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("loopback: locating the agent binary: %w", err)
	}
	vm.KVM = kvmUsable("/dev/kvm", "/proc/cpuinfo")
	return vm, nil
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
// lib/<release> contains rdma_rxe.
func FindKernel(boot, lib string) (kernel, modules string, err error) {
	images, _ := filepath.Glob(filepath.Join(boot, "vmlinuz-*"))
	sort.Sort(sort.Reverse(sort.StringSlice(images)))
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
	for _, m := range GuestModules {
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
	a.add("modules.list", 0o644, list.Bytes())
	j, err := json.Marshal(job)
	if err != nil {
		return nil, fmt.Errorf("loopback: encoding the job: %w", err)
	}
	a.add("job.json", 0o644, j)
	a.add("share.path", 0o644, []byte(vm.Share))
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
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 share "/newroot$share" || fatal "cannot mount the share $share read-write"
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
	args := []string{
		"-accel", accel, "-cpu", cpu,
		"-m", strconv.Itoa(vm.MemoryMiB), "-smp", strconv.Itoa(vm.CPUs),
		"-nodefaults", "-display", "none", "-no-reboot", "-nic", "none",
		"-kernel", vm.Kernel, "-initrd", initrd,
		// Keep the command line short: a long one panics the kernel
		// ("Too many boot init vars"); the job travels in the initramfs.
		"-append", "console=ttyS0 quiet panic=-1",
		"-serial", fmt.Sprintf("file:/proc/self/fd/%d", consoleFD),
		"-serial", fmt.Sprintf("file:/proc/self/fd/%d", outputFD),
		"-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
		"-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
	}
	if vm.Share != "" {
		args = append(args,
			"-fsdev", "local,id=share,path="+vm.Share+",security_model=none,multidevs=remap",
			"-device", "virtio-9p-pci,fsdev=share,mount_tag=share")
	}
	return args
}

// Run boots the guest, runs job in it with its output (stdout and stderr
// together) streamed to out, and returns the command's exit status. The
// error is non-nil when the guest failed rather than the command: a module
// that did not load, a kernel panic, a device that did not come up, a
// deadline exceeded, qemu failing to start.
func (vm *VM) Run(ctx context.Context, job Job, out io.Writer) (int, error) {
	tmp, err := os.MkdirTemp("", "rdmabench-vm-")
	if err != nil {
		return -1, fmt.Errorf("loopback: %w", err)
	}
	defer os.RemoveAll(tmp)
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
	outR, outW, err := os.Pipe()
	if err != nil {
		return -1, fmt.Errorf("loopback: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, vm.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, vm.Qemu, vm.QemuArgs(initrd, 3, 4)...)
	cmd.ExtraFiles = []*os.File{consoleW, outW}
	var qemuOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &qemuOut, &qemuOut
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		consoleR.Close()
		outR.Close()
		return -1, fmt.Errorf("loopback: starting qemu: %w", err)
	}
	consoleW.Close()
	outW.Close()

	var wg sync.WaitGroup
	console := &consoleLog{}
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(consoleR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			console.add(line)
			if vm.Console != nil {
				fmt.Fprintln(vm.Console, line)
			}
		}
		consoleR.Close()
	}()
	go func() {
		defer wg.Done()
		io.Copy(crStripper{out}, outR)
		outR.Close()
	}()
	waitErr := cmd.Wait()
	wg.Wait()
	return console.verdict(ctx.Err(), waitErr, time.Since(start), vm.Timeout, qemuOut.String())
}

// crStripper drops the carriage returns a serial line adds.
type crStripper struct{ w io.Writer }

func (c crStripper) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, '\r') < 0 {
		return c.w.Write(p)
	}
	_, err := c.w.Write(bytes.ReplaceAll(p, []byte("\r\n"), []byte("\n")))
	return len(p), err
}

// consoleLog keeps the guest console's lines.
type consoleLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *consoleLog) add(l string) {
	c.mu.Lock()
	c.lines = append(c.lines, l)
	c.mu.Unlock()
}

var panicRE = regexp.MustCompile(`Kernel panic - not syncing.*`)

// verdict turns what the console showed into an exit status or an error.
func (c *consoleLog) verdict(ctxErr, waitErr error, took, limit time.Duration, qemuOut string) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tail := func() string {
		n := len(c.lines)
		from := max(0, n-25)
		return "\n--- last guest console lines ---\n" + strings.Join(c.lines[from:], "\n")
	}
	for _, l := range c.lines {
		if i := strings.Index(l, markerFatal); i >= 0 {
			return -1, fmt.Errorf("loopback: guest failed: %s%s", l[i+len(markerFatal):], tail())
		}
	}
	for _, l := range c.lines {
		if m := panicRE.FindString(l); m != "" {
			return -1, fmt.Errorf("loopback: guest kernel panic: %s%s", m, tail())
		}
	}
	if errors.Is(ctxErr, context.DeadlineExceeded) {
		return -1, fmt.Errorf("loopback: the guest was killed after %s: it exceeded its deadline of %s (the command or the guest hung)%s", took.Round(time.Second), limit, tail())
	}
	if ctxErr != nil {
		return -1, fmt.Errorf("loopback: the guest was stopped: %w", ctxErr)
	}
	for i := len(c.lines) - 1; i >= 0; i-- {
		if j := strings.Index(c.lines[i], markerExit); j >= 0 {
			code, err := strconv.Atoi(strings.TrimSpace(c.lines[i][j+len(markerExit):]))
			if err != nil {
				return -1, fmt.Errorf("loopback: malformed exit marker %q", c.lines[i])
			}
			return code, nil
		}
	}
	msg := strings.TrimSpace(qemuOut)
	if waitErr != nil {
		msg = waitErr.Error() + ": " + msg
	}
	return -1, fmt.Errorf("loopback: the guest stopped without reporting an exit status (qemu: %s)%s", msg, tail())
}
