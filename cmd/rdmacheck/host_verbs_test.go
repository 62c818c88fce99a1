package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSysfsFacts: what the real host reads from sysfs besides verbs,
// on a fake tree laid out like the kernel's.
func TestSysfsFacts(t *testing.T) {
	root := t.TempDir()
	dev := filepath.Join(root, "class", "infiniband", "rxe0")
	port := filepath.Join(dev, "ports", "1")
	write := func(path, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
	}
	write(filepath.Join(port, "phys_state"), "3: Disabled\n")
	write(filepath.Join(dev, "parent"), "veth0\n")
	assert.Equal(t, "3: Disabled", readSys(filepath.Join(port, "phys_state")))
	assert.Equal(t, "", readSys(filepath.Join(port, "no such file")), "an unreadable file reads as unknown")

	assert.Equal(t, "veth0", portNetdev(port, dev, 4), "no ndevs entry: rxe's parent")
	write(filepath.Join(port, "gid_attrs", "ndevs", "1"), "eth0\n")
	assert.Equal(t, "eth0", portNetdev(port, dev, 4), "the first GID's netdev")
	assert.Equal(t, "veth0", portNetdev(port, dev, 1), "entries beyond the table are not read")
}
