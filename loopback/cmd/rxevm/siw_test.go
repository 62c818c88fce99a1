package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/loopback"
	"github.com/rdmabench/rdmabench/loopback/internal/fakeko"
)

func TestUseSiw(t *testing.T) {
	const rel = "6.1.0-57-amd64"
	dir := t.TempDir()
	ko := filepath.Join(dir, "siw.ko")
	require.NoError(t, fakeko.Write(ko, "name=siw", "depends=ib_core,libcrc32c", "vermagic="+rel+" SMP preempt mod_unload modversions "))
	vm := &loopback.VM{Modules: filepath.Join("/lib/modules", rel)}
	job := loopback.Job{Args: []string{"true"}, Env: []string{"RDMA_DEVICE=rxe0"}}
	require.NoError(t, useSiw(vm, &job, ko))

	assert.Equal(t, append(slices.Clone(loopback.GuestModules), loopback.SiwModules...), vm.LoadModules)
	assert.Equal(t, []string{ko}, vm.ModuleFiles)
	assert.Equal(t, loopback.LinkSiw, job.LinkType)
	assert.Equal(t, "siw0", job.Device)
	assert.Equal(t, "RDMA_DEVICE=siw0", job.Env[len(job.Env)-1], "siw0 overrides a device from the host's environment (the last one wins)")
	assert.Equal(t, len(loopback.GuestModules), len(vm.LoadModules)-len(loopback.SiwModules), "GuestModules itself is not changed")
}

func TestUseSiwRefuses(t *testing.T) {
	const rel = "6.1.0-57-amd64"
	dir := t.TempDir()
	write := func(name string, modinfo ...string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, fakeko.Write(p, modinfo...))
		return p
	}
	tests := []struct {
		name, ko, want string
	}{
		{"missing file", filepath.Join(dir, "none.ko"), "-siw: loopback: module file " + filepath.Join(dir, "none.ko") + " is not a plain .ko (ELF) file"},
		{"another kernel", write("old.ko", "name=siw", "depends=ib_core,libcrc32c", "vermagic=6.1.0-9-amd64 SMP"), "was built for kernel 6.1.0-9-amd64"},
		{"another module", write("rxe.ko", "name=rdma_rxe", "depends=ib_core", "vermagic="+rel), `the module is "rdma_rxe", not siw`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := &loopback.VM{Modules: filepath.Join("/lib/modules", rel)}
			job := loopback.Job{Args: []string{"true"}}
			err := useSiw(vm, &job, tt.ko)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Empty(t, job.LinkType, "the job is left as it was")
		})
	}
}
