//go:build linux && cgo

package verbs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWCStatusMatchesLibibverbs compares the Go table with the installed
// library's ibv_wc_status_str (no device needed).
func TestWCStatusMatchesLibibverbs(t *testing.T) {
	for s := WCSuccess; s <= WCTMRndvIncomplete+1; s++ {
		assert.Equal(t, cWCStatusStr(s), s.String(), "status %d", uint32(s))
	}
}

// TestDevicesMatchSysfs checks Devices against sysfs: a kernel without
// RDMA yields an empty list, never an error; otherwise (inside the VM) the
// list names the devices of /sys/class/infiniband, each with the node GUID
// sysfs shows.
func TestDevicesMatchSysfs(t *testing.T) {
	devs, err := Devices()
	require.NoError(t, err)
	entries, err := os.ReadDir(sysfsInfiniband)
	if errors.Is(err, fs.ErrNotExist) {
		assert.Empty(t, devs, "no %s, yet libibverbs lists devices", sysfsInfiniband)
		return
	}
	require.NoError(t, err)
	var want, got []string
	for _, e := range entries {
		want = append(want, e.Name())
	}
	for _, d := range devs {
		got = append(got, d.Name)
		data, err := os.ReadFile(filepath.Join(sysfsInfiniband, d.Name, "node_guid"))
		if !assert.NoError(t, err) {
			continue
		}
		// e.g. "5054:00ff:fe12:3456": the GUID in hex, big-endian, in 4 groups.
		guid, err := strconv.ParseUint(strings.ReplaceAll(strings.TrimSpace(string(data)), ":", ""), 16, 64)
		require.NoError(t, err, "%s node_guid %q", d.Name, data)
		assert.Equal(t, guid, d.NodeGUID, "%s: node GUID %#x, sysfs says %q", d.Name, d.NodeGUID, data)
	}
	assert.ElementsMatch(t, want, got)
}

// TestGIDTableMatchesLoop checks the one-call GID table read against
// the index-by-index loop, on every port of every device (inside the VM;
// a kernel without RDMA has none, which TestDevicesMatchSysfs checks).
func TestGIDTableMatchesLoop(t *testing.T) {
	devs, err := Devices()
	require.NoError(t, err)
	for _, di := range devs {
		d, err := Open(di.Name)
		require.NoError(t, err)
		for port := 1; port <= d.Attr().PhysPortCnt; port++ {
			p, err := d.Port(port)
			require.NoError(t, err)
			table, ok := d.c.queryGIDTable(port, p.GIDTableLen)
			require.True(t, ok, "%s port %d: ibv_query_gid_table failed on this kernel", di.Name, port)
			loop, err := d.c.queryGIDLoop(di.Name, port, p.GIDTableLen)
			require.NoError(t, err)
			assert.NotEmpty(t, table, "%s port %d", di.Name, port)
			assert.Equal(t, loop, table, "%s port %d", di.Name, port)
		}
		require.NoError(t, d.Close())
	}
}
