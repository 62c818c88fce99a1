//go:build linux

package loopback

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseVCPUName(t *testing.T) {
	for _, tt := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"CPU 0/TCG", 0, true},
		{"CPU 1/KVM", 1, true},
		{"CPU 12/TCG", 12, true},
		{"qemu-system-x86", 0, false},
		{"worker", 0, false},
		{"CPU x/TCG", 0, false},
		{"CPU 1/HVF", 0, false},
		{"CPU -1/TCG", 0, false},
	} {
		n, ok := parseVCPUName(tt.name)
		assert.Equal(t, tt.ok, ok, tt.name)
		if tt.ok {
			assert.Equal(t, tt.n, n, tt.name)
		}
	}
}

// A process with no vCPU threads (this one) is never pinned, and the wait
// ends with its context.
func TestPinVCPUsGivesUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg := pinVCPUs(ctx, os.Getpid(), 1)
	assert.Contains(t, msg, "vCPUs not pinned")
	assert.Empty(t, vcpuThreads(os.Getpid()))
}
