package loopback

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTree creates files under root: each key is a slash-separated path
// and its value the content; a key ending in "/" is an empty directory.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			require.NoError(t, os.MkdirAll(p, 0o755))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestDetect(t *testing.T) {
	const rel = "6.1.0-57-amd64"
	release := map[string]string{"proc/sys/kernel/osrelease": rel + "\n"}
	tests := []struct {
		name        string
		files       map[string]string
		wantKind    Kind
		wantDevices []string
		wantReason  string
	}{
		{
			name: "devices are listed sorted and win over everything",
			files: map[string]string{
				"sys/class/infiniband/rxe0/":    "",
				"sys/class/infiniband/mlx5_0/":  "",
				"sys/module/rdma_rxe/":          "",
				"lib/" + rel + "/rdma_rxe.ko":   "",
				"proc/sys/kernel/osrelease":     rel + "\n",
				"lib/" + rel + "/modules.order": "",
			},
			wantKind:    HasDevice,
			wantDevices: []string{"mlx5_0", "rxe0"},
			wantReason:  "RDMA devices present: mlx5_0, rxe0",
		},
		{
			name:       "rdma_rxe loaded or built in",
			files:      map[string]string{"sys/module/rdma_rxe/": "", "sys/class/infiniband/": ""},
			wantKind:   HasRxeModule,
			wantReason: "rdma_rxe is loaded",
		},
		{
			name:       "rdma_rxe shipped as a compressed module file",
			files:      map[string]string{"lib/" + rel + "/kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko.xz": ""},
			wantKind:   HasRxeModule,
			wantReason: "rdma_rxe.ko.xz",
		},
		{
			name:       "rdma_rxe only for another kernel",
			files:      map[string]string{"lib/6.1.0-9-amd64/kernel/rdma_rxe.ko": "", "sys/module/ib_core/": ""},
			wantKind:   NoRDMA,
			wantReason: "kernel " + rel + " has no RDMA devices and no rdma_rxe module",
		},
		{
			name:       "nothing at all",
			files:      map[string]string{},
			wantKind:   NoRDMA,
			wantReason: "no rdma_rxe module",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, release)
			writeTree(t, root, tt.files)
			m, err := Detect(Root{Sys: filepath.Join(root, "sys"), Lib: filepath.Join(root, "lib"), Proc: filepath.Join(root, "proc")})
			require.NoError(t, err)
			assert.Equal(t, tt.wantKind, m.Kind, "kind (%s)", m.Kind)
			assert.Equal(t, tt.wantDevices, m.Devices)
			assert.Equal(t, rel, m.Kernel)
			assert.Contains(t, m.Reason, tt.wantReason)
		})
	}
}

func TestDetectErrors(t *testing.T) {
	t.Run("no kernel release", func(t *testing.T) {
		root := t.TempDir()
		_, err := Detect(Root{Sys: root, Lib: root, Proc: root})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "reading the kernel release")
	})
	t.Run("infiniband class is not a directory", func(t *testing.T) {
		root := t.TempDir()
		writeTree(t, root, map[string]string{"proc/sys/kernel/osrelease": "6.1", "sys/class/infiniband": "not a dir"})
		_, err := Detect(Root{Sys: filepath.Join(root, "sys"), Lib: root, Proc: filepath.Join(root, "proc")})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "listing RDMA devices")
	})
}

func TestKindString(t *testing.T) {
	assert.Equal(t, "device", HasDevice.String())
	assert.Equal(t, "rxe-module", HasRxeModule.String())
	assert.Equal(t, "no-rdma", NoRDMA.String())
}

func TestFindModule(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		module  string
		want    string // path below the tree; "" means not found
		wantErr string
	}{
		{name: "plain", files: []string{"kernel/fs/9p/9p.ko"}, module: "9p", want: "kernel/fs/9p/9p.ko"},
		{name: "dash in the query", files: []string{"kernel/net/ipv6/ip6_udp_tunnel.ko"}, module: "ip6-udp-tunnel", want: "kernel/net/ipv6/ip6_udp_tunnel.ko"},
		{name: "dash in the file", files: []string{"kernel/x/rdma-rxe.ko"}, module: "rdma_rxe", want: "kernel/x/rdma-rxe.ko"},
		{name: "zstd", files: []string{"k/ib_core.ko.zst"}, module: "ib_core", want: "k/ib_core.ko.zst"},
		{name: "gzip", files: []string{"k/ib_core.ko.gz"}, module: "ib_core", want: "k/ib_core.ko.gz"},
		{name: "no prefix match", files: []string{"k/virtio_ring.ko", "k/virtio_pci.ko"}, module: "virtio", wantErr: "module virtio not found"},
		{name: "other suffixes are not modules", files: []string{"k/veth.ko.sig", "k/veth.c"}, module: "veth", wantErr: "module veth not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			files := map[string]string{}
			for _, f := range tt.files {
				files[f] = ""
			}
			writeTree(t, root, files)
			got, err := findModule(root, tt.module)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Contains(t, err.Error(), root, "the error names the tree")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(root, filepath.FromSlash(tt.want)), got)
		})
	}
	t.Run("missing tree", func(t *testing.T) {
		_, err := findModule(filepath.Join(t.TempDir(), "nope"), "rdma_rxe")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "looking for module rdma_rxe")
	})
}
