package loopback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterNodes(t *testing.T) {
	nodes, err := ClusterNodes(4, nil)
	require.NoError(t, err)
	assert.Equal(t, []ClusterNode{
		{Name: "node1", Addr: "192.0.2.1", MAC: "52:54:00:00:02:01"},
		{Name: "node2", Addr: "192.0.2.2", MAC: "52:54:00:00:02:02"},
		{Name: "node3", Addr: "192.0.2.3", MAC: "52:54:00:00:02:03"},
		{Name: "node4", Addr: "192.0.2.4", MAC: "52:54:00:00:02:04"},
	}, nodes)
	two, err := ClusterNodes(2, nil)
	require.NoError(t, err)
	for i, n := range two {
		assert.Equal(t, PairSides[i].Addr, n.Addr, "a pair's addresses")
		assert.Equal(t, PairSides[i].MAC, n.MAC, "a pair's MACs")
	}
	eight, err := ClusterNodes(MaxClusterSize, []string{"a", "b", "c", "d", "e", "f", "g", "h-8"})
	require.NoError(t, err)
	assert.Equal(t, ClusterNode{Name: "h-8", Addr: "192.0.2.8", MAC: "52:54:00:00:02:08"}, eight[7])

	for _, tt := range []struct {
		n       int
		names   []string
		wantErr string
	}{
		{1, nil, "2 to 8 guests, not 1"},
		{9, nil, "2 to 8 guests, not 9"},
		{3, []string{"a", "b"}, "2 names for 3 guests"},
		{2, []string{"a", "a"}, `two guests are named "a"`},
		{2, []string{"a", "b_c"}, `guest 1's name "b_c" is not a host name`},
		{2, []string{"", "b"}, `guest 0's name "" is not a host name`},
		{2, []string{"-a", "b"}, `name "-a" is not a host name`},
		{2, []string{"a", strings.Repeat("x", 64)}, "is not a host name"},
	} {
		_, err := ClusterNodes(tt.n, tt.names)
		assert.ErrorContains(t, err, tt.wantErr, "%d %q", tt.n, tt.names)
	}
}

func TestClusterJobAndVM(t *testing.T) {
	nodes, err := ClusterNodes(3, nil)
	require.NoError(t, err)
	job := Job{Args: []string{"srun"}, Dir: "/work", Env: []string{"PATH=/bin"}}
	j := clusterJob(job, 1, nodes)
	assert.Equal(t, []string{"PATH=/bin"}, job.Env, "the caller's job is not modified")
	assert.Nil(t, job.Net)
	assert.Empty(t, job.Hostname)
	assert.Equal(t, []string{"PATH=/bin", "RDMA_NODE_INDEX=1", "RDMA_NODE_NAME=node2",
		"RDMA_NODES=192.0.2.1 192.0.2.2 192.0.2.3", "RDMA_NODE_NAMES=node1 node2 node3", "RDMA_LOCAL_ADDR=192.0.2.2"}, j.Env)
	assert.Equal(t, "node2", j.Hostname)
	assert.Equal(t, &GuestNet{MAC: "52:54:00:00:02:02", Addr: "192.0.2.2/24",
		Hosts: []string{"192.0.2.1\tnode1", "192.0.2.2\tnode2", "192.0.2.3\tnode3"}}, j.Net)

	vm := &VM{Timeout: time.Hour}
	v := clusterVM(vm, 2, nodes, "239.1.2.3:4000", time.Minute)
	assert.Equal(t, &NIC{MAC: "52:54:00:00:02:03", Group: "239.1.2.3:4000"}, v.NIC)
	assert.Equal(t, withNetModules(GuestModules), v.LoadModules)
	assert.Equal(t, time.Minute, v.Timeout, "the cluster's deadline replaces the VM's")
	assert.Nil(t, vm.NIC, "the caller's VM is not modified")
	assert.Equal(t, time.Hour, vm.Timeout)

	args := v.QemuArgs("/tmp/initrd", 3, 4)
	assert.Equal(t, []string{"socket,id=n0,mcast=239.1.2.3:4000,localaddr=127.0.0.1"}, argValues(args, "-netdev"))
	assert.Contains(t, argValues(args, "-device"), "virtio-net-pci,netdev=n0,mac=52:54:00:00:02:03")
}

func TestMulticastGroup(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		g, err := multicastGroup()
		require.NoError(t, err)
		host, port, err := net.SplitHostPort(g)
		require.NoError(t, err, g)
		ip := net.ParseIP(host).To4()
		require.NotNil(t, ip, g)
		assert.Equal(t, byte(239), ip[0], "administratively scoped: %s", g)
		assert.NotContains(t, []byte{0, 255}, ip[3], g)
		assert.NotEqual(t, "0", port)
		seen[host] = true
	}
	assert.Greater(t, len(seen), 1, "a random group each time")
}

func TestInitramfsHostnameAndHosts(t *testing.T) {
	vm := fakeVM(t)
	nodes, err := ClusterNodes(2, []string{"alpha", "beta"})
	require.NoError(t, err)
	e := initramfsEntries(t, vm, clusterJob(Job{Args: []string{"true"}}, 0, nodes))
	assert.Equal(t, "alpha", string(e["hostname"].data))
	assert.Equal(t, "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n192.0.2.1\talpha\n192.0.2.2\tbeta\n", string(e["hosts"].data))
	assert.Contains(t, initScript, `hostname "$(cat /hostname)"`)
	assert.Contains(t, initScript, "mount --bind /hosts /newroot/etc/hosts")

	plain := initramfsEntries(t, vm, Job{Args: []string{"true"}})
	assert.NotContains(t, plain, "hostname", "no host name: the kernel's stays")
	assert.NotContains(t, plain, "hosts", "no hosts: the host's /etc/hosts stays")
}

// fakeCluster returns a Cluster of fake VMs whose qemus are the shell
// scripts bodies (see writeScript; each sees its own $DIR), and their
// directories.
func fakeCluster(t *testing.T, bodies ...string) (*Cluster, []string) {
	t.Helper()
	c := &Cluster{Timeout: 20 * time.Second}
	var dirs []string
	for _, body := range bodies {
		dir := t.TempDir()
		vm := fakeVM(t)
		vm.Qemu = writeScript(t, dir, `echo "$@" > "$DIR/args"
`+body)
		c.VMs = append(c.VMs, vm)
		dirs = append(dirs, dir)
	}
	return c, dirs
}

func TestClusterRunWithFakeQemu(t *testing.T) {
	var bodies []string
	for i := range 4 {
		bodies = append(bodies, saveJob+fmt.Sprintf(`sleep 0.%d; printf 'from %d\n' >&4; echo RDMABENCH-EXIT=%d >&3`, 2*i, i, i/3*7))
	}
	c, dirs := fakeCluster(t, bodies...)
	c.Names = []string{"w", "x", "y", "z"}
	bufs := make([]bytes.Buffer, 4)
	outs := []io.Writer{&bufs[0], &bufs[1], nil, &bufs[3]}
	job := Job{Args: []string{"true"}, Env: []string{"X=1"}}
	codes, err := c.Run(context.Background(), []Job{job, job, job, job}, outs)
	require.NoError(t, err, "every command ended by itself (z last, with 7: nobody was left to stop)")
	assert.Equal(t, []int{0, 0, 0, 7}, codes)
	assert.Equal(t, "from 0\n", bufs[0].String())
	assert.Equal(t, "from 3\n", bufs[3].String())

	nodes, err := ClusterNodes(4, c.Names)
	require.NoError(t, err)
	var group string
	for i, dir := range dirs {
		args, err := os.ReadFile(filepath.Join(dir, "args"))
		require.NoError(t, err)
		netdev := argValues(strings.Fields(string(args)), "-netdev")
		require.Len(t, netdev, 1)
		g, ok := strings.CutPrefix(netdev[0], "socket,id=n0,mcast=")
		require.True(t, ok, netdev[0])
		g, ok = strings.CutSuffix(g, ",localaddr=127.0.0.1")
		require.True(t, ok, netdev[0])
		if i == 0 {
			group = g
		}
		assert.Equal(t, group, g, "one L2 for all")

		img, err := os.ReadFile(filepath.Join(dir, "initrd"))
		require.NoError(t, err)
		var got Job
		require.NoError(t, json.Unmarshal(entryMap(t, readNewc(t, img))["job.json"].data, &got))
		assert.Equal(t, clusterJob(job, i, nodes), got, "guest %s's job", nodes[i].Name)
	}
}

func TestClusterRunFailures(t *testing.T) {
	const sleep = "exec sleep 100"
	tests := []struct {
		name      string
		bodies    []string
		timeout   time.Duration
		wantCodes []int
		wantErr   []string
		wantCause bool // errors.Unwrap gives a guest's failure
	}{
		{
			name:      "node3's command fails: the others are stopped",
			bodies:    []string{sleep, sleep, `echo RDMABENCH-EXIT=3 >&3`, sleep},
			wantCodes: []int{-1, -1, 3, -1},
			wantErr:   []string{"loopback: guest node3's command exited with status 3; guests node1, node2, node4 were stopped because guest node3 ended first"},
		},
		{
			name:      "a guest that ended well is not stopped",
			bodies:    []string{`echo RDMABENCH-EXIT=0 >&3`, `sleep 0.5; echo "booting node2" >&3; echo "RDMABENCH-FATAL: rdma link add rxe0 failed" >&3`, sleep},
			wantCodes: []int{0, -1, -1},
			wantErr:   []string{"loopback: guest node2: guest failed: rdma link add rxe0 failed", "booting node2", "; guest node3 was stopped because guest node2 ended first"},
			wantCause: true,
		},
		{
			name:      "all hang: the one deadline ends all",
			bodies:    []string{sleep, sleep, sleep},
			timeout:   2 * time.Second,
			wantCodes: []int{-1, -1, -1},
			wantErr:   []string{"guest node1: the guest was killed after", "guest node2: the guest was killed after", "guest node3: the guest was killed after", "exceeded its deadline of 2s"},
			wantCause: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := fakeCluster(t, tt.bodies...)
			if tt.timeout > 0 {
				c.Timeout = tt.timeout
			}
			jobs := make([]Job, len(tt.bodies))
			for i := range jobs {
				jobs[i] = Job{Args: []string{"true"}}
			}
			start := time.Now()
			codes, err := c.Run(context.Background(), jobs, nil)
			took := time.Since(start)
			assert.Equal(t, tt.wantCodes, codes)
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
			var ce *ClusterError
			assert.True(t, errors.As(err, &ce), "a *ClusterError")
			assert.Equal(t, tt.wantCause, errors.Unwrap(err) != nil)
			assert.Less(t, took, 10*time.Second, "the others are stopped, not waited for")
		})
	}
}

func TestClusterRunRefuses(t *testing.T) {
	c, _ := fakeCluster(t, "exit 1", "exit 1")
	_, err := c.Run(context.Background(), []Job{{Args: []string{"true"}}}, nil)
	assert.ErrorContains(t, err, "1 jobs for 2 guests")
	_, err = c.Run(context.Background(), []Job{{Args: []string{"true"}}, {Args: []string{"true"}}}, []io.Writer{nil})
	assert.ErrorContains(t, err, "1 output writers for 2 guests")
	c.Names = []string{"a"}
	_, err = c.Run(context.Background(), []Job{{Args: []string{"true"}}, {Args: []string{"true"}}}, nil)
	assert.ErrorContains(t, err, "1 names for 2 guests")
	c.VMs = c.VMs[:1]
	c.Names = nil
	_, err = c.Run(context.Background(), []Job{{Args: []string{"true"}}}, nil)
	assert.ErrorContains(t, err, "2 to 8 guests, not 1")
}
