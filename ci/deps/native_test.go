package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/loopback"
)

// TestNativeRDMAAgreesWithDetect checks nativeRDMA against
// loopback.Detect, whose rules it copies: native means Detect would not
// boot the qemu guest.
func TestNativeRDMAAgreesWithDetect(t *testing.T) {
	const rel = "6.1.0-57-amd64"
	tests := []struct {
		name   string
		paths  []string // a path ending in "/" is a directory, else an empty file
		native bool
		why    string
	}{
		{"a device", []string{"sys/class/infiniband/mlx5_0/"}, true, "RDMA device mlx5_0 present"},
		{"rdma_rxe loaded, no device", []string{"sys/module/rdma_rxe/", "sys/class/infiniband/"}, true, "has rdma_rxe loaded"},
		{"rdma_rxe shipped", []string{"lib/" + rel + "/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"}, true, "ships rdma_rxe"},
		{"rdma_rxe shipped compressed", []string{"lib/" + rel + "/kernel/rdma_rxe.ko.zst"}, true, "ships rdma_rxe"},
		{"rdma_rxe for another kernel only", []string{"lib/6.1.0-9-amd64/kernel/rdma_rxe.ko", "sys/module/ib_core/"}, false, "no rdma_rxe module"},
		{"nothing", nil, false, "kernel " + rel + " has no RDMA devices and no rdma_rxe module"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, p := range append(tt.paths, "proc/sys/kernel/osrelease") {
				full := filepath.Join(dir, filepath.FromSlash(p))
				if strings.HasSuffix(p, "/") {
					require.NoError(t, os.MkdirAll(full, 0o755))
					continue
				}
				require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
				require.NoError(t, os.WriteFile(full, []byte(rel+"\n"), 0o644))
			}
			r := root{Sys: filepath.Join(dir, "sys"), Lib: filepath.Join(dir, "lib"), Proc: filepath.Join(dir, "proc")}
			native, why, err := nativeRDMA(r)
			require.NoError(t, err)
			assert.Equal(t, tt.native, native)
			assert.Contains(t, why, tt.why)

			m, err := loopback.Detect(loopback.Root(r))
			require.NoError(t, err)
			assert.Equal(t, m.Kind != loopback.NoRDMA, native, "loopback.Detect: %s", m.Reason)
		})
	}
}

func TestNativeRDMANeedsTheKernelRelease(t *testing.T) {
	dir := t.TempDir()
	_, _, err := nativeRDMA(root{Sys: dir, Lib: dir, Proc: dir})
	assert.ErrorContains(t, err, "reading the kernel release")
}

// TestCheckCandidatesNamesTheMissing asks this machine's apt about a name
// no distribution has.
func TestCheckCandidatesNamesTheMissing(t *testing.T) {
	if _, err := exec.LookPath("apt-cache"); err != nil {
		t.Skip("no apt-cache on this machine")
	}
	err := checkCandidates([]string{"rdmabench-no-such-package"}, Ubuntu, "Ubuntu 24.04.1 LTS")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no package rdmabench-no-such-package in the apt sources of Ubuntu 24.04.1 LTS")
	assert.Contains(t, err.Error(), "universe")
	assert.Contains(t, err.Error(), "nothing was installed")
}
