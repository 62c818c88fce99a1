package loopback

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The tests named TestVMCluster* boot several qemu guests at once (1 vCPU
// and 256 MiB each) and run only with RDMA_VM_TESTS=1.

// realCluster returns a Cluster of n guests for this host that share a
// scratch directory, or skips the test unless the VM tests are enabled.
// Every console is logged when the test fails.
func realCluster(t *testing.T, n int) *Cluster {
	t.Helper()
	skipUnlessVMTests(t, fmt.Sprintf("%d qemu guests", n))
	c, err := NewCluster(n)
	require.NoError(t, err)
	// A hard stop: 4 guests boot in 15-60 s on a 2-core host, but the
	// vCPUs of all of them share those 2 cores.
	c.Timeout = 4 * time.Minute
	share := t.TempDir()
	consoles := make([]bytes.Buffer, n)
	for i, vm := range c.VMs {
		vm.Share, vm.Console = share, &consoles[i]
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i := range consoles {
				t.Logf("guest node%d console:\n%s", i+1, consoles[i].String())
			}
		}
	})
	return c
}

// clusterRun is one run of a cluster: each guest ran a shell script.
type clusterRun struct {
	codes []int
	outs  []string
	err   error
	took  time.Duration
}

// runCluster runs script in every guest of c, in the share, and logs
// the outputs.
func runCluster(t *testing.T, c *Cluster, script string) clusterRun {
	t.Helper()
	n := len(c.VMs)
	jobs := make([]Job, n)
	bufs := make([]bytes.Buffer, n)
	outs := make([]io.Writer, n)
	for i := range jobs {
		jobs[i] = Job{Args: []string{"sh", "-c", script}, Dir: c.VMs[0].Share, Env: []string{guestPath, "SHARE=" + c.VMs[0].Share}}
		outs[i] = &bufs[i]
	}
	start := time.Now()
	codes, err := c.Run(context.Background(), jobs, outs)
	r := clusterRun{codes: codes, err: err, took: time.Since(start)}
	t.Logf("Cluster.Run of %d guests took %s (wall clock, from the call to its return): codes %v, err %v", n, r.took.Round(time.Millisecond), codes, err)
	for i := range bufs {
		r.outs = append(r.outs, bufs[i].String())
		t.Logf("guest node%d output:\n%s", i+1, bufs[i].String())
	}
	return r
}

// clusterBarrier makes each guest wait (up to 120 s) until every guest
// got here too, through the share all mount: a guest that finishes
// powers off, and its NIC goes with it.
const clusterBarrier = `barrier() { touch "$SHARE/$RDMA_NODE_NAME.$1"; n=$(echo $RDMA_NODES | wc -w)
  i=0; while [ $(ls "$SHARE" | grep -c "\.$1\$") -lt $n ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done; }
`

// TestVMClusterPing boots 4 guests and checks that each reaches every
// other: rxe0 is ACTIVE everywhere, every guest pings every other's
// address (by name, through the /etc/hosts the cluster gives it), and
// ibv_rc_pingpong runs an RC connection between node1 and node2 and
// another between node3 and node4 at the same time.
func TestVMClusterPing(t *testing.T) {
	c := realCluster(t, 4)
	script := clusterBarrier + `set -u
echo "name $(hostname) index $RDMA_NODE_INDEX local $RDMA_LOCAL_ADDR netdev $RDMA_NETDEV nodes $RDMA_NODES"
ibv_devinfo -d rxe0 | grep -E 'state|link_layer'
barrier up
rc=0
for name in $RDMA_NODE_NAMES; do
  [ "$name" = "$RDMA_NODE_NAME" ] && continue
  i=0; until busybox ping -c 1 -W 1 $name >/dev/null 2>&1 || [ $i -ge 30 ]; do i=$((i+1)); done
  busybox ping -c 3 -W 5 $name | grep -E '^PING|packets transmitted' || rc=1
done
barrier pinged
# RC ping-pong: node1 serves node2, node3 serves node4 (GID index 1 is
# rxe0's IPv4 address).
set -- $RDMA_NODES
case $RDMA_NODE_INDEX in
0|2) timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 200 || rc=1 ;;
1|3) [ $RDMA_NODE_INDEX = 1 ] && server=$1 || server=$3
  i=0; until timeout 60 ibv_rc_pingpong -d rxe0 -g 1 -n 200 $server > /tmp/pp.log 2>&1; do
    i=$((i+1)); [ $i -ge 30 ] && { cat /tmp/pp.log; rc=1; break; }; sleep 1; done
  cat /tmp/pp.log ;;
esac
barrier done; exit $rc`
	r := runCluster(t, c, script)
	require.NoError(t, r.err)
	assert.Equal(t, []int{0, 0, 0, 0}, r.codes)
	addrs := "192.0.2.1 192.0.2.2 192.0.2.3 192.0.2.4"
	iters := regexp.MustCompile(`(?m)^200 iters in [0-9.]+ seconds = ([0-9.]+) usec/iter$`)
	for i, out := range r.outs {
		name := fmt.Sprintf("node%d", i+1)
		assert.Contains(t, out, fmt.Sprintf("name %s index %d local 192.0.2.%d netdev eth0 nodes %s", name, i, i+1, addrs))
		assert.Contains(t, out, "PORT_ACTIVE", name)
		assert.Contains(t, out, "link_layer:\t\tEthernet", name)
		for j := range r.outs {
			if j == i {
				continue
			}
			assert.Contains(t, out, fmt.Sprintf("PING node%d (192.0.2.%d)", j+1, j+1), "%s resolves node%d", name, j+1)
		}
		assert.Equal(t, 3, strings.Count(out, "3 packets transmitted, 3 packets received, 0% packet loss"), "%s pings the 3 others", name)
		m := iters.FindStringSubmatch(out)
		if assert.NotNil(t, m, "%s: ibv_rc_pingpong's result", name) {
			t.Logf("%s: ibv_rc_pingpong, 200 round trips of 4096 B, both pairs at once (4 busy vCPUs on the host's cores): %s µs each", name, m[1])
		}
	}
}
