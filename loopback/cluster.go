package loopback

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxClusterSize is the largest [Cluster]: its guests share the host's
// cores (one vCPU each), and past 8 of them on a small machine the boot
// alone takes minutes under TCG.
const MaxClusterSize = 8

// ClusterNode is one guest's place on a cluster's L2.
type ClusterNode struct {
	// Name is the guest's host name (node1, node2, ... by default).
	Name string
	// Addr is its IPv4 address on eth0 (prefix length 24).
	Addr string
	// MAC is its NIC's Ethernet address.
	MAC string
}

// ClusterNodes returns the places of n guests named names (nil: node1 ..
// nodeN): guest i has 192.0.2.(i+1) and MAC 52:54:00:00:02:(i+1), as a
// [Pair]'s two guests do.
func ClusterNodes(n int, names []string) ([]ClusterNode, error) {
	if n < 2 || n > MaxClusterSize {
		return nil, fmt.Errorf("loopback: a cluster has 2 to %d guests, not %d", MaxClusterSize, n)
	}
	if names != nil && len(names) != n {
		return nil, fmt.Errorf("loopback: %d names for %d guests", len(names), n)
	}
	nodes := make([]ClusterNode, n)
	for i := range nodes {
		name := "node" + strconv.Itoa(i+1)
		if names != nil {
			name = names[i]
		}
		if !validHostname(name) {
			return nil, fmt.Errorf("loopback: guest %d's name %q is not a host name (letters, digits and '-', 1 to 63 of them, not starting with '-')", i, name)
		}
		if slices.ContainsFunc(nodes[:i], func(o ClusterNode) bool { return o.Name == name }) {
			return nil, fmt.Errorf("loopback: two guests are named %q", name)
		}
		nodes[i] = ClusterNode{Name: name, Addr: fmt.Sprintf("192.0.2.%d", i+1), MAC: fmt.Sprintf("52:54:00:00:02:%02x", i+1)}
	}
	return nodes, nil
}

// validHostname tells whether s is one label of a host name (RFC 1123).
func validHostname(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Cluster boots N guests (2 to [MaxClusterSize]) on one virtual Ethernet
// segment, each with rxe0 on its eth0, and runs one job in each: see
// [Cluster.Run]. A [Pair] is the two-guest case with roles instead of
// names and a point-to-point wire instead of the hub.
type Cluster struct {
	// VMs are the guests, in order. Run gives each a NIC, adds
	// [NetModules] to its modules and ignores its Timeout; it does not
	// change the VMs themselves.
	VMs []*VM
	// Names are the guests' host names, in order; nil means node1 ..
	// nodeN.
	Names []string
	// Timeout bounds the whole run of all guests, boots included. Zero
	// means 30 minutes.
	Timeout time.Duration
}

// Sizes of each guest of a cluster made by NewCluster. 1 vCPU: the guests
// share the host's cores, and one vCPU each keeps N guests from fighting
// over them more than they must. 256 MiB is twice the smallest that ran
// the Slurm pass of ci/fabric (128 MiB; 96 MiB panics while the kernel
// unpacks the initramfs): the guests' files are on the host (9p), so
// their memory is the kernel's, the initramfs's, the daemons' and /tmp's,
// and the rest is room for a job's buffers and memory registrations.
const (
	clusterMemoryMiB = 256
	clusterCPUs      = 1
)

// NewCluster returns a Cluster of n VMs as [NewVM] makes them, each with
// 256 MiB and 1 vCPU, named node1 .. nodeN.
func NewCluster(n int) (*Cluster, error) {
	if _, err := ClusterNodes(n, nil); err != nil {
		return nil, err
	}
	vm, err := NewVM()
	if err != nil {
		return nil, err
	}
	vm.MemoryMiB, vm.CPUs = clusterMemoryMiB, clusterCPUs
	c := &Cluster{Timeout: defaultTimeout}
	for range n {
		v := *vm
		c.VMs = append(c.VMs, &v)
	}
	return c, nil
}

// clusterJob returns job as guest i of nodes runs it: on its NIC, with its
// host name, an /etc/hosts that names every guest, and RDMA_NODE_INDEX,
// RDMA_NODE_NAME, RDMA_NODES, RDMA_NODE_NAMES and RDMA_LOCAL_ADDR in its
// environment.
func clusterJob(job Job, i int, nodes []ClusterNode) Job {
	me := nodes[i]
	var hosts, addrs, names []string
	for _, n := range nodes {
		hosts = append(hosts, n.Addr+"\t"+n.Name)
		addrs = append(addrs, n.Addr)
		names = append(names, n.Name)
	}
	job.Net = &GuestNet{MAC: me.MAC, Addr: me.Addr + "/24", Hosts: hosts}
	job.Hostname = me.Name
	job.Env = append(slices.Clone(job.Env),
		"RDMA_NODE_INDEX="+strconv.Itoa(i), "RDMA_NODE_NAME="+me.Name,
		"RDMA_NODES="+strings.Join(addrs, " "), "RDMA_NODE_NAMES="+strings.Join(names, " "),
		"RDMA_LOCAL_ADDR="+me.Addr)
	return job
}

// clusterVM returns a copy of vm as guest i of nodes on the multicast
// group (see [NIC]).
func clusterVM(vm *VM, i int, nodes []ClusterNode, group string, timeout time.Duration) *VM {
	c := *vm
	c.NIC = &NIC{MAC: nodes[i].MAC, Group: group}
	c.LoadModules = withNetModules(vm.modules())
	c.Timeout = timeout
	return &c
}

// Run boots all guests at the same time, runs jobs[i] in guest i with its
// output streamed to outs[i] (outs may be nil, and so may any of its
// writers: the output is then discarded) and returns every command's
// exit status, in order.
//
// The guests' NICs are on one virtual L2: every qemu sends the frames of
// its guest to a multicast group on 127.0.0.1 that all of them joined (a
// hub; see the package documentation for why). Guest i has
// 192.0.2.(i+1)/24 on eth0, with rxe0 on it, its name as host name, and
// an /etc/hosts that names all guests. Its job's environment gets
// RDMA_NODE_INDEX (i, from 0), RDMA_NODE_NAME, RDMA_NODES (every guest's
// address, space-separated, in order), RDMA_NODE_NAMES (their names, in
// the same order), RDMA_LOCAL_ADDR and, set in the guest, RDMA_NETDEV
// (eth0).
//
// When one guest fails (see [VM.Run]) or its command exits with a non-zero
// status, all the others still running are stopped at once. The error is
// then a [*ClusterError] that names the guest that failed and why (with
// its console tail) and the ones that were stopped, whose codes are -1.
// When every command ends by itself the error is nil, whatever the
// statuses.
func (c *Cluster) Run(ctx context.Context, jobs []Job, outs []io.Writer) ([]int, error) {
	nodes, err := ClusterNodes(len(c.VMs), c.Names)
	if err != nil {
		return nil, err
	}
	if len(jobs) != len(nodes) {
		return nil, fmt.Errorf("loopback: %d jobs for %d guests", len(jobs), len(nodes))
	}
	if outs != nil && len(outs) != len(nodes) {
		return nil, fmt.Errorf("loopback: %d output writers for %d guests", len(outs), len(nodes))
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	group, err := multicastGroup()
	if err != nil {
		return nil, err
	}
	guests := make([]guest, len(nodes))
	for i := range guests {
		guests[i] = guest{name: nodes[i].Name, vm: clusterVM(c.VMs[i], i, nodes, group, timeout), job: clusterJob(jobs[i], i, nodes)}
		if outs != nil {
			guests[i].out = outs[i]
		}
	}
	res, _ := runGuests(ctx, guests)
	codes := make([]int, len(res))
	for i, r := range res {
		codes[i] = r.code
	}
	if msg, cause := groupError(guests, res); msg != "" {
		return codes, &ClusterError{msg: msg, err: cause}
	}
	return codes, nil
}

// ClusterError is the error of a cluster's (or a pair's) run that one
// guest ended badly.
type ClusterError struct {
	msg string
	err error
}

// Error names each guest and what happened to it.
func (e *ClusterError) Error() string { return e.msg }

// Unwrap returns the first guest failure, if any (nil when only a command
// failed).
func (e *ClusterError) Unwrap() error { return e.err }

// multicastGroup returns a multicast group and port for one cluster's L2:
// a random group of 239.0.0.0/8 (administratively scoped, RFC 2365) and a
// UDP port that was free a moment ago, so that two clusters on the same
// host do not share a segment. The qemus join it on 127.0.0.1 only.
func multicastGroup() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("loopback: choosing a multicast group: %w", err)
	}
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loopback: finding a free UDP port: %w", err)
	}
	port := c.LocalAddr().(*net.UDPAddr).Port
	c.Close()
	// 239.x.y.0 and .255 are avoided: some stacks treat them specially.
	return fmt.Sprintf("239.%d.%d.%d:%d", b[0], b[1], 1+int(b[2])%254, port), nil
}

// guest is one guest of a group run: a pair's or a cluster's.
type guest struct {
	name string
	vm   *VM
	job  Job
	out  io.Writer
}

// guestResult is how one guest's Run ended.
type guestResult struct {
	code    int
	err     error
	stopped bool // runGuests stopped it because another guest ended badly
	by      int  // the guest whose end stopped it
}

// runGuests boots all guests at once and runs each one's job. The first
// guest to end badly (a failure, or a command's non-zero status) stops
// all the others still running, unless the deadline of ctx, which ends
// them all anyway, has passed. retry tells that a qemu could not bind its
// port (another process took it meanwhile).
func runGuests(ctx context.Context, guests []guest) (res []guestResult, retry bool) {
	type ended struct {
		i int
		r guestResult
	}
	done := make(chan ended, len(guests))
	cancels := make([]context.CancelFunc, len(guests))
	for i, g := range guests {
		gctx, cancel := context.WithCancel(ctx)
		cancels[i] = cancel
		defer cancel()
		go func() {
			code, err := g.vm.Run(gctx, g.job, g.out)
			done <- ended{i, guestResult{code: code, err: err}}
		}()
	}
	res = make([]guestResult, len(guests))
	first := -1 // the first guest that ended badly
	for range guests {
		e := <-done
		res[e.i] = e.r
		if first >= 0 {
			res[e.i].stopped = e.r.err != nil
			res[e.i].by = first
			continue
		}
		bad := e.r.err != nil || e.r.code != 0
		if bad && ctx.Err() == nil { // not the deadline, which ends all anyway
			first = e.i
			for _, stop := range cancels {
				stop()
			}
		}
	}
	for _, r := range res {
		if r.err != nil && strings.Contains(r.err.Error(), "Address already in use") {
			retry = true
		}
	}
	return res, retry
}

// groupError describes how a group run failed: the guests that failed
// first, then those stopped because of another, or "" when every guest
// ended by itself. cause is the first guest failure (not a command's
// status), if any.
func groupError(guests []guest, res []guestResult) (msg string, cause error) {
	var failed, stopped []string
	stoppedBy := map[int][]string{}
	var order []int
	stoppers := map[int]bool{}
	for _, r := range res {
		if r.stopped {
			stoppers[r.by] = true
		}
	}
	for i, r := range res {
		name := guests[i].name
		switch {
		case r.stopped:
			if _, ok := stoppedBy[r.by]; !ok {
				order = append(order, r.by)
			}
			stoppedBy[r.by] = append(stoppedBy[r.by], name)
		case r.err != nil:
			failed = append(failed, fmt.Sprintf("guest %s: %s", name, strings.TrimPrefix(r.err.Error(), "loopback: ")))
			if cause == nil {
				cause = r.err
			}
		case stoppers[i]:
			failed = append(failed, fmt.Sprintf("guest %s's command exited with status %d", name, r.code))
		}
	}
	for _, by := range order {
		names := stoppedBy[by]
		if len(names) == 1 {
			stopped = append(stopped, fmt.Sprintf("guest %s was stopped because guest %s ended first", names[0], guests[by].name))
		} else {
			stopped = append(stopped, fmt.Sprintf("guests %s were stopped because guest %s ended first", strings.Join(names, ", "), guests[by].name))
		}
	}
	if len(failed)+len(stopped) == 0 {
		return "", nil
	}
	// The stopped guests go last: a failure's console tail is long.
	return "loopback: " + strings.Join(append(failed, stopped...), "; "), cause
}
