package loopback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeVM returns a VM whose busybox and agent are small files and whose
// module tree holds GuestModules as empty .ko files. Its Qemu does not
// exist.
func fakeVM(t *testing.T) *VM {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"busybox": "fake busybox", "agent": "fake agent", "vmlinuz": "fake kernel"}
	for i, m := range append(slices.Clone(GuestModules), NetModules...) {
		files[fmt.Sprintf("modules/kernel/dir%d/%s.ko", i%3, m)] = ""
	}
	writeTree(t, dir, files)
	share := filepath.Join(dir, "results")
	require.NoError(t, os.Mkdir(share, 0o755))
	return &VM{
		Qemu:    filepath.Join(dir, "no-qemu"),
		Kernel:  filepath.Join(dir, "vmlinuz"),
		Modules: filepath.Join(dir, "modules"),
		Busybox: filepath.Join(dir, "busybox"),
		Agent:   filepath.Join(dir, "agent"),
		Share:   share,
		Timeout: time.Minute,
	}
}

// initramfsEntries builds vm's initramfs for job and parses it back.
func initramfsEntries(t *testing.T, vm *VM, job Job) map[string]cpioEntry {
	t.Helper()
	img, err := vm.Initramfs(job)
	require.NoError(t, err)
	return entryMap(t, readNewc(t, img))
}

func TestInitramfs(t *testing.T) {
	vm := fakeVM(t)
	job := Job{
		Args:          []string{"/var/tmp/verbs.test", "-test.v", "-test.run", "Pingpong|Write"},
		Dir:           "/work/main/verbs",
		Env:           []string{"PATH=/usr/bin:/bin", "RDMA_IN_VM=1"},
		Device:        "rxe7",
		ActiveTimeout: 5 * time.Second,
		Net:           &GuestNet{MAC: "52:54:00:00:02:01", Addr: "192.0.2.1/24"},
	}
	e := initramfsEntries(t, vm, job)

	files := []struct {
		name    string
		mode    uint32
		content string
	}{
		{"init", modeFile | 0o755, initScript},
		{"bin/busybox", modeFile | 0o755, "fake busybox"},
		{"bin/sh", modeSymlink | 0o777, "busybox"},
		{"agent", modeFile | 0o755, "fake agent"},
		{"modules.list", modeFile | 0o644, strings.Join(GuestModules, "\n") + "\n"},
		{"share.path", modeFile | 0o644, vm.Share},
	}
	for _, f := range files {
		require.Contains(t, e, f.name)
		assert.Equal(t, fmt.Sprintf("%o", f.mode), fmt.Sprintf("%o", e[f.name].mode), "mode of %s", f.name)
		assert.Equal(t, f.content, string(e[f.name].data), "content of %s", f.name)
	}
	for _, d := range []string{"bin", "modules", "proc", "sys", "dev", "tmp", "newroot"} {
		if assert.Contains(t, e, d) {
			assert.Equal(t, uint32(modeDir|0o755), e[d].mode, "mode of %s", d)
		}
	}
	for _, m := range GuestModules {
		assert.Contains(t, e, "modules/"+m+".ko")
	}

	require.Contains(t, e, "job.json")
	var got Job
	require.NoError(t, json.Unmarshal(e["job.json"].data, &got))
	assert.Equal(t, job, got, "job.json round trip")

	// The init script loads the list in order, fails loudly, and hands
	// over to the agent.
	assert.Contains(t, initScript, "for m in $(cat /modules.list)")
	assert.Contains(t, initScript, `insmod /modules/$m.ko || fatal "kernel module $m failed to load`)
	assert.Contains(t, initScript, "chroot /newroot /tmp/rdmabench-agent "+GuestArg+" /tmp/rdmabench-job.json")
	assert.Contains(t, initScript, `echo "`+markerFatal+`$*"`)
}

func TestInitramfsNoShare(t *testing.T) {
	vm := fakeVM(t)
	vm.Share = ""
	e := initramfsEntries(t, vm, Job{Args: []string{"true"}})
	require.Contains(t, e, "share.path")
	assert.Empty(t, e["share.path"].data)
}

func TestInitramfsLoadModules(t *testing.T) {
	vm := fakeVM(t)
	vm.LoadModules = []string{"rdma_rxe", "ib_core", "veth"}
	e := initramfsEntries(t, vm, Job{Args: []string{"true"}})
	assert.Equal(t, "rdma_rxe\nib_core\nveth\n", string(e["modules.list"].data))
	assert.Contains(t, e, "modules/rdma_rxe.ko")
	assert.NotContains(t, e, "modules/virtio.ko", "only the listed modules go in")
}

func TestInitramfsErrors(t *testing.T) {
	tests := []struct {
		name    string
		breakVM func(t *testing.T, vm *VM)
		wantErr []string
	}{
		{
			name: "compressed module",
			breakVM: func(t *testing.T, vm *VM) {
				p, err := findModule(vm.Modules, "ib_core")
				require.NoError(t, err)
				require.NoError(t, os.Rename(p, p+".xz"))
			},
			wantErr: []string{"module ib_core is compressed", "ib_core.ko.xz", "busybox insmod needs plain .ko files"},
		},
		{
			name: "missing module",
			breakVM: func(t *testing.T, vm *VM) {
				p, err := findModule(vm.Modules, "rdma_rxe")
				require.NoError(t, err)
				require.NoError(t, os.Remove(p))
			},
			wantErr: []string{"module rdma_rxe not found in"},
		},
		{
			name:    "missing busybox",
			breakVM: func(t *testing.T, vm *VM) { vm.Busybox = "/nonexistent/busybox" },
			wantErr: []string{"initramfs", "/nonexistent/busybox"},
		},
		{
			name:    "missing agent",
			breakVM: func(t *testing.T, vm *VM) { vm.Agent = "/nonexistent/agent" },
			wantErr: []string{"initramfs", "/nonexistent/agent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := fakeVM(t)
			tt.breakVM(t, vm)
			_, err := vm.Initramfs(Job{Args: []string{"true"}})
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// argValues returns the values that follow each occurrence of flag.
func argValues(args []string, flag string) []string {
	var v []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			v = append(v, args[i+1])
		}
	}
	return v
}

func TestQemuArgs(t *testing.T) {
	tests := []struct {
		name       string
		kvm        bool
		share      string
		mem, cpus  int
		wantAccel  string
		wantCPU    string
		wantMem    string
		wantSMP    string
		wantFsdevs []string
	}{
		{
			name: "tcg without share", mem: 1024, cpus: 1,
			wantAccel: "tcg,thread=multi", wantCPU: "max", wantMem: "1024", wantSMP: "1",
			wantFsdevs: []string{"local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap"},
		},
		{
			name: "kvm with share", kvm: true, share: "/work/main", mem: 4096, cpus: 4,
			wantAccel: "kvm", wantCPU: "host", wantMem: "4096", wantSMP: "4",
			wantFsdevs: []string{
				"local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
				"local,id=share,path=/work/main,security_model=mapped-xattr,multidevs=remap",
			},
		},
		{
			name: "zero sizes take the defaults; a comma in the share is escaped", share: "/var/tmp/a,b",
			wantAccel: "tcg,thread=multi", wantCPU: "max", wantMem: "2048", wantSMP: "2",
			wantFsdevs: []string{
				"local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap",
				"local,id=share,path=/var/tmp/a,,b,security_model=mapped-xattr,multidevs=remap",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := &VM{Kernel: "/boot/vmlinuz-6.1.0-57-amd64", KVM: tt.kvm, Share: tt.share, MemoryMiB: tt.mem, CPUs: tt.cpus}
			args := vm.QemuArgs("/tmp/x/initrd.cpio", 3, 4)
			assert.Equal(t, []string{tt.wantAccel}, argValues(args, "-accel"))
			assert.Equal(t, []string{tt.wantCPU}, argValues(args, "-cpu"))
			assert.Equal(t, []string{tt.wantMem}, argValues(args, "-m"))
			assert.Equal(t, []string{tt.wantSMP}, argValues(args, "-smp"))
			assert.Equal(t, []string{vm.Kernel}, argValues(args, "-kernel"))
			assert.Equal(t, []string{"/tmp/x/initrd.cpio"}, argValues(args, "-initrd"))
			assert.Equal(t, []string{"file:/proc/self/fd/3", "file:/proc/self/fd/4"}, argValues(args, "-serial"), "ttyS0 is the console, ttyS1 the output")
			assert.Equal(t, []string{"none"}, argValues(args, "-nic"), "no NIC to the outside")
			assert.Contains(t, args, "-no-reboot", "the guest's reboot must end qemu")
			assert.Contains(t, args, "-nodefaults")
			assert.Equal(t, []string{"rxevm,debug-threads=on"}, argValues(args, "-name"), "named vCPU threads, for pinVCPUs")
			assert.Equal(t, tt.wantFsdevs, argValues(args, "-fsdev"))
			assert.Len(t, argValues(args, "-device"), len(tt.wantFsdevs))

			cmdline := argValues(args, "-append")
			require.Len(t, cmdline, 1)
			assert.Less(t, len(cmdline[0]), 256, "a long kernel command line panics the guest")
			assert.Contains(t, cmdline[0], "console=ttyS0")
			assert.Contains(t, cmdline[0], "panic=-1", "a panic must end the guest, not hang it")
		})
	}
}

func TestKvmUsable(t *testing.T) {
	const noVirt = "processor\t: 0\nflags\t\t: fpu vme de pse sse sse2 hypervisor\n"
	tests := []struct {
		name    string
		dev     bool
		cpuinfo string // "" means no file
		want    bool
	}{
		{name: "vmx", dev: true, cpuinfo: "processor\t: 0\nflags\t\t: fpu vmx sse\n", want: true},
		{name: "svm", dev: true, cpuinfo: "flags\t\t: fpu svm\n", want: true},
		{name: "no extensions (a sandbox's /dev/kvm)", dev: true, cpuinfo: noVirt},
		{name: "vmx only in another field", dev: true, cpuinfo: "vmx flags\t: ept vpid\nflags\t\t: fpu\n"},
		{name: "no /dev/kvm", cpuinfo: "flags\t\t: fpu vmx\n"},
		{name: "no cpuinfo", dev: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{}
			if tt.dev {
				files["kvm"] = ""
			}
			if tt.cpuinfo != "" {
				files["cpuinfo"] = tt.cpuinfo
			}
			writeTree(t, dir, files)
			assert.Equal(t, tt.want, kvmUsable(filepath.Join(dir, "kvm"), filepath.Join(dir, "cpuinfo")))
		})
	}
}

func TestFindKernel(t *testing.T) {
	tests := []struct {
		name     string
		images   []string // releases with a vmlinuz in boot
		withRxe  []string // releases whose module tree has rdma_rxe
		want     string   // the release chosen
		wantErrs []string
	}{
		{name: "newest with rxe", images: []string{"6.1.0-9-amd64", "6.1.0-10-amd64"}, withRxe: []string{"6.1.0-9-amd64", "6.1.0-10-amd64"}, want: "6.1.0-10-amd64"},
		{name: "newest lacks rxe", images: []string{"6.1.0-57-amd64", "6.12.0-1-amd64"}, withRxe: []string{"6.1.0-57-amd64"}, want: "6.1.0-57-amd64"},
		{name: "major version compares numerically", images: []string{"6.9.0-1-amd64", "6.10.0-1-amd64"}, withRxe: []string{"6.9.0-1-amd64", "6.10.0-1-amd64"}, want: "6.10.0-1-amd64"},
		{name: "no kernel", wantErrs: []string{"no kernel image", "apt-get install linux-image-amd64"}},
		{name: "none ships rxe", images: []string{"6.1.0-57-amd64", "6.12.0-1-amd64"}, wantErrs: []string{"ships rdma_rxe", "tried 6.12.0-1-amd64, 6.1.0-57-amd64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{"boot/config-6.1.0-57-amd64": "", "lib/6.1.0-57-amd64/modules.dep": ""}
			for _, r := range tt.images {
				files["boot/vmlinuz-"+r] = "kernel"
			}
			for _, r := range tt.withRxe {
				files["lib/"+r+"/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"] = ""
			}
			writeTree(t, root, files)
			boot, lib := filepath.Join(root, "boot"), filepath.Join(root, "lib")
			kernel, modules, err := FindKernel(boot, lib)
			if tt.wantErrs != nil {
				require.Error(t, err)
				for _, w := range tt.wantErrs {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(boot, "vmlinuz-"+tt.want), kernel)
			assert.Equal(t, filepath.Join(lib, tt.want), modules)
		})
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"6.1.0-10-amd64", "6.1.0-9-amd64", 1},
		{"6.1.0-9-amd64", "6.1.0-10-amd64", -1},
		{"6.12.0", "6.1.0", 1},
		{"6.1.0-57-amd64", "6.1.0-57-amd64", 0},
		{"6.1.0-057", "6.1.0-57", 0}, // leading zeros do not count
		{"6.1.0-57-cloud-amd64", "6.1.0-57-amd64", 1},
		{"6.1", "6.1.0", -1},
	}
	for _, tt := range tests {
		t.Run(tt.a+"_vs_"+tt.b, func(t *testing.T) {
			assert.Equal(t, tt.want, compareVersions(tt.a, tt.b))
		})
	}
}

func TestCheckStatic(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		host    bool // a file of this machine: skip the case when absent
		wantErr string
	}{
		{name: "static busybox", path: "/usr/bin/busybox", host: true}, // Debian's busybox-static
		{name: "dynamic binary", path: "/usr/bin/ls", host: true, wantErr: "busybox-static"},
		{name: "not ELF", path: "/etc/passwd", host: true, wantErr: "busybox"},
		{name: "missing file", path: filepath.Join(t.TempDir(), "none"), wantErr: "busybox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat(tt.path); tt.host && err != nil {
				t.Skipf("%s is not on this machine", tt.path)
			}
			err := checkStatic(tt.path)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestVerdict(t *testing.T) {
	boot := []string{"[    0.000000] Linux version 6.1.0-57-amd64", "rdmabench guest: loading modules"}
	with := func(extra ...string) []string { return append(append([]string{}, boot...), extra...) }
	many := make([]string, 30)
	for i := range many {
		many[i] = fmt.Sprintf("console line %d", i)
	}
	tests := []struct {
		name       string
		lines      []string
		ctxErr     error
		waitErr    error
		qemuOut    string
		wantCode   int
		wantErr    []string
		wantNotErr []string
	}{
		{name: "exit 0", lines: with("rdmabench guest: rxe0 ACTIVE", markerExit+"0"), wantCode: 0},
		{name: "exit 3", lines: with(markerExit + "3"), wantCode: 3},
		{name: "marker amid console noise", lines: with("\x1b[0m" + markerExit + "7[   12.345] reboot: Restarting system"), wantCode: 7},
		{name: "last marker counts", lines: with(markerExit+"1", markerExit+"2"), wantCode: 2},
		{name: "marker then killed on the way down", lines: with(markerExit + "0"), ctxErr: context.DeadlineExceeded, wantCode: 0},
		{
			name:     "fatal",
			lines:    with(markerFatal+"kernel module rdma_rxe failed to load (insmod /modules/rdma_rxe.ko)", "reboot: Restarting system"),
			wantCode: -1,
			wantErr:  []string{"guest failed: kernel module rdma_rxe failed to load", "last guest console lines", "reboot: Restarting system"},
		},
		{
			name:     "fatal wins over an exit marker",
			lines:    with(markerFatal+"guest network: creating veth0/veth1: operation not supported", markerExit+"0"),
			wantCode: -1,
			wantErr:  []string{"guest failed: guest network: creating veth0/veth1"},
		},
		{
			name:     "kernel panic",
			lines:    with("[    1.234567] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)", "[    1.3] ---[ end Kernel panic"),
			waitErr:  nil,
			wantCode: -1,
			wantErr:  []string{"guest kernel panic: Kernel panic - not syncing: VFS: Unable to mount root fs"},
		},
		{
			name:       "deadline",
			lines:      with("rdmabench guest: rxe0 ACTIVE on veth0"),
			ctxErr:     context.DeadlineExceeded,
			waitErr:    errors.New("signal: killed"),
			wantCode:   -1,
			wantErr:    []string{"killed after 1m1s", "exceeded its deadline of 1m0s", "rxe0 ACTIVE on veth0"},
			wantNotErr: []string{"stopped without"},
		},
		{
			name:     "cancelled",
			lines:    with(),
			ctxErr:   context.Canceled,
			waitErr:  errors.New("signal: killed"),
			wantCode: -1,
			wantErr:  []string{"the guest was stopped: context canceled"},
		},
		{
			name:     "no marker",
			lines:    with(),
			waitErr:  errors.New("exit status 1"),
			qemuOut:  "qemu-system-x86_64: -kernel /boot/vmlinuz: No such file\n",
			wantCode: -1,
			wantErr:  []string{"stopped without reporting an exit status (qemu: exit status 1: qemu-system-x86_64: -kernel /boot/vmlinuz: No such file)"},
		},
		{
			name:       "only the last 25 console lines",
			lines:      many,
			wantCode:   -1,
			wantErr:    []string{"console line 5\n", "console line 29"},
			wantNotErr: []string{"console line 4\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &consoleLog{}
			for _, l := range tt.lines {
				c.add(l)
			}
			code, err := c.verdict(tt.ctxErr, tt.waitErr, 61*time.Second, time.Minute, tt.qemuOut)
			assert.Equal(t, tt.wantCode, code)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
			for _, w := range tt.wantNotErr {
				assert.NotContains(t, err.Error(), w)
			}
		})
	}
}

// A console that never stops talking is kept in bounded memory, and the
// verdict still sees a marker from its first line.
func TestConsoleLogBounded(t *testing.T) {
	c := &consoleLog{}
	c.add(markerFatal + "first words")
	for i := range 100000 {
		c.add(fmt.Sprintf("[%d.0] rdma_rxe: noisy line %d", i, i))
	}
	assert.LessOrEqual(t, len(c.tail), 2*consoleTail)
	_, err := c.verdict(nil, nil, time.Second, time.Minute, "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "guest failed: first words")
	assert.Contains(t, err.Error(), "noisy line 99999")
	assert.Contains(t, err.Error(), "noisy line 99975\n")
	assert.NotContains(t, err.Error(), "noisy line 99974\n")

	c.add(strings.Repeat("x", maxConsoleLine))
	assert.Equal(t, strings.Repeat("x", maxTailLine)+fmt.Sprintf("[… %d more bytes]", maxConsoleLine-maxTailLine), c.tail[len(c.tail)-1],
		"a long line is kept cut in the tail")
}

func TestHeadWriterKeepsTheStart(t *testing.T) {
	w := &headWriter{max: 8}
	for _, s := range []string{"qemu: ", "error one\n", "more"} {
		n, err := w.Write([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(s), n, "a writer that kept less must still take all")
	}
	assert.Equal(t, "qemu: er[… 12 more bytes]", w.String())
}
