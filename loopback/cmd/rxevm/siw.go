package main

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/rdmabench/rdmabench/loopback"
)

// siwDevice is the Soft-iWARP device -siw makes in the guest.
const siwDevice = "siw0"

// useSiw sets vm and job up for -siw: the guest loads loopback.SiwModules
// after its modules, then ko (a siw.ko built for the guest kernel), and
// makes siw0 on veth0 instead of rxe0; the command finds it in
// RDMA_DEVICE. It fails, before anything is made, when ko is not a
// kernel module built for the guest kernel or needs a module the guest
// does not load.
func useSiw(vm *loopback.VM, job *loopback.Job, ko string) error {
	abs, err := filepath.Abs(ko)
	if err != nil {
		return fmt.Errorf("-siw %s: %w", ko, err)
	}
	base := vm.LoadModules
	if base == nil {
		base = loopback.GuestModules
	}
	vm.LoadModules = append(slices.Clone(base), loopback.SiwModules...)
	vm.ModuleFiles = append(vm.ModuleFiles, abs)
	info, err := vm.CheckModuleFile(abs)
	if err != nil {
		return fmt.Errorf("-siw: %w", err)
	}
	if info.Name != "siw" {
		return fmt.Errorf("-siw %s: the module is %q, not siw", ko, info.Name)
	}
	job.LinkType = loopback.LinkSiw
	job.Device = siwDevice
	job.Env = append(job.Env, "RDMA_DEVICE="+siwDevice)
	return nil
}
