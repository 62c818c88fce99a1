package facts_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
)

// ecnTree writes a netdev's ecn/ enable files: role → priority → value.
func ecnTree(t *testing.T, root, netdev string, en map[string]map[string]string) {
	files := make(map[string]string)
	for role, prios := range en {
		for p, v := range prios {
			files["sys/class/net/"+netdev+"/ecn/"+role+"/enable/"+p] = v + "\n"
		}
	}
	write(t, root, files)
}

func TestReadQoS(t *testing.T) {
	root := t.TempDir()
	ecnTree(t, root, "ens1f0", map[string]map[string]string{
		"roce_np": {"0": "0", "3": "1", "4": "1", "7": "0"},
		"roce_rp": {"0": "0", "1": "0"},
	})
	write(t, root, map[string]string{
		"sys/class/net/ens1f0/qos/trust":          "dscp\n",
		"sys/class/net/ens1f0/qos/pfc":            "PFC configuration:\n\tpriority 0 1 2 3\n\tenabled 0 0 0 1\n",
		"sys/class/net/ens1f0/ecn/roce_np/other":  "junk", // not a priority: ignored
		"sys/class/net/eth0/address":              "52:54:00:00:00:01\n",
		"sys/class/net/bad0/ecn/roce_np/enable/3": "2\n",
	})
	q, err := facts.ReadQoS(source(root), "ens1f0")
	require.NoError(t, err)
	assert.Equal(t, facts.QoS{ECNNP: "3,4", ECNRP: "none", Trust: "dscp", PFC: "PFC configuration: priority 0 1 2 3 enabled 0 0 0 1"}, q)
	assert.Equal(t, "ecn-np=3,4 ecn-rp=none trust=dscp pfc=PFC configuration: priority 0 1 2 3 enabled 0 0 0 1", q.String())

	q, err = facts.ReadQoS(source(root), "eth0")
	require.NoError(t, err)
	assert.Equal(t, facts.QoS{}, q, "a netdev without the settings (virtio under rxe)")
	assert.Contains(t, q.String(), "none readable")

	_, err = facts.ReadQoS(source(root), "bad0")
	assert.ErrorContains(t, err, `bad0/ecn/roce_np/enable/3 holds "2": want 0 or 1`)
	_, err = facts.ReadQoS(source(root), "../x")
	assert.ErrorContains(t, err, `netdev name "../x" is not a netdev's`)
}

// Collect finds a RoCE port's netdev through its GID table and files
// its QoS facts; ConfigLines writes them last.
func TestCollectQoS(t *testing.T) {
	root := copyTree(t, "rxe")
	write(t, root, map[string]string{"sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0": "eth0\n"})
	ecnTree(t, root, "eth0", map[string]map[string]string{"roce_np": {"3": "1"}, "roce_rp": {"3": "1"}})
	got, err := facts.Collect(source(root), "rxe0", 1, facts.PortAttrs{ActiveMTU: 1024, ActiveWidth: 1, ActiveSpeed: 10, GIDType: "RoCE v2"})
	require.NoError(t, err)
	want := rxeFacts
	want.Netdev, want.ECNNP, want.ECNRP = "eth0", "3", "3"
	assert.Equal(t, want, got)
	lines := got.ConfigLines("node1")
	assert.Equal(t, []string{"fabric.node.node1.netdev: eth0", "fabric.node.node1.ecn-np: 3", "fabric.node.node1.ecn-rp: 3"}, lines[len(lines)-3:])

	write(t, root, map[string]string{"sys/class/net/eth0/ecn/roce_np/enable/3": "x\n"})
	_, err = facts.Collect(source(root), "rxe0", 1, facts.PortAttrs{})
	assert.ErrorContains(t, err, filepath.Join("eth0", "ecn", "roce_np", "enable", "3")+` holds "x"`)
}
