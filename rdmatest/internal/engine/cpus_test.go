package engine

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

func TestParseCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "0", want: []int{0}},
		{in: "0-3,8", want: []int{0, 1, 2, 3, 8}},
		{in: " 10-11,2\n", want: []int{10, 11, 2}},
		{in: "3,3,1-2", want: []int{3, 1, 2}},
		{in: "", bad: true},
		{in: "a", bad: true},
		{in: "3-1", bad: true},
		{in: "-1", bad: true},
		{in: "0-70000", bad: true},
	} {
		got, err := parseCPUList(tc.in)
		if tc.bad {
			assert.Error(t, err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

// TestLoopCPUsFromNUMANode: on a two-socket machine the loops go to the
// device's node (its local_cpulist), never to the other node, unless
// -rdma.cpus says otherwise; a device without NUMA information (rxe)
// gets the CPUs the process may use.
func TestLoopCPUsFromNUMANode(t *testing.T) {
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
		got, src, err := loopCPUs(tc.dev, tc.override, tc.allowed)
		if tc.bad {
			assert.Error(t, err, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		assert.Equal(t, tc.want, got, "%+v", tc)
		assert.Equal(t, tc.src, src, "%+v", tc)
	}
}

// TestDevLoopCPUs: one CPU per busy loop, never two loops on one CPU;
// with fewer CPUs than loops, nothing is pinned.
func TestDevLoopCPUs(t *testing.T) {
	assert.Equal(t, [2]int{4, 5}, (&Dev{cpus: []int{4, 5, 6}}).loopCPUs(2))
	assert.Equal(t, [2]int{4, -1}, (&Dev{cpus: []int{4, 5, 6}}).loopCPUs(1))
	assert.Equal(t, [2]int{-1, -1}, (&Dev{cpus: []int{4}}).loopCPUs(2))
	assert.Equal(t, "requester=4,passive=5(numa-local)", (&Dev{allowed: []int{4, 5}, cpus: []int{4, 5}, cpusSrc: "numa-local"}).cpuLine())
	assert.Equal(t, "requester=4,passive=5(numa-local),runtime=0-3,6-7",
		(&Dev{allowed: []int{0, 1, 2, 3, 4, 5, 6, 7}, cpus: []int{4, 5, 6, 7}, cpusSrc: "numa-local"}).cpuLine(), "the rest moves off the loops' CPUs")
	assert.Equal(t, "requester=4,passive=unpinned(allowed)", (&Dev{allowed: []int{4}, cpus: []int{4}, cpusSrc: "allowed"}).cpuLine())
	assert.Equal(t, "requester=4,passive=unpinned(-rdma.cpus),runtime=5", (&Dev{allowed: []int{4, 5}, cpus: []int{4}, cpusSrc: "-rdma.cpus"}).cpuLine())
	assert.Equal(t, "unpinned", (&Dev{cpusSrc: "-rdma.cpus none"}).cpuLine())
}

func TestCPUListString(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 8}, "0-3,8"},
		{[]int{2, 4, 5, 6, 9, 10}, "2,4-6,9-10"},
		{[]int{3, 1, 2}, "3,1-2"},
		{nil, ""},
	} {
		assert.Equal(t, tc.want, cpuListString(tc.in))
		if tc.in != nil {
			back, err := parseCPUList(tc.want)
			require.NoError(t, err)
			assert.Equal(t, tc.in, back, "round trip")
		}
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

// confineRuntime on this very process: every thread leaves the loops'
// CPUs; an unpinned loop takes every allowed CPU back for its run; with
// no CPU to spare nothing changes.
func TestConfineRuntime(t *testing.T) {
	allowed := allowedCPUs()
	if len(allowed) < 2 {
		t.Skipf("needs 2 CPUs to keep one for a loop and one for the rest; this process may use %v", allowed)
	}
	// Put back what this test changes: every thread's mask and the
	// confined flag (an earlier device test may have confined already).
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

	rest, err := confineRuntime(allowed, allowed)
	require.NoError(t, err)
	assert.Nil(t, rest, "every allowed CPU is a loop's: no CPU to spare, nothing moves")
	assert.Equal(t, wasConfined, confined.Load())

	rest, err = confineRuntime(allowed, allowed[:1])
	require.NoError(t, err)
	require.Equal(t, allowed[1:], rest)
	want := cpuListString(rest)
	for tid, got := range threadAffinities(t) {
		assert.Equal(t, want, got, "thread %s runs off the loop's CPU %d", tid, allowed[0])
	}
	done := make(chan []int)
	go func() {
		runtime.LockOSThread() // ends locked: the thread goes with it
		if err := pinThread(-1); err != nil {
			t.Error(err)
		}
		done <- threadCPUs()
	}()
	assert.Equal(t, allowed, <-done, "an unpinned loop gets every allowed CPU back")
	assert.Equal(t, allowed, allowedCPUs(), "the process's CPUs are remembered from before")
}

// TestTakeCPU: passive sides served to remote clients get CPUs of their
// own in a benchmark's order (the passive side's, the rest, the
// requester's last), process-wide (two Devs share them), unpinned once
// all are held, and get them back when they stop.
func TestTakeCPU(t *testing.T) {
	a, b := &Dev{cpus: []int{2, 3, 5}}, &Dev{cpus: []int{2, 3, 5}}
	assert.Equal(t, 3, a.takeCPU(), "the passive side's CPU first")
	assert.Equal(t, 5, b.takeCPU(), "another Dev of the process")
	assert.Equal(t, 2, a.takeCPU(), "the requester's CPU last")
	assert.Equal(t, -1, a.takeCPU(), "every CPU held: unpinned")
	giveCPU(3)
	assert.Equal(t, 3, a.takeCPU(), "a returned CPU is taken again")
	for _, c := range []int{2, 3, 5, -1} {
		giveCPU(c)
	}
	assert.Equal(t, -1, (&Dev{}).takeCPU(), "no loop CPUs: unpinned")
	assert.Equal(t, 7, (&Dev{cpus: []int{7}}).takeCPU(), "one CPU: that one")
	giveCPU(7)
	assert.Empty(t, passiveCPUs.held, "all returned")
}
