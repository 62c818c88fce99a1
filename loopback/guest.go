//go:build linux

package loopback

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// GuestArg, as the first argument of the agent binary, makes it the guest
// side of the runner: see [MaybeGuest].
const GuestArg = "rdmabench-guest-agent"

// Guest network of a single guest (a [Pair]'s guests use their NIC
// instead): a veth pair, rxe on veth0. 192.0.2.0/24 is TEST-NET-1
// (RFC 5737): documentation only, never routed, and the guest has no NIC.
const (
	guestNetdev = "veth0"
	guestPeer   = "veth1"
	guestAddr   = "192.0.2.1/24"
)

// MaybeGuest runs the guest side of the VM runner and does not return when
// os.Args[1] is GuestArg; otherwise it returns at once. Call it first thing
// in the main of the binary used as [VM.Agent].
func MaybeGuest() {
	if len(os.Args) < 3 || os.Args[1] != GuestArg {
		return
	}
	code, err := guestMain(os.Args[2])
	if err != nil {
		// The host prefixes its own "loopback: guest failed: ".
		fmt.Printf("%s%s\n", markerFatal, strings.TrimPrefix(err.Error(), "loopback: "))
	} else {
		fmt.Printf("%s%d\n", markerExit, code)
	}
	unix.Sync()
	// qemu runs with -no-reboot: a restart ends it.
	unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	os.Exit(1)
}

// guestMain sets up the network (the job's NIC, or a veth pair) and the
// job's device (rxe, or siw: [Job.LinkType]), then runs the job with its
// output on the second serial line.
func guestMain(jobPath string) (int, error) {
	b, err := os.ReadFile(jobPath)
	if err != nil {
		return -1, fmt.Errorf("reading the job: %w", err)
	}
	var job Job
	if err := json.Unmarshal(b, &job); err != nil {
		return -1, fmt.Errorf("decoding the job: %w", err)
	}
	if len(job.Args) == 0 {
		return -1, errors.New("the job has no command")
	}
	out, err := os.OpenFile("/dev/ttyS1", os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return -1, fmt.Errorf("opening the output line: %w", err)
	}
	defer out.Close()
	if err := makeRaw(out); err != nil {
		return -1, err
	}
	netdev, addr := guestNetdev, guestAddr
	if job.Net != nil {
		if netdev, err = guestNIC(job.Net); err != nil {
			return -1, err
		}
		addr = job.Net.Addr
		job.Env = append(job.Env, "RDMA_NETDEV="+netdev)
	} else if err := guestNetwork(); err != nil {
		return -1, err
	}
	rxe, err := EnsureLink(job.device(), job.linkType(), netdev)
	if err != nil {
		return -1, err
	}
	wait := job.ActiveTimeout
	if wait <= 0 {
		wait = 20 * time.Second
	}
	if err := rxe.WaitActive(time.Now().Add(wait)); err != nil {
		return -1, err
	}
	fmt.Printf("rdmabench guest: %s ACTIVE on %s (%s); running %q\n", rxe.Name, netdev, addr, job.Args)
	cmd := exec.Command(job.Args[0], job.Args[1:]...)
	cmd.Dir, cmd.Env = job.Dir, job.Env
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	code := exitCode(err)
	if code == 127 {
		fmt.Fprintf(out, "rxevm: %v\n", err)
	}
	// Wait until the UART has sent everything: the exit marker goes out
	// on the other line, and the host must not see it before the output.
	if err := drain(out); err != nil {
		return -1, fmt.Errorf("draining the output line: %w", err)
	}
	return code, nil
}

// drain waits until the tty has sent what was written to it (tcdrain).
// The wait is retried when a signal interrupts it: the Go runtime's
// preemption signal (SIGURG) does, and a long output then failed the
// run with EINTR before the host had it all.
func drain(f *os.File) error {
	for {
		err := unix.IoctlSetInt(int(f.Fd()), unix.TCSBRK, 1)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// exitCode is the status a shell would report for a command that ended
// with err: its exit code, 128+N when signal N killed it, 127 when it did
// not start.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	default:
		return 127
	}
}

// guestNetwork brings up lo and a veth pair with an address on veth0.
func guestNetwork() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("guest network: %w", err)
	}
	veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: guestNetdev}, PeerName: guestPeer}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("guest network: creating %s/%s: %w", guestNetdev, guestPeer, err)
	}
	ip, ipnet, _ := net.ParseCIDR(guestAddr)
	ipnet.IP = ip
	for _, step := range []func() error{
		func() error { return netlink.LinkSetUp(lo) },
		func() error { return netlink.AddrAdd(veth, &netlink.Addr{IPNet: ipnet}) },
		func() error { return linkUp(guestPeer) },
		func() error { return linkUp(guestNetdev) },
	} {
		if err := step(); err != nil {
			return fmt.Errorf("guest network: %w", err)
		}
	}
	return nil
}

// guestNIC brings up lo and the interface whose MAC is n.MAC, with n.Addr,
// and returns its name.
func guestNIC(n *GuestNet) (string, error) {
	mac, err := net.ParseMAC(n.MAC)
	if err != nil {
		return "", fmt.Errorf("guest network: %w", err)
	}
	ip, ipnet, err := net.ParseCIDR(n.Addr)
	if err != nil {
		return "", fmt.Errorf("guest network: %w", err)
	}
	ipnet.IP = ip
	links, err := netlink.LinkList()
	if err != nil {
		return "", fmt.Errorf("guest network: listing interfaces: %w", err)
	}
	var nic netlink.Link
	var seen []string
	for _, l := range links {
		a := l.Attrs()
		seen = append(seen, a.Name+" "+a.HardwareAddr.String())
		if bytes.Equal(a.HardwareAddr, mac) {
			nic = l
		}
	}
	if nic == nil {
		return "", fmt.Errorf("guest network: no interface has MAC %s (is virtio_net loaded?); found: %s", mac, strings.Join(seen, ", "))
	}
	name := nic.Attrs().Name
	for _, step := range []func() error{
		func() error { return linkUp("lo") },
		func() error { return netlink.AddrAdd(nic, &netlink.Addr{IPNet: ipnet}) },
		func() error { return netlink.LinkSetUp(nic) },
	} {
		if err := step(); err != nil {
			return "", fmt.Errorf("guest network: %s: %w", name, err)
		}
	}
	return name, nil
}

func linkUp(name string) error {
	l, err := netlink.LinkByName(name)
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(l)
}

// makeRaw turns off the serial line's output processing (no \n → \r\n).
func makeRaw(f *os.File) error {
	t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		return fmt.Errorf("output line: %w", err)
	}
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ICANON | unix.ISIG | unix.IEXTEN
	if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t); err != nil {
		return fmt.Errorf("output line: %w", err)
	}
	return nil
}
