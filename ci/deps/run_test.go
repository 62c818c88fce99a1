package main

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunForStopsAtDeadline(t *testing.T) {
	start := time.Now()
	err := runFor(200*time.Millisecond, io.Discard, io.Discard, "sleep", "30")
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "sleep 30")
	assert.Less(t, time.Since(start), 11*time.Second, "SIGTERM, then SIGKILL after WaitDelay")
}

func TestQueryReturnsOutput(t *testing.T) {
	out, err := query("echo", "installed")
	require.NoError(t, err)
	assert.Equal(t, "installed\n", string(out))

	_, err = query("false")
	assert.Error(t, err)
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
}
