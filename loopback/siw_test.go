package loopback

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/loopback/internal/fakeko"
)

const testRelease = "6.1.0-57-amd64"

// siwVM is fakeVM with its module tree named after testRelease and the
// modules siw needs (SiwModules) in it, loaded after GuestModules.
func siwVM(t *testing.T) *VM {
	t.Helper()
	vm := fakeVM(t)
	tree := filepath.Join(filepath.Dir(vm.Modules), testRelease)
	require.NoError(t, os.Rename(vm.Modules, tree))
	vm.Modules = tree
	for _, m := range SiwModules {
		writeTree(t, tree, map[string]string{"kernel/extra/" + m + ".ko": ""})
	}
	vm.LoadModules = append(append([]string{}, GuestModules...), SiwModules...)
	return vm
}

// writeKo writes a fake module file with the given .modinfo strings.
func writeKo(t *testing.T, modinfo ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "siw.ko")
	require.NoError(t, fakeko.Write(p, modinfo...))
	return p
}

// siwInfo is what Debian's 6.1 siw.ko says of itself.
var siwInfo = []string{"alias=rdma-link-siw", "depends=ib_core,libcrc32c", "name=siw", "vermagic=" + testRelease + " SMP preempt mod_unload modversions "}

func TestReadModuleInfo(t *testing.T) {
	info, err := ReadModuleInfo(writeKo(t, siwInfo...))
	require.NoError(t, err)
	assert.Equal(t, ModuleInfo{Name: "siw", Vermagic: testRelease + " SMP preempt mod_unload modversions ", Depends: []string{"ib_core", "libcrc32c"}}, info)
	assert.Equal(t, testRelease, info.Release())

	info, err = ReadModuleInfo(writeKo(t, "name=veth", "depends=", "vermagic=6.1.0-9-amd64 SMP"))
	require.NoError(t, err)
	assert.Empty(t, info.Depends, "an empty depends= is no dependency")
}

func TestReadModuleInfoErrors(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "siw.ko.xz")
	require.NoError(t, os.WriteFile(notELF, []byte("\xfd7zXZ\x00compressed"), 0o644))
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"missing file", filepath.Join(dir, "nothere.ko"), []string{"nothere.ko", "is not a plain .ko (ELF) file"}},
		{"compressed", notELF, []string{"siw.ko.xz", "is not a plain .ko (ELF) file"}},
		{"no name", writeKo(t, "vermagic=6.1.0-57-amd64 SMP"), []string{".modinfo has no name"}},
		{"no vermagic", writeKo(t, "name=siw"), []string{".modinfo has no vermagic"}},
		{"empty vermagic", writeKo(t, "name=siw", "vermagic= "), []string{".modinfo has no vermagic"}},
		{"name with a slash", writeKo(t, "name=../siw", "vermagic=6.1.0-57-amd64"), []string{`names the module "../siw"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadModuleInfo(tt.path)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	// A real ELF file that is no module: this test binary.
	exe, err := os.Executable()
	require.NoError(t, err)
	if runtime.GOOS == "linux" {
		_, err = ReadModuleInfo(exe)
		assert.ErrorContains(t, err, "has no .modinfo section: not a kernel module")
	}
}

func TestInitramfsModuleFiles(t *testing.T) {
	vm := siwVM(t)
	ko := writeKo(t, siwInfo...)
	vm.ModuleFiles = []string{ko}
	e := initramfsEntries(t, vm, Job{Args: []string{"true"}, LinkType: LinkSiw})
	want := strings.Join(append(append(append([]string{}, GuestModules...), SiwModules...), "siw"), "\n") + "\n"
	assert.Equal(t, want, string(e["modules.list"].data), "siw.ko loads last, after what it depends on")
	require.Contains(t, e, "modules/siw.ko")
	b, err := os.ReadFile(ko)
	require.NoError(t, err)
	assert.Equal(t, b, e["modules/siw.ko"].data, "the file goes into the initramfs as it is")
	for _, m := range SiwModules {
		assert.Contains(t, e, "modules/"+m+".ko")
	}
}

func TestInitramfsModuleFileErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, vm *VM, job *Job)
		want  []string
	}{
		{
			name: "built for another kernel",
			setup: func(t *testing.T, vm *VM, job *Job) {
				vm.ModuleFiles = []string{writeKo(t, "name=siw", "depends=ib_core,libcrc32c", "vermagic=6.1.0-9-amd64 SMP preempt")}
			},
			want: []string{"was built for kernel 6.1.0-9-amd64", `vermagic "6.1.0-9-amd64 SMP preempt"`, "the guest runs " + testRelease, "ci/siw.sh build"},
		},
		{
			name: "a dependency the guest does not load",
			setup: func(t *testing.T, vm *VM, job *Job) {
				vm.LoadModules = GuestModules // without SiwModules
				vm.ModuleFiles = []string{writeKo(t, siwInfo...)}
			},
			want: []string{"(siw) depends on libcrc32c, which the guest does not load before it"},
		},
		{
			name: "a name the guest loads already",
			setup: func(t *testing.T, vm *VM, job *Job) {
				vm.ModuleFiles = []string{writeKo(t, "name=ib_core", "vermagic="+testRelease)}
			},
			want: []string{"the guest loads a module ib_core already"},
		},
		{
			name: "the same file twice",
			setup: func(t *testing.T, vm *VM, job *Job) {
				ko := writeKo(t, siwInfo...)
				vm.ModuleFiles = []string{ko, ko}
			},
			want: []string{"the guest loads a module siw already"},
		},
		{
			name: "not a module",
			setup: func(t *testing.T, vm *VM, job *Job) {
				vm.ModuleFiles = []string{vm.Busybox}
			},
			want: []string{"is not a plain .ko (ELF) file"},
		},
		{
			name:  "unknown link type",
			setup: func(t *testing.T, vm *VM, job *Job) { job.LinkType = "roce" },
			want:  []string{`unknown RDMA link type "roce" (known: rxe, siw)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := siwVM(t)
			job := Job{Args: []string{"true"}, LinkType: LinkSiw}
			tt.setup(t, vm, &job)
			_, err := vm.Initramfs(job)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestModuleFileDependsOnEarlierFile(t *testing.T) {
	vm := siwVM(t)
	vm.LoadModules = GuestModules
	// libcrc32c as a file before siw.ko satisfies siw's dependency.
	lib := filepath.Join(t.TempDir(), "libcrc32c.ko")
	require.NoError(t, fakeko.Write(lib, "name=libcrc32c", "vermagic="+testRelease))
	ko := writeKo(t, siwInfo...)
	vm.ModuleFiles = []string{lib, ko}
	_, err := vm.CheckModuleFile(ko)
	require.NoError(t, err)
	vm.ModuleFiles = []string{ko, lib}
	_, err = vm.CheckModuleFile(ko)
	assert.ErrorContains(t, err, "depends on libcrc32c", "a file loaded after it does not count")
}

func TestJobDeviceAndLinkType(t *testing.T) {
	tests := []struct {
		job        Job
		link, name string
	}{
		{Job{}, LinkRxe, "rxe0"},
		{Job{Device: "rxe7"}, LinkRxe, "rxe7"},
		{Job{LinkType: LinkSiw}, LinkSiw, "siw0"},
		{Job{LinkType: LinkSiw, Device: "iw1"}, LinkSiw, "iw1"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.link, tt.job.linkType(), "%+v", tt.job)
		assert.Equal(t, tt.name, tt.job.device(), "%+v", tt.job)
	}
}

func TestLinkModule(t *testing.T) {
	m, err := linkModule(LinkRxe)
	require.NoError(t, err)
	assert.Equal(t, "rdma_rxe", m)
	m, err = linkModule(LinkSiw)
	require.NoError(t, err)
	assert.Equal(t, "siw", m)
	_, err = linkModule("")
	assert.ErrorContains(t, err, `unknown RDMA link type ""`)
}

func TestEnsureLinkRefusesBeforeNetlink(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("software RDMA devices are Linux only")
	}
	_, err := EnsureLink("iw0", "iwarp", "veth0")
	assert.ErrorContains(t, err, `unknown RDMA link type "iwarp" (known: rxe, siw)`)

	// No siw module on this "machine": the error says how to get one,
	// before anything is made (as root), or that root is needed.
	saved := HostRoot
	t.Cleanup(func() { HostRoot = saved })
	HostRoot.Sys = t.TempDir()
	_, err = EnsureLink("siw0", LinkSiw, "veth0")
	require.Error(t, err)
	if syscall.Geteuid() == 0 {
		assert.ErrorContains(t, err, "kernel module siw is not loaded (Debian's kernel does not ship it: build siw.ko with ci/siw.sh build and boot the guest with rxevm -siw FILE)")
	} else {
		assert.ErrorContains(t, err, "creating siw device siw0 on veth0 needs root (CAP_NET_ADMIN); run as root or create it with: rdma link add siw0 type siw netdev veth0")
	}
}
