package loopback

import (
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"
)

// NetModules are the modules a guest with a NIC loads besides
// [GuestModules]: failover, net_failover and virtio_net (in this order,
// after virtio_pci) for the card; sch_netem so that a job can add delay
// or loss with tc, and sch_prio and cls_u32 so that it can do so to one
// destination only (a prio band with netem, a u32 filter on the
// address: ci/fabric's bad link); sch_ingress and act_gact so that it can
// drop incoming packets with a u32 filter (ci/bringup.sh's blocked UDP
// port 4791).
var NetModules = []string{"failover", "net_failover", "virtio_net", "sch_netem", "sch_prio", "cls_u32", "sch_ingress", "act_gact"}

// withNetModules returns mods with [NetModules] added: the driver chain
// right after virtio_pci (or at the end when virtio_pci is not listed),
// the tc modules (sch_, cls_, act_) at the end. Modules already listed stay where they are.
func withNetModules(mods []string) []string {
	out := slices.Clone(mods)
	at := slices.Index(out, "virtio_pci") + 1
	if at == 0 {
		at = len(out)
	}
	for _, m := range NetModules {
		if slices.Contains(out, m) {
			continue
		}
		if strings.HasPrefix(m, "sch_") || strings.HasPrefix(m, "cls_") || strings.HasPrefix(m, "act_") {
			out = append(out, m)
			continue
		}
		out = slices.Insert(out, at, m)
		at++
	}
	return out
}

// PairSide is one guest's place on the pair's link.
type PairSide struct {
	// Role is "a" or "b".
	Role string
	// Addr is the guest's IPv4 address on the link (prefix length 24).
	Addr string
	// MAC is its NIC's Ethernet address.
	MAC string
}

// PairSides are the two guests of a [Pair].
// 192.0.2.0/24 is TEST-NET-1 (RFC 5737); 52:54:00 is qemu's prefix.
var PairSides = [2]PairSide{
	{Role: "a", Addr: "192.0.2.1", MAC: "52:54:00:00:02:01"},
	{Role: "b", Addr: "192.0.2.2", MAC: "52:54:00:00:02:02"},
}

// Pair boots two guests whose rxe devices reach each other over a
// virtual Ethernet link, and runs one job in each: see [Pair.Run].
type Pair struct {
	// A and B are the two guests. Run gives each a NIC, adds
	// [NetModules] to its modules and ignores its Timeout; it does not
	// change the VMs themselves.
	A, B *VM
	// Timeout bounds the whole run of both guests, boots included. Zero
	// means 30 minutes.
	Timeout time.Duration
}

// Sizes of each guest of a pair made by NewPair: the two guests share the
// host's cores.
const (
	pairMemoryMiB = 1024
	pairCPUs      = 1
)

// NewPair returns a Pair of two VMs as [NewVM] makes them, each with 1024
// MiB and 1 vCPU.
func NewPair() (*Pair, error) {
	a, err := NewVM()
	if err != nil {
		return nil, err
	}
	a.MemoryMiB, a.CPUs = pairMemoryMiB, pairCPUs
	b := *a
	return &Pair{A: a, B: &b, Timeout: defaultTimeout}, nil
}

// pairJob returns job as guest side i of a pair runs it: on its NIC, with
// RDMA_ROLE, RDMA_LOCAL_ADDR and RDMA_PEER_ADDR in its environment.
func pairJob(job Job, i int) Job {
	me, peer := PairSides[i], PairSides[1-i]
	job.Net = &GuestNet{MAC: me.MAC, Addr: me.Addr + "/24"}
	job.Env = append(slices.Clone(job.Env),
		"RDMA_ROLE="+me.Role, "RDMA_LOCAL_ADDR="+me.Addr, "RDMA_PEER_ADDR="+peer.Addr)
	return job
}

// pairVM returns a copy of vm as guest side i of a pair whose qemus use
// UDP ports ports[0] (a) and ports[1] (b).
func pairVM(vm *VM, i int, ports [2]int, timeout time.Duration) *VM {
	c := *vm
	c.NIC = &NIC{MAC: PairSides[i].MAC, Port: ports[i], PeerPort: ports[1-i]}
	c.LoadModules = withNetModules(vm.modules())
	c.Timeout = timeout
	return &c
}

// portAttempts is how often Run tries new ports when a qemu cannot bind
// the one it was given (another process took it meanwhile).
const portAttempts = 3

// Run boots both guests at the same time and runs jobA in A and jobB in B,
// each with its output streamed to its writer (nil discards it), and
// returns both commands' exit statuses.
//
// The two qemus exchange the guests' frames as UDP datagrams between two
// free ports of 127.0.0.1 (see [NIC]). In each guest rxe0 runs on eth0:
// A has 192.0.2.1/24, B 192.0.2.2/24. Each job's environment gets
// RDMA_ROLE (a or b), RDMA_LOCAL_ADDR, RDMA_PEER_ADDR (the other's address)
// and, set in the guest, RDMA_NETDEV (the interface, eth0).
//
// When one guest fails (see [VM.Run]) or its command exits with a non-zero
// status, the other guest is stopped at once: its side of a
// client/server pair would otherwise wait for the deadline. The error is
// then non-nil, says which guest failed and why (with its console tail),
// and the stopped guest's code is -1. When both commands end by
// themselves the error is nil, whatever their statuses.
func (p *Pair) Run(ctx context.Context, jobA, jobB Job, outA, outB io.Writer) (codeA, codeB int, err error) {
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = defaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		ports, err := freePorts()
		if err != nil {
			return -1, -1, err
		}
		jobs, outs := [2]Job{jobA, jobB}, [2]io.Writer{outA, outB}
		guests := make([]guest, 2)
		for i, vm := range []*VM{p.A, p.B} {
			guests[i] = guest{name: PairSides[i].Role, vm: pairVM(vm, i, ports, timeout), job: pairJob(jobs[i], i), out: outs[i]}
		}
		res, retry := runGuests(ctx, guests)
		if retry && attempt < portAttempts {
			continue
		}
		if msg, cause := groupError(guests, res); msg != "" {
			return res[0].code, res[1].code, &PairError{msg: msg, err: cause}
		}
		return res[0].code, res[1].code, nil
	}
}

// PairError is the error of a pair's run that one guest ended badly: a
// [ClusterError] whose guests are named a and b.
type PairError = ClusterError

// freePorts returns two UDP ports of 127.0.0.1 that were free a moment ago.
func freePorts() ([2]int, error) {
	var ports [2]int
	var conns []net.PacketConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range ports {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return ports, fmt.Errorf("loopback: finding a free UDP port: %w", err)
		}
		conns = append(conns, c)
		ports[i] = c.LocalAddr().(*net.UDPAddr).Port
	}
	return ports, nil
}
