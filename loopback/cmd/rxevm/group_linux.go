//go:build linux

package main

import (
	"os/exec"
	"syscall"
)

// killGroup runs cmd in a process group of its own, killed as a whole
// when cmd's context ends (a shell's children too), and killed with
// rxevm if rxevm dies first (Pdeathsig).
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
