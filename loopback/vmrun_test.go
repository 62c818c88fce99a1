package loopback

import (
	"bytes"
	"context"
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

// The tests named TestVM* boot a real qemu guest (about 20-30 s each under
// TCG) and run only with RDMA_VM_TESTS=1. The guest agent is this test
// binary (see TestMain).

const vmTestsEnv = "RDMA_VM_TESTS"

// guestPath is the PATH of the commands run in the guest.
const guestPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// skipUnlessVMTests skips the test unless the VM tests are enabled;
// guests says what it boots ("a qemu guest").
func skipUnlessVMTests(t *testing.T, guests string) {
	t.Helper()
	if os.Getenv(vmTestsEnv) != "1" {
		t.Skipf("boots %s (about 30 s under TCG); set %s=1 to run it", guests, vmTestsEnv)
	}
}

// realVM returns a VM for this host, or skips the test unless the VM
// tests are enabled. The guest console is logged when the test fails.
func realVM(t *testing.T) *VM {
	t.Helper()
	skipUnlessVMTests(t, "a qemu guest")
	vm, err := NewVM()
	require.NoError(t, err)
	vm.Timeout = 2 * time.Minute
	var console bytes.Buffer
	vm.Console = &console
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("guest console:\n%s", console.String())
		}
	})
	return vm
}

// runVM runs a shell command in the guest and reports how long Run took.
func runVM(t *testing.T, vm *VM, dir, script string) (code int, out string, took time.Duration, err error) {
	t.Helper()
	var buf bytes.Buffer
	start := time.Now()
	code, err = vm.Run(context.Background(), Job{Args: []string{"sh", "-c", script}, Dir: dir, Env: []string{guestPath}}, &buf)
	took = time.Since(start)
	t.Logf("Run took %s (wall clock, from the call to its return): code %d, err %v", took.Round(time.Millisecond), code, err)
	return code, buf.String(), took, err
}

func TestVMExitStatus(t *testing.T) {
	vm := realVM(t)
	code, out, _, err := runVM(t, vm, "/", `echo "kernel $(uname -r) rdma $(ls /sys/class/infiniband)"; exit 3`)
	require.NoError(t, err)
	assert.Equal(t, 3, code)
	assert.Equal(t, fmt.Sprintf("kernel %s rdma rxe0\n", filepath.Base(vm.Modules)), out, "the command ran in the guest, with rxe0")
}

func TestVMModuleLoadFails(t *testing.T) {
	vm := realVM(t)
	// rdma_rxe before ib_core: its symbols are unresolved and insmod fails.
	i := slices.Index(GuestModules, "ib_core")
	require.GreaterOrEqual(t, i, 0)
	mods := slices.Clone(GuestModules[:i])
	mods = append(mods, "rdma_rxe")
	for _, m := range GuestModules[i:] {
		if m != "rdma_rxe" {
			mods = append(mods, m)
		}
	}
	vm.LoadModules = mods
	code, _, took, err := runVM(t, vm, "/", "exit 0")
	assert.Equal(t, -1, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "guest failed: kernel module rdma_rxe failed to load")
	assert.Less(t, took, time.Minute, "the failure ends the guest, not the deadline")
}

func TestVMMissingCrc32(t *testing.T) {
	vm := realVM(t)
	vm.LoadModules = slices.DeleteFunc(slices.Clone(GuestModules), func(m string) bool { return m == "crc32_generic" })
	code, _, took, err := runVM(t, vm, "/", "exit 0")
	assert.Equal(t, -1, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "guest failed: rdma link add rxe0 type rxe netdev veth0")
	assert.Contains(t, err.Error(), "modprobe crc32_generic")
	assert.Less(t, took, time.Minute, "the failure ends the guest, not the deadline")
}

func TestVMDeadline(t *testing.T) {
	vm := realVM(t)
	// Long enough for one guest's boot to reach rxe0 ACTIVE (the other
	// one-guest tests here take 6.7-7.8 s in all on a fresh clone's make
	// test, 2026-12-06); each second more is a second of make test,
	// which was at 1191 s of its 1200.
	vm.Timeout = 20 * time.Second
	code, _, took, err := runVM(t, vm, "/", "echo started; sleep 1000")
	assert.Equal(t, -1, code)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeded its deadline of 20s")
	assert.Contains(t, err.Error(), "rxe0 ACTIVE", "the console tail shows how far the guest got")
	assert.Less(t, took, 30*time.Second)
}

func TestVMOutputStreaming(t *testing.T) {
	vm := realVM(t)
	vm.Share = t.TempDir() // under /tmp, which the guest replaces with a tmpfs
	const lines = 2000
	code, out, _, err := runVM(t, vm, vm.Share,
		fmt.Sprintf(`i=1; while [ $i -le %d ]; do echo "line $i of %d"; i=$((i+1)); done; echo "to stderr" >&2; printf 'cr\r\n'; echo written > result`, lines, lines))
	require.NoError(t, err)
	assert.Equal(t, 0, code)

	var want strings.Builder
	for i := 1; i <= lines; i++ {
		fmt.Fprintf(&want, "line %d of %d\n", i, lines)
	}
	want.WriteString("to stderr\ncr\r\n")
	if !assert.Equal(t, want.String(), out, "output complete, in order, byte for byte") {
		got := strings.Split(out, "\n")
		t.Logf("got %d lines; first %q, last %q", len(got), got[0], got[len(got)-1])
	}
	b, err := os.ReadFile(filepath.Join(vm.Share, "result"))
	require.NoError(t, err, "the guest writes the share (its working directory)")
	assert.Equal(t, "written\n", string(b))
}
