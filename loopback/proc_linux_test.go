//go:build linux

package loopback

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCleanTemp: directories of runs that died are removed, those of
// live runs and fresh ones are kept.
func TestCleanTemp(t *testing.T) {
	tmp := t.TempDir()
	mk := func(name string, age time.Duration, lock bool) string {
		d := filepath.Join(tmp, name)
		require.NoError(t, os.Mkdir(d, 0o700))
		if lock {
			require.NoError(t, os.WriteFile(filepath.Join(d, lockName), nil, 0o600))
		}
		old := time.Now().Add(-age)
		require.NoError(t, os.Chtimes(d, old, old))
		return d
	}
	dead := mk(tempPrefix+"dead", time.Hour, true)
	live := mk(tempPrefix+"live", time.Hour, false)
	l, err := lockDir(live)
	require.NoError(t, err)
	defer l.Close()
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(live, old, old))
	fresh := mk(tempPrefix+"fresh", time.Second, true)
	ancient := mk(tempPrefix+"ancient", 3*defaultTimeout, false)
	recentNoLock := mk(tempPrefix+"nolock", defaultTimeout, false)
	other := mk("something-else", time.Hour, true)

	removed := CleanTemp(tmp, time.Now())
	assert.ElementsMatch(t, []string{dead, ancient}, removed)
	for _, d := range []string{live, fresh, recentNoLock, other} {
		assert.DirExists(t, d)
	}
	assert.NoDirExists(t, dead)
}

// TestCheckXattr: the share's file system is probed before a boot.
func TestCheckXattr(t *testing.T) {
	assert.NoError(t, checkXattr(t.TempDir()), "the test's temporary directory supports user xattrs")
	err := checkXattr(filepath.Join(t.TempDir(), "missing"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "share")
	entries, err := os.ReadDir(t.TempDir())
	require.NoError(t, err)
	assert.Empty(t, entries, "the probe leaves nothing behind")
}

// TestChildDiesWithParent: a child started with childAttr is killed when
// the process that started it is killed (qemu does not outlive rxevm).
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv("LOOPBACK_PDEATHSIG_HELPER") == "1" {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = childAttr()
		if err := cmd.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
		select {} // until killed
	}
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep binary")
	}
	helper := exec.Command(os.Args[0], "-test.run", "^TestChildDiesWithParent$")
	helper.Env = append(os.Environ(), "LOOPBACK_PDEATHSIG_HELPER=1")
	out, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, 0), "precondition: the child runs")
	require.NoError(t, helper.Process.Kill())
	helper.Wait()
	require.Eventually(t, func() bool {
		// Gone, or a zombie waiting for init to reap it.
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return err != nil || strings.Contains(string(b), ") Z ")
	}, 5*time.Second, 20*time.Millisecond, "the child outlived the process that started it")
}
