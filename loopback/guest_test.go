//go:build linux

package loopback

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		cmd  *exec.Cmd
		want int
	}{
		{"success", exec.Command("sh", "-c", "exit 0"), 0},
		{"exit 3", exec.Command("sh", "-c", "exit 3"), 3},
		{"killed by SIGKILL", exec.Command("sh", "-c", "kill -9 $$"), 128 + 9},
		{"killed by SIGTERM", exec.Command("sh", "-c", "kill -15 $$"), 128 + 15},
		{"not found", exec.Command("/nonexistent/command"), 127},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, exitCode(tt.cmd.Run()))
		})
	}
}
