package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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
	assert.Contains(t, err.Error(), "200ms deadline")
	var exit *exec.ExitError
	assert.ErrorAs(t, err, &exit, "the command's own error is kept")
	assert.Contains(t, err.Error(), "signal: terminated")
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

// fakeCommands puts shell scripts named after the keys, with the values
// as their bodies, first on PATH, and shortens queryTimeout to d.
func fakeCommands(t *testing.T, d time.Duration, scripts map[string]string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	old := queryTimeout
	queryTimeout = d
	t.Cleanup(func() { queryTimeout = old })
}

// TestQueriesPastTheirDeadline checks that dpkg, dpkg-query and apt-cache
// past their deadline are reported as such, not as a missing package or
// an unknown architecture, while failing otherwise still means those.
func TestQueriesPastTheirDeadline(t *testing.T) {
	tests := []struct {
		name    string
		command string
		query   func() error
		slow    string // the error of a query past its deadline names this
		failing func(t *testing.T, err error)
	}{
		{
			name:    "arch",
			command: "dpkg",
			query: func() error {
				a, err := arch()
				if err == nil {
					return fmt.Errorf("arch %s", a)
				}
				return err
			},
			slow: "reading the architecture: dpkg --print-architecture",
			failing: func(t *testing.T, err error) {
				assert.EqualError(t, err, "arch "+runtime.GOARCH, "Go's word when dpkg fails")
			},
		},
		{
			name:    "installedField",
			command: "dpkg-query",
			query: func() error {
				_, ok, err := installedField("rdma-core", "${Package}")
				if err == nil {
					return fmt.Errorf("installed %v", ok)
				}
				return err
			},
			slow: "checking whether rdma-core is installed: dpkg-query -W",
			failing: func(t *testing.T, err error) {
				assert.EqualError(t, err, "installed false", "missing when dpkg-query fails")
			},
		},
		{
			name:    "checkCandidates",
			command: "apt-cache",
			query: func() error {
				return checkCandidates([]string{"rdma-core"}, Ubuntu, "Ubuntu 24.04.1 LTS")
			},
			slow: "checking apt's candidate for rdma-core: apt-cache policy rdma-core",
			failing: func(t *testing.T, err error) {
				assert.ErrorContains(t, err, "no package rdma-core in the apt sources")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name+" past its deadline", func(t *testing.T) {
			fakeCommands(t, 200*time.Millisecond, map[string]string{tt.command: "exec sleep 30"})
			err := tt.query()
			require.Error(t, err)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), tt.slow)
			assert.Contains(t, err.Error(), "200ms deadline")
			assert.NotContains(t, err.Error(), "no package")
			assert.NotContains(t, err.Error(), "universe")
		})
		t.Run(tt.name+" failing", func(t *testing.T) {
			fakeCommands(t, time.Minute, map[string]string{tt.command: "exit 1"})
			err := tt.query()
			require.Error(t, err)
			assert.NotErrorIs(t, err, context.DeadlineExceeded)
			tt.failing(t, err)
		})
	}
}

func TestAptLocked(t *testing.T) {
	failed := errors.New("exit status 100")
	tests := []struct {
		name   string
		output string
		err    error
		locked bool
	}{
		{"lists lock held", "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1234 (apt-get)\nE: Unable to lock directory /var/lib/apt/lists/\n", failed, true},
		{"directory only", "E: Unable to lock directory /var/lib/apt/lists/\n", failed, true},
		{"another failure", "E: The repository 'http://example.org noble Release' does not have a Release file.\n", failed, false},
		{"success with the words", "W: Could not get lock, but went on\n", nil, false},
		{"deadline", "E: Could not get lock /var/lib/apt/lists/lock.\n", fmt.Errorf("apt-get update: stopped: %w", context.DeadlineExceeded), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.locked, aptLocked(tt.output, tt.err))
		})
	}
}

func TestRetryLocked(t *testing.T) {
	const lock = "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1234 (unattended-upgr)\n"
	failed := errors.New("exit status 100")
	tests := []struct {
		name    string
		timeout time.Duration
		locked  int   // runs that fail on the lock before the last
		last    error // the last run's error; failed with lock output when locked is -1
		wantErr error
		deadErr bool
		runs    int // 0: more than one, bounded by timeout/every
	}{
		{"at once", time.Minute, 0, nil, nil, false, 1},
		{"after the lock is freed", time.Minute, 2, nil, nil, false, 3},
		{"another failure at once", time.Minute, 0, failed, failed, false, 1},
		{"another failure after the lock", time.Minute, 1, failed, failed, false, 2},
		{"locked past the deadline", 300 * time.Millisecond, -1, nil, failed, true, 0},
	}
	const every = 20 * time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			runs := 0
			prev := tt.timeout
			start := time.Now()
			err := retryLocked(&stderr, tt.timeout, every, func(w io.Writer, timeout time.Duration) error {
				runs++
				assert.Positive(t, timeout)
				assert.LessOrEqual(t, timeout, prev, "within what is left of the deadline")
				prev = timeout
				if tt.locked < 0 || runs <= tt.locked {
					fmt.Fprint(w, lock)
					return failed
				}
				return tt.last
			})
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.wantErr)
			}
			if tt.deadErr {
				assert.ErrorIs(t, err, context.DeadlineExceeded)
				assert.Contains(t, err.Error(), "300ms deadline")
				assert.Less(t, time.Since(start), tt.timeout+time.Second, "the deadline, give or take the scheduler")
				assert.Greater(t, runs, 1)
				assert.LessOrEqual(t, runs, int(tt.timeout/every)+1)
			} else {
				assert.NotErrorIs(t, err, context.DeadlineExceeded)
				assert.Equal(t, tt.runs, runs)
			}
			assert.Equal(t, runs-1, strings.Count(stderr.String(), "trying again in 20ms"), "one message a retry:\n%s", stderr.String())
			lockRuns := tt.locked
			if lockRuns < 0 {
				lockRuns = runs
			}
			assert.Equal(t, lockRuns, strings.Count(stderr.String(), "Could not get lock"), "apt's output reaches stderr")
		})
	}
}
