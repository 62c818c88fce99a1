package facts_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
)

// source returns the Source of a fake tree with sys/ and proc/.
func source(root string) facts.Source {
	return facts.Source{Sys: filepath.Join(root, "sys"), Proc: filepath.Join(root, "proc")}
}

// copyTree copies testdata/<name> to a temporary directory and returns it.
func copyTree(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("testdata", name))))
	return dir
}

// write writes files (path under root → content) under root.
func write(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
}

// mlx5Attrs are what verbs says of the mlx5-like tree's port.
var mlx5Attrs = facts.PortAttrs{ActiveMTU: 4096, ActiveWidth: 4, ActiveSpeed: 25, GIDType: "IB", FW: "28.39.1002"}

// mlx5Facts are the facts of the mlx5-like tree: PCIe gen3 x16 trained
// at x8.
var mlx5Facts = facts.Facts{
	Dev: "mlx5_0", FW: "28.39.1002", Kernel: "6.8.0-45-generic", MTU: "4096",
	LinkSpeed: "100 Gb/sec (4X EDR)", LinkRateMBps: "12500", GIDType: "IB",
	PCIeSpeed: "8.0 GT/s", PCIeWidth: "x8", PCIeMaxSpeed: "8.0 GT/s", PCIeMaxWidth: "x16",
	Governor: "performance", NUMANode: "1",
}

// rxeFacts are the facts of the rxe-like tree: no PCI device, no fw, no
// cpufreq.
var rxeFacts = facts.Facts{
	Dev: "rxe0", Kernel: "6.1.0-28-amd64", MTU: "1024",
	LinkSpeed: "10 Gb/sec (1X QDR)", LinkRateMBps: "1250", GIDType: "RoCE v2",
}

func TestCollect(t *testing.T) {
	mlx5NoVerbs := mlx5Facts
	mlx5NoVerbs.MTU, mlx5NoVerbs.GIDType = "", ""
	rxeSoftware := rxeFacts
	rxeSoftware.LinkRateMBps = ""
	tests := []struct {
		name, tree, dev string
		attrs           facts.PortAttrs
		want            facts.Facts
	}{
		{"mlx5", "mlx5", "mlx5_0", mlx5Attrs, mlx5Facts},
		{"mlx5 fw from sysfs, no verbs", "mlx5", "mlx5_0", facts.PortAttrs{}, mlx5NoVerbs},
		{"rxe", "rxe", "rxe0", facts.PortAttrs{ActiveMTU: 1024, ActiveWidth: 1, ActiveSpeed: 10, GIDType: "RoCE v2"}, rxeFacts},
		{"rxe marked software: no link rate", "rxe", "rxe0", facts.PortAttrs{ActiveMTU: 1024, ActiveWidth: 1, ActiveSpeed: 10, GIDType: "RoCE v2", Software: true}, rxeSoftware},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := facts.Collect(source(filepath.Join("testdata", tt.tree)), tt.dev, 1, tt.attrs)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCollectPCIThroughSymlink(t *testing.T) {
	root := t.TempDir()
	pci := "sys/devices/pci0000:00/0000:00:01.0/0000:3b:00.0"
	write(t, root, map[string]string{
		"sys/class/infiniband/mlx5_1/ports/1/rate": "200 Gb/sec (4X HDR)\n",
		pci + "/current_link_speed":                "Unknown\n",
		pci + "/current_link_width":                "0\n",
		pci + "/max_link_speed":                    "16.0 GT/s PCIe\n",
		pci + "/max_link_width":                    "16\n",
		pci + "/numa_node":                         "-1\n",
		"proc/sys/kernel/osrelease":                "6.8.0\n",
	})
	link := filepath.Join(root, "sys/class/infiniband/mlx5_1/device")
	require.NoError(t, os.Symlink("../../../devices/pci0000:00/0000:00:01.0/0000:3b:00.0", link))

	got, err := facts.Collect(source(root), "mlx5_1", 1, facts.PortAttrs{ActiveWidth: 4, ActiveSpeed: 50})
	require.NoError(t, err)
	assert.Equal(t, facts.Facts{
		Dev: "mlx5_1", Kernel: "6.8.0", LinkSpeed: "200 Gb/sec (4X HDR)", LinkRateMBps: "25000",
		PCIeMaxSpeed: "16.0 GT/s", PCIeMaxWidth: "x16",
	}, got, "an Unknown speed, a width 0 and NUMA node -1 are absent facts")
}

func TestCollectGovernor(t *testing.T) {
	cpu := func(n, g string) (string, string) {
		return "sys/devices/system/cpu/cpu" + n + "/cpufreq/scaling_governor", g + "\n"
	}
	tests := []struct {
		name string
		govs map[string]string // cpu → governor
		want string
	}{
		{"none", nil, ""},
		{"one", map[string]string{"0": "powersave"}, "powersave"},
		{"all the same", map[string]string{"0": "performance", "1": "performance", "12": "performance"}, "performance"},
		{"mixed", map[string]string{"0": "performance", "1": "powersave", "2": "performance", "3": "schedutil"}, "mixed:performance=2,powersave=1,schedutil=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := copyTree(t, "rxe")
			files := map[string]string{"sys/devices/system/cpu/cpufreq/policy0/scaling_governor": "ignored\n"}
			for n, g := range tt.govs {
				p, c := cpu(n, g)
				files[p] = c
			}
			write(t, root, files)
			got, err := facts.Collect(source(root), "rxe0", 1, facts.PortAttrs{})
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Governor)
		})
	}
}

func TestCollectErrors(t *testing.T) {
	dev := "sys/class/infiniband/mlx5_0/"
	pci := dev + "device/"
	tests := []struct {
		name   string
		dev    string
		port   int
		files  map[string]string
		remove string
		attrs  facts.PortAttrs
		want   []string // each in the error
	}{
		{name: "missing device dir", dev: "mlx5_9", want: []string{"mlx5_9 port 1: no device", "infiniband/mlx5_9"}},
		{name: "bad device name", dev: "../x", want: []string{`"../x"`}},
		{name: "missing port", port: 2, want: []string{"mlx5_0 port 2: no such port", "ports/2"}},
		{name: "unparsable rate", files: map[string]string{dev + "ports/1/rate": "fast\n"}, want: []string{"ports/1/rate", `"fast"`}},
		{name: "rate disagrees with itself", files: map[string]string{dev + "ports/1/rate": "56 Gb/sec (4X EDR)\n"}, want: []string{"ports/1/rate", "4X EDR is 100 Gb/s, not 56"}},
		{name: "missing rate", remove: dev + "ports/1/rate", want: []string{"ports/1/rate", "no such file"}},
		{name: "verbs width", attrs: facts.PortAttrs{ActiveWidth: 2}, want: []string{"ports/1/rate", `"100 Gb/sec (4X EDR)"`, "verbs says 2 lanes"}},
		{name: "verbs speed", attrs: facts.PortAttrs{ActiveSpeed: 14}, want: []string{"ports/1/rate", "4X × 14 Gb/s = 56 Gb/s"}},
		{name: "verbs MTU", attrs: facts.PortAttrs{ActiveMTU: 1500}, want: []string{"active MTU 1500"}},
		{name: "verbs width out of range", attrs: facts.PortAttrs{ActiveWidth: 3}, want: []string{"active width 3"}},
		{name: "pcie speed", files: map[string]string{pci + "current_link_speed": "fast\n"}, want: []string{"current_link_speed", `"fast"`}},
		{name: "pcie width", files: map[string]string{pci + "max_link_width": "x-1\n"}, want: []string{"max_link_width", `"x-1"`}},
		{name: "numa node", files: map[string]string{pci + "numa_node": "one\n"}, want: []string{"numa_node", `"one"`}},
		{name: "governor", files: map[string]string{"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "\n"}, want: []string{"cpu1/cpufreq/scaling_governor", `""`}},
		{name: "kernel", remove: "proc/sys/kernel/osrelease", want: []string{"osrelease", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := copyTree(t, "mlx5")
			write(t, root, tt.files)
			if tt.remove != "" {
				require.NoError(t, os.Remove(filepath.Join(root, tt.remove)))
			}
			d, port := tt.dev, tt.port
			if d == "" {
				d = "mlx5_0"
			}
			if port == 0 {
				port = 1
			}
			_, err := facts.Collect(source(root), d, port, tt.attrs)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestConfigLines(t *testing.T) {
	f := rxeFacts
	f.FW = "1.2\n3 "
	assert.Equal(t, []string{
		"fabric.node.node-b.dev: rxe0",
		"fabric.node.node-b.fw: 1.2 3",
		"fabric.node.node-b.kernel: 6.1.0-28-amd64",
		"fabric.node.node-b.mtu: 1024",
		"fabric.node.node-b.link-speed: 10 Gb/sec (1X QDR)",
		"fabric.node.node-b.link-rate-mbps: 1250",
		"fabric.node.node-b.gid-type: RoCE v2",
	}, f.ConfigLines("Node-B"))
	assert.Equal(t, "1.2\n3 ", f.FW, "ConfigLines leaves its Facts alone")
}
