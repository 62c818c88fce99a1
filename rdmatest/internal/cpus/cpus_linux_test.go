package cpus

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestChooseFromNUMANode: on a two-socket machine the loops go to the
// device's node (its local_cpulist), never to the other node, unless
// -rdma.cpus says otherwise; a device without NUMA information (rxe)
// gets the CPUs the process may use.
func TestChooseFromNUMANode(t *testing.T) {
	root := t.TempDir()
	old := sysfsRoot
	sysfsRoot = root
	t.Cleanup(func() { sysfsRoot = old })
	put := func(dev, cpus string) {
		dir := filepath.Join(root, "class/infiniband", dev, "device")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "local_cpulist"), []byte(cpus+"\n"), 0o644))
	}
	put("mlx5_0", "8-15")  // node 1 of a 2×8-CPU machine
	put("mlx5_1", "0-7")   // node 0
	put("mlx5_2", "16-23") // a node this process may not use
	allowed := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
	for _, tc := range []struct {
		dev, override string
		allowed       []int
		want          []int
		src           string
		bad           bool
	}{
		{dev: "mlx5_0", allowed: allowed, want: []int{8, 9, 10, 11, 12, 13, 14, 15}, src: "numa-local"},
		{dev: "mlx5_1", allowed: []int{2, 3, 9}, want: []int{2, 3}, src: "numa-local"},
		{dev: "mlx5_2", allowed: allowed, want: allowed, src: "allowed"},
		{dev: "rxe0", allowed: []int{0, 1}, want: []int{0, 1}, src: "allowed"},
		{dev: "mlx5_0", override: "3,1", allowed: allowed, want: []int{3, 1}, src: "-rdma.cpus"},
		{dev: "mlx5_0", override: "none", allowed: allowed, want: nil, src: "-rdma.cpus none"},
		{dev: "mlx5_0", override: "20", allowed: allowed, bad: true},
		{dev: "mlx5_0", override: "x", allowed: allowed, bad: true},
	} {
		got, err := Choose(tc.dev, tc.override, tc.allowed)
		if tc.bad {
			assert.Error(t, err, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.want, got.Loop, "%+v", tc)
		assert.Equal(t, tc.src, got.Source, "%+v", tc)
		assert.Equal(t, tc.allowed, got.Allowed, "%+v", tc)
	}
}

// threadAffinities reads every thread's allowed CPUs from /proc.
func threadAffinities(t *testing.T) map[string]string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	require.NoError(t, err)
	out := map[string]string{}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // ended meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				out[task.Name()] = strings.TrimSpace(v)
			}
		}
	}
	return out
}

// TestConfineRuntime: ConfineRuntime on this very process: every thread
// leaves the loops' CPUs; an unpinned loop takes every allowed CPU back
// for its run; with no CPU to spare nothing changes.
func TestConfineRuntime(t *testing.T) {
	allowed := Allowed()
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to keep one for a loop and one for the rest; this process may use %v", allowed)
	}
	// Put back what this test changes: every thread's mask and the
	// confined flag (an earlier test may have confined already).
	wasConfined := confined.Load()
	masks := map[int]unix.CPUSet{}
	for tid := range threadAffinities(t) {
		n, _ := strconv.Atoi(tid)
		var set unix.CPUSet
		if unix.SchedGetaffinity(n, &set) == nil {
			masks[n] = set
		}
	}
	t.Cleanup(func() {
		for n, set := range masks {
			_ = unix.SchedSetaffinity(n, &set)
		}
		confined.Store(wasConfined)
	})

	rest, err := Plan{Allowed: allowed, Loop: allowed}.ConfineRuntime()
	require.NoError(t, err)
	assert.Nil(t, rest, "every allowed CPU is a loop's: no CPU to spare, nothing moves")
	assert.Equal(t, wasConfined, confined.Load())

	rest, err = Plan{Allowed: allowed, Loop: allowed[:1]}.ConfineRuntime()
	require.NoError(t, err)
	require.Equal(t, allowed[1:], rest)
	want := FormatList(rest)
	for tid, got := range threadAffinities(t) {
		assert.Equal(t, want, got, "thread %s runs off the loop's CPU %d", tid, allowed[0])
	}
	done := make(chan []int)
	go func() {
		runtime.LockOSThread() // ends locked: the thread goes with it
		if err := PinThread(-1); err != nil {
			t.Error(err)
		}
		done <- threadCPUs()
	}()
	assert.Equal(t, allowed, <-done, "an unpinned loop gets every allowed CPU back")
	assert.Equal(t, allowed, Allowed(), "the process's CPUs are remembered from before")
}
