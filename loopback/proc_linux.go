//go:build linux

package loopback

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// childAttr makes a child process die with ours: the kernel sends it
// SIGKILL when the thread that started it ends (Pdeathsig), so a runner
// killed by SIGKILL or a crash leaves no qemu behind. The caller keeps
// that thread alive (runtime.LockOSThread) until the child is waited for.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// lockDir takes the run's lock on dir; it is released when f is closed or
// the process dies.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("loopback: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("loopback: locking %s: %w", f.Name(), err)
	}
	return f, nil
}

// unlocked tells whether nobody holds dir's lock: its run has ended. A
// directory without a lock file is not known to be unlocked.
func unlocked(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return true
}

// xattrProbe is the extended attribute checkXattr writes.
const xattrProbe = "user.rdmabench.probe"

// checkXattr tells whether files in dir can carry user extended
// attributes, where qemu's security_model=mapped-xattr keeps the guest's
// owners and modes.
func checkXattr(dir string) error {
	f, err := os.CreateTemp(dir, ".rdmabench-xattr-*")
	if err != nil {
		return fmt.Errorf("loopback: share %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	defer os.Remove(name)
	if err := unix.Setxattr(name, xattrProbe, []byte("1"), 0); err != nil {
		if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("loopback: the share %s has no user extended attributes (%v), which the guest's read-write share needs (qemu security_model=mapped-xattr keeps the guest from planting setuid files or device nodes on the host); use -share on ext4, xfs, btrfs or tmpfs ≥ Linux 6.6", dir, err)
		}
		return fmt.Errorf("loopback: share %s: setting a user extended attribute: %w", dir, err)
	}
	return nil
}
