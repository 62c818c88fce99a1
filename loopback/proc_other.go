//go:build !linux

package loopback

import (
	"context"
	"os"
	"syscall"
)

func childAttr() *syscall.SysProcAttr { return nil }

func lockDir(dir string) (*os.File, error) { return os.Create(dir + "/" + lockName) }

func unlocked(dir string) bool { return false }

func checkXattr(dir string) error { return nil }

func pinVCPUs(context.Context, int, int) string { return "vCPUs not pinned: not Linux" }
