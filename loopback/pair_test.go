package loopback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithNetModules(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{
			name: "driver chain after virtio_pci, netem at the end",
			in:   []string{"virtio", "virtio_pci", "9p", "rdma_rxe"},
			want: []string{"virtio", "virtio_pci", "failover", "net_failover", "virtio_net", "9p", "rdma_rxe", "sch_netem", "sch_prio", "cls_u32", "sch_ingress", "act_gact"},
		},
		{
			name: "no virtio_pci: all at the end",
			in:   []string{"ib_core", "rdma_rxe"},
			want: []string{"ib_core", "rdma_rxe", "failover", "net_failover", "virtio_net", "sch_netem", "sch_prio", "cls_u32", "sch_ingress", "act_gact"},
		},
		{
			name: "modules already listed stay where they are",
			in:   []string{"virtio_pci", "virtio_net", "failover", "net_failover", "rdma_rxe"},
			want: []string{"virtio_pci", "virtio_net", "failover", "net_failover", "rdma_rxe", "sch_netem", "sch_prio", "cls_u32", "sch_ingress", "act_gact"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Join(tt.in, " ")
			assert.Equal(t, tt.want, withNetModules(tt.in))
			assert.Equal(t, in, strings.Join(tt.in, " "), "the input is not modified")
		})
	}
	full := withNetModules(GuestModules)
	assert.Len(t, full, len(GuestModules)+len(NetModules))
	assert.Less(t, indexOf(full, "virtio_pci"), indexOf(full, "virtio_net"), "virtio_net needs virtio_pci")
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

func TestQemuArgsNIC(t *testing.T) {
	tests := []struct {
		name       string
		nic        *NIC
		wantNetdev []string
		wantNICDev []string
	}{
		{name: "no NIC"},
		{
			name:       "UDP datagrams from Port to PeerPort",
			nic:        &NIC{MAC: "52:54:00:00:02:01", Port: 40123, PeerPort: 40124},
			wantNetdev: []string{"socket,id=n0,udp=127.0.0.1:40124,localaddr=127.0.0.1:40123"},
			wantNICDev: []string{"virtio-net-pci,netdev=n0,mac=52:54:00:00:02:01"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := &VM{Kernel: "/boot/vmlinuz", NIC: tt.nic}
			args := vm.QemuArgs("/tmp/initrd", 3, 4)
			assert.Equal(t, tt.wantNetdev, argValues(args, "-netdev"))
			var nics []string
			for _, d := range argValues(args, "-device") {
				if strings.HasPrefix(d, "virtio-net-pci") {
					nics = append(nics, d)
				}
			}
			assert.Equal(t, tt.wantNICDev, nics)
			assert.Equal(t, []string{"none"}, argValues(args, "-nic"), "no default NIC to the outside either way")
		})
	}
}

func TestPairJobAndVM(t *testing.T) {
	job := Job{Args: []string{"ib_send_bw"}, Dir: "/work", Env: []string{"PATH=/bin"}}
	a, b := pairJob(job, 0), pairJob(job, 1)
	assert.Equal(t, []string{"PATH=/bin"}, job.Env, "the caller's job is not modified")
	assert.Nil(t, job.Net)
	assert.Equal(t, []string{"PATH=/bin", "RDMA_ROLE=a", "RDMA_LOCAL_ADDR=192.0.2.1", "RDMA_PEER_ADDR=192.0.2.2"}, a.Env)
	assert.Equal(t, []string{"PATH=/bin", "RDMA_ROLE=b", "RDMA_LOCAL_ADDR=192.0.2.2", "RDMA_PEER_ADDR=192.0.2.1"}, b.Env)
	assert.Equal(t, &GuestNet{MAC: "52:54:00:00:02:01", Addr: "192.0.2.1/24"}, a.Net)
	assert.Equal(t, &GuestNet{MAC: "52:54:00:00:02:02", Addr: "192.0.2.2/24"}, b.Net)

	vm := &VM{Timeout: time.Hour}
	ports := [2]int{40000, 40001}
	va, vb := pairVM(vm, 0, ports, time.Minute), pairVM(vm, 1, ports, time.Minute)
	assert.Equal(t, &NIC{MAC: a.Net.MAC, Port: 40000, PeerPort: 40001}, va.NIC)
	assert.Equal(t, &NIC{MAC: b.Net.MAC, Port: 40001, PeerPort: 40000}, vb.NIC)
	assert.Equal(t, withNetModules(GuestModules), va.LoadModules)
	assert.Equal(t, time.Minute, va.Timeout, "the pair's deadline replaces the VM's")
	assert.Nil(t, vm.NIC, "the caller's VM is not modified")
	assert.Nil(t, vm.LoadModules)
	assert.Equal(t, time.Hour, vm.Timeout)
}

func TestFreePorts(t *testing.T) {
	ports, err := freePorts()
	require.NoError(t, err)
	assert.Positive(t, ports[0])
	assert.Positive(t, ports[1])
	assert.NotEqual(t, ports[0], ports[1])
	for _, p := range ports {
		c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
		require.NoError(t, err, "freePorts released port %d", p)
		c.Close()
	}
}

// fakePair returns a Pair of fake VMs whose qemu are the shell scripts
// bodyA and bodyB (see writeScript; each sees its own $DIR).
func fakePair(t *testing.T, bodyA, bodyB string) (p *Pair, dirA, dirB string) {
	t.Helper()
	dirA, dirB = t.TempDir(), t.TempDir()
	a, b := fakeVM(t), fakeVM(t)
	a.Qemu = writeScript(t, dirA, `echo "$@" > "$DIR/args"
`+bodyA)
	b.Qemu = writeScript(t, dirB, `echo "$@" > "$DIR/args"
`+bodyB)
	p = &Pair{A: a, B: b, Timeout: 20 * time.Second}
	return p, dirA, dirB
}

// saveJob is a fake qemu's line that keeps the job of its initrd.
const saveJob = `for a in "$@"; do [ "$prev" = -initrd ] && cp "$a" "$DIR/initrd"; prev="$a"; done
`

func TestPairRunWithFakeQemu(t *testing.T) {
	p, dirA, dirB := fakePair(t,
		saveJob+`sleep 0.5; printf 'from a\n' >&4; echo RDMABENCH-EXIT=5 >&3`,
		saveJob+`printf 'from b\n' >&4; echo RDMABENCH-EXIT=0 >&3`)
	var outA, outB bytes.Buffer
	job := Job{Args: []string{"true"}, Env: []string{"X=1"}}
	codeA, codeB, err := p.Run(context.Background(), job, job, &outA, &outB)
	require.NoError(t, err, "both commands ended by themselves (b first, with 0)")
	assert.Equal(t, 5, codeA)
	assert.Equal(t, 0, codeB)
	assert.Equal(t, "from a\n", outA.String())
	assert.Equal(t, "from b\n", outB.String())

	argsA, err := os.ReadFile(filepath.Join(dirA, "args"))
	require.NoError(t, err)
	argsB, err := os.ReadFile(filepath.Join(dirB, "args"))
	require.NoError(t, err)
	netA := argValues(strings.Fields(string(argsA)), "-netdev")
	netB := argValues(strings.Fields(string(argsB)), "-netdev")
	require.Len(t, netA, 1)
	require.Len(t, netB, 1)
	var toA, fromA, toB, fromB int
	_, err = fmt.Sscanf(netA[0], "socket,id=n0,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d", &toB, &fromA)
	require.NoError(t, err, netA[0])
	_, err = fmt.Sscanf(netB[0], "socket,id=n0,udp=127.0.0.1:%d,localaddr=127.0.0.1:%d", &toA, &fromB)
	require.NoError(t, err, netB[0])
	assert.Equal(t, fromA, toA, "b sends to a's port")
	assert.Equal(t, fromB, toB, "a sends to b's port")

	for i, dir := range []string{dirA, dirB} {
		img, err := os.ReadFile(filepath.Join(dir, "initrd"))
		require.NoError(t, err)
		var got Job
		require.NoError(t, json.Unmarshal(entryMap(t, readNewc(t, img))["job.json"].data, &got))
		assert.Equal(t, pairJob(job, i), got, "guest %s's job", PairSides[i].Role)
	}
}

func TestPairRunFailures(t *testing.T) {
	const sleep = "exec sleep 100"
	tests := []struct {
		name         string
		bodyA, bodyB string
		timeout      time.Duration
		wantA, wantB int
		wantErr      []string
		wantCause    bool // errors.Unwrap gives a guest's failure
	}{
		{
			name:  "b's command fails: a is stopped",
			bodyA: `` + sleep,
			bodyB: `echo RDMABENCH-EXIT=3 >&3`,
			wantA: -1, wantB: 3,
			wantErr: []string{"loopback: guest b's command exited with status 3; guest a was stopped because guest b ended first"},
		},
		{
			name:  "a's guest fails: b is stopped, a's console is in the error",
			bodyA: `sleep 0.5; echo "booting a" >&3; echo "RDMABENCH-FATAL: rdma link add rxe0 failed" >&3`,
			bodyB: sleep,
			wantA: -1, wantB: -1,
			wantErr:   []string{"loopback: guest a: guest failed: rdma link add rxe0 failed", "booting a", "; guest b was stopped because guest a ended first"},
			wantCause: true,
		},
		{
			name:  "a's qemu fails to start: b is stopped",
			bodyA: `echo "qemu: cannot open kernel" >&2; exit 1`,
			bodyB: sleep,
			wantA: -1, wantB: -1,
			wantErr:   []string{"guest a: the guest stopped without reporting an exit status", "cannot open kernel", "guest b was stopped because guest a ended first"},
			wantCause: true,
		},
		{
			name:  "both hang: the one deadline ends both",
			bodyA: `` + sleep,
			bodyB: sleep, timeout: 2 * time.Second,
			wantA: -1, wantB: -1,
			wantErr:   []string{"guest a: the guest was killed after", "guest b: the guest was killed after", "exceeded its deadline of 2s"},
			wantCause: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, _ := fakePair(t, tt.bodyA, tt.bodyB)
			if tt.timeout > 0 {
				p.Timeout = tt.timeout
			}
			start := time.Now()
			codeA, codeB, err := p.Run(context.Background(), Job{Args: []string{"true"}}, Job{Args: []string{"true"}}, nil, nil)
			took := time.Since(start)
			assert.Equal(t, tt.wantA, codeA)
			assert.Equal(t, tt.wantB, codeB)
			require.Error(t, err)
			for _, w := range tt.wantErr {
				assert.Contains(t, err.Error(), w)
			}
			var pe *PairError
			assert.True(t, errors.As(err, &pe), "a *PairError")
			assert.Equal(t, tt.wantCause, errors.Unwrap(err) != nil)
			assert.Less(t, took, 10*time.Second, "the other guest is stopped, not waited for")
		})
	}
}

func TestPairRunRetriesABusyPort(t *testing.T) {
	p, dirA, _ := fakePair(t,
		`echo x >> "$DIR/attempts"; echo "qemu-system-x86_64: -netdev socket,id=n0,udp=127.0.0.1:2,localaddr=127.0.0.1:1: can't bind ip=127.0.0.1 to socket: Address already in use" >&2; exit 1`,
		`echo RDMABENCH-EXIT=0 >&3`)
	_, _, err := p.Run(context.Background(), Job{Args: []string{"true"}}, Job{Args: []string{"true"}}, nil, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Address already in use")
	b, err := os.ReadFile(filepath.Join(dirA, "attempts"))
	require.NoError(t, err)
	assert.Equal(t, portAttempts, strings.Count(string(b), "x"), "a new port for each attempt, up to portAttempts")
}
