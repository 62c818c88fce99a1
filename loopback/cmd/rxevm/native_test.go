package main

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestNativeDeadline: a native run has a deadline like a guest run; past
// it the command and what it started are killed and rxevm exits 125.
func TestNativeDeadline(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"exit status passed on", []string{"sh", "-c", "exit 3"}, 3},
		{"success", []string{"true"}, 0},
		{"hung command", []string{"sleep", "30"}, 125},
		{"hung shell with a child holding stdout", []string{"sh", "-c", "sleep 30 & wait"}, 125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Now()
			code := native(context.Background(), 300*time.Millisecond, tc.args)
			assert.Equal(t, tc.want, code)
			assert.Less(t, time.Since(t0), 5*time.Second, "the deadline held")
		})
	}
}
