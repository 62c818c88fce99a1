package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/perf/benchfmt"
)

func TestDeviceIPv4(t *testing.T) {
	root := t.TempDir()
	gids := filepath.Join(root, "rxe0", "ports", "1", "gids")
	require.NoError(t, os.MkdirAll(gids, 0o755))
	for i, g := range []string{"fe80:0000:0000:0000:6c2a:bdff:fe6e:94a2", "0000:0000:0000:0000:0000:ffff:c000:0201", "not a gid"} {
		require.NoError(t, os.WriteFile(filepath.Join(gids, string(rune('0'+i))), []byte(g+"\n"), 0o644))
	}
	addr, err := deviceIPv4(root, "rxe0", 1, 1)
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.1", addr)
	for _, tt := range []struct {
		gid  int
		want string
	}{
		{0, "rxe0 port 1 GID index 0 is fe80::6c2a:bdff:fe6e:94a2, not an IPv4-mapped GID"},
		{2, `"not a gid"`},
		{3, "rxe0 port 1 GID index 3: open"},
		{-1, "no GID index"},
	} {
		_, err := deviceIPv4(root, "rxe0", 1, tt.gid)
		assert.ErrorContains(t, err, tt.want, "GID index %d", tt.gid)
	}
}

func TestCMScenarios(t *testing.T) {
	for _, name := range []string{"write_lat rdma_cm 8 B", "send_bw rdma_cm 4 KiB"} {
		s := scenarioNamed(t, name)
		assert.True(t, s.cm, name)
		assert.Contains(t, s.args, "-R", "%s: perftest through rdma_cm", name)
		assert.Equal(t, "192.0.2.1", serverAddr(config{cmAddr: "192.0.2.1"}, s))
		assert.False(t, hasControl(s), "%s: cping connects by hand", name)
	}
	s := scenarioNamed(t, "write_lat 8 B")
	assert.False(t, s.cm)
	assert.NotContains(t, s.args, "-R")
	assert.Equal(t, "127.0.0.1", serverAddr(config{cmAddr: "192.0.2.1"}, s))
	assert.True(t, hasControl(s))

	// -size renames the rdma_cm scenarios as the others.
	scs, _ := override([]scenario{scenarioNamed(t, "write_lat rdma_cm 8 B")}, 64, 0)
	assert.Equal(t, "write_lat rdma_cm 64 B", scs[0].name)

	// The control's slots hold 64 bytes: no control above them.
	scs, _ = override([]scenario{s}, 64, 0)
	assert.True(t, hasControl(scs[0]), "64 B fits cping's slot")
	scs, _ = override([]scenario{s}, 1024, 0)
	assert.False(t, hasControl(scs[0]), "cping -s 1024 would be refused")
}

func TestCheckConnection(t *testing.T) {
	result := func(lines ...string) *benchfmt.Result {
		in := strings.Join(lines, "\n") + "\nBenchmarkWriteLat/transport=RC/size=8/inline=false-2 10 100 ns/op\n"
		r := benchfmt.NewReader(strings.NewReader(in), "x")
		for r.Scan() {
			if res, ok := r.Result().(*benchfmt.Result); ok {
				return res.Clone()
			}
		}
		t.Fatal("no result")
		return nil
	}
	cm, hand := scenarioNamed(t, "write_lat rdma_cm 8 B"), scenarioNamed(t, "write_lat 8 B")
	assert.NoError(t, checkConnection(result("rdma-connect: cm"), cm))
	assert.NoError(t, checkConnection(result(), hand), "absent: by hand")
	assert.ErrorContains(t, checkConnection(result(), cm), `ran with rdma-connect "", want "cm" (-rdma.cm given)`)
	assert.ErrorContains(t, checkConnection(result("rdma-connect: cm"), hand), "want connected by hand (RDMA_CM set?)")
}
