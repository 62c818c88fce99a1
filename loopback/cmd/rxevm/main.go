// Command rxevm runs a command where an RDMA device exists.
//
//	go run ./loopback/cmd/rxevm [flags] -- COMMAND [ARGS...]
//
// On a machine with an RDMA device (a real HCA or an existing rxe) the
// command runs natively. On one whose kernel ships rdma_rxe, run as root,
// rxevm creates rxe0 first — on a veth pair made for the run (rdmabench0,
// 192.0.2.1/24), or on the interface -netdev names — and removes it
// afterwards. Natively as in the guest, -timeout bounds the run. On a
// kernel without RDMA it boots a qemu guest with Debian's kernel and runs
// the command there (see package loopback); -vm forces that path. The exit
// status is the command's; a guest or setup failure exits 125 with a
// message that says what went wrong.
//
// In a guest the host's root file system is mounted read-only, /tmp is
// the guest's own tmpfs, and one host directory is mounted read-write at
// the same path: -share DIR (default ".", the current directory; the
// command runs in the current directory either way). Whatever the
// command must write to outlive the guest (results, -rdma.hlog files, a
// test binary's output redirected by sh -c) goes under DIR. A go build
// or go test in the guest would need a writable GOCACHE (the host's is
// read-only there) and compiles slowly under TCG: build test binaries on
// the host (go test -c) and run them in the guest. DIR's file system
// must support user extended attributes (ext4, xfs, btrfs; tmpfs from
// Linux 6.6): the share keeps the guest's owners and modes in them, so
// the guest cannot plant a setuid file or a device node on the host.
// With -pair and -cluster every guest mounts the same DIR. A natively
// run command ignores -share. A benchmark of one's own, in a module that
// requires rdmabench (docs/own-benchmark.md):
//
//	go test -c -o mybench.test . && go tool rxevm -share . -- ./mybench.test -test.run '^$' -test.bench .
//
// With -pair it boots two guests whose rxe devices reach each other over a
// virtual Ethernet link (see loopback.Pair) and runs one command in each;
// ":::" separates them:
//
//	go run ./loopback/cmd/rxevm -pair -- COMMAND_A [ARGS...] ::: COMMAND_B [ARGS...]
//
// Guest a has 192.0.2.1 and guest b 192.0.2.2 on eth0, with rxe0 on it;
// each command finds its role, its own address and the peer's in
// RDMA_ROLE, RDMA_LOCAL_ADDR and RDMA_PEER_ADDR. Both outputs stream live,
// each line prefixed with "[a] " or "[b] " (-v prefixes the consoles' lines
// with "[a console] " and "[b console] "). A command that needs a shell
// (pipes, $RDMA_PEER_ADDR) is written as sh -c '...'. For example, a
// perftest server in a and its client in b:
//
//	rxevm -pair -- ib_send_bw -d rxe0 -F ::: sh -c 'sleep 5; ib_send_bw -d rxe0 -F $RDMA_PEER_ADDR'
//
// The exit status is 0 when both commands exit 0; otherwise guest a's
// status when it is not 0, else guest b's, with a line on stderr naming
// the guest. When one command fails the other guest is stopped (and
// stderr says so). A guest or setup failure exits 125 with a message that
// names the guest.
//
// With -cluster N (2 to 8) it boots N guests on one virtual Ethernet
// segment (see loopback.Cluster) and runs the same command in each:
//
//	go run ./loopback/cmd/rxevm -cluster 4 -- COMMAND [ARGS...]
//
// Guest i is named node(i+1) and has 192.0.2.(i+1) on eth0, with rxe0 on
// it; the command learns its place from RDMA_NODE_INDEX (from 0),
// RDMA_NODE_NAME, RDMA_NODES (all addresses), RDMA_NODE_NAMES and
// RDMA_LOCAL_ADDR. Each output line is prefixed with "[nodeK] ". The exit
// status is the first non-zero status in guest order; when one command
// fails the others are stopped. ci/fabric/cluster.sh boots a Slurm
// cluster this way.
//
// With -siw FILE the single guest runs Soft-iWARP instead of Soft-RoCE:
// Debian's kernel is built without siw, so FILE is a siw.ko built for the
// guest kernel (ci/siw.sh build prints its path; docs/siw.md). The guest
// loads crc32c_generic and libcrc32c, then FILE, and makes siw0 on veth0
// (192.0.2.1/24) where it would make rxe0; the command finds it in
// RDMA_DEVICE=siw0. FILE is checked before the guest boots: a kernel
// module named siw whose vermagic names the guest kernel's release.
//
//	go run ./loopback/cmd/rxevm -siw "$(bash ci/siw.sh build)" -- ibv_devinfo -d siw0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/loopback"
)

func main() {
	loopback.MaybeGuest()
	os.Exit(run())
}

func run() int {
	var (
		forceVM = flag.Bool("vm", false, "run in the qemu guest even when the host has RDMA")
		share   = flag.String("share", ".", "host directory mounted read-write in the guest (at the same path)")
		timeout = flag.Duration("timeout", 30*time.Minute, "deadline for the whole guest run, boot included")
		memory  = flag.Int("mem", 0, "guest memory in MiB (default 2048; 1024 each with -pair, 256 each with -cluster)")
		cpus    = flag.Int("smp", 0, "guest vCPUs (default 2; 1 each with -pair or -cluster)")
		pair    = flag.Bool("pair", false, "boot two guests linked by a virtual wire and run COMMAND_A ::: COMMAND_B, one in each")
		cluster = flag.Int("cluster", 0, fmt.Sprintf("boot this many guests (2..%d) on one virtual Ethernet segment and run COMMAND in each", loopback.MaxClusterSize))
		netdev  = flag.String("netdev", "", "host network interface for a new rxe device (kind 2 machines); default: a veth pair made for the run ("+loopback.HostVethName+", "+loopback.HostVethAddr+"), so RoCE stays off the host's real network")
		verbose = flag.Bool("v", false, "print the guest console (kernel messages, init progress) to stderr")
		siw     = flag.String("siw", "", "boot the guest with Soft-iWARP: load this siw.ko (built for the guest kernel: ci/siw.sh build) and make siw0 on veth0 instead of rxe0 (RDMA_DEVICE=siw0); one guest only, always in qemu")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: rxevm [flags] -- COMMAND [ARGS...]\n       rxevm -pair [flags] -- COMMAND_A [ARGS...] ::: COMMAND_B [ARGS...]\n       rxevm -cluster N [flags] -- COMMAND [ARGS...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		return 2
	}
	if err := checkFlags(*timeout, *memory, *cpus); err != nil {
		fmt.Fprintf(os.Stderr, "rxevm: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case *pair && *cluster != 0:
		fmt.Fprintf(os.Stderr, "rxevm: -pair and -cluster exclude each other\n")
		return 2
	case *siw != "" && (*pair || *cluster != 0):
		fmt.Fprintf(os.Stderr, "rxevm: -siw boots one guest; it excludes -pair and -cluster\n")
		return 2
	case *cluster != 0 && (*cluster < 2 || *cluster > loopback.MaxClusterSize):
		fmt.Fprintf(os.Stderr, "rxevm: -cluster %d is out of range 2..%d\n", *cluster, loopback.MaxClusterSize)
		return 2
	}
	if *cluster != 0 {
		c, err := loopback.NewCluster(*cluster)
		if err != nil {
			return fail(err)
		}
		c.Timeout = *timeout
		for _, vm := range c.VMs {
			if *memory > 0 {
				vm.MemoryMiB = *memory
			}
			if *cpus > 0 {
				vm.CPUs = *cpus
			}
		}
		return runCluster(ctx, c, *share, *verbose, args)
	}
	if *pair {
		argsA, argsB, err := splitPair(args)
		if err != nil {
			fmt.Fprintf(os.Stderr, "rxevm: %v\n", err)
			flag.Usage()
			return 2
		}
		p, err := loopback.NewPair()
		if err != nil {
			return fail(err)
		}
		p.Timeout = *timeout
		for _, vm := range []*loopback.VM{p.A, p.B} {
			if *memory > 0 {
				vm.MemoryMiB = *memory
			}
			if *cpus > 0 {
				vm.CPUs = *cpus
			}
		}
		return runPair(ctx, p, *share, *verbose, argsA, argsB)
	}
	m, err := loopback.Detect(loopback.HostRoot)
	if err != nil {
		return fail(err)
	}
	// -siw needs the guest: its siw.ko is built for the guest's kernel.
	guest := *forceVM || *siw != ""
	switch {
	case !guest && m.Kind == loopback.HasDevice:
		fmt.Fprintf(os.Stderr, "rxevm: native run (%s)\n", m.Reason)
		return native(ctx, *timeout, args)
	case !guest && m.Kind == loopback.HasRxeModule && os.Geteuid() == 0:
		dev := *netdev
		if dev == "" {
			veth, err := loopback.EnsureVeth(loopback.HostVethName, loopback.HostVethPeer, loopback.HostVethAddr)
			if err != nil {
				return fail(err)
			}
			defer veth.Close()
			dev = veth.Name
		}
		rxe, err := loopback.EnsureRxe("rxe0", dev)
		if err != nil {
			return fail(err)
		}
		defer rxe.Close()
		if err := rxe.WaitActive(time.Now().Add(20 * time.Second)); err != nil {
			return fail(err)
		}
		fmt.Fprintf(os.Stderr, "rxevm: native run on %s over %s (%s)\n", rxe.Name, dev, m.Reason)
		return native(ctx, *timeout, args)
	}
	fmt.Fprintf(os.Stderr, "rxevm: running in a qemu guest (%s)\n", m.Reason)
	vm, err := loopback.NewVM()
	if err != nil {
		return fail(err)
	}
	vm.Timeout = *timeout
	if *memory > 0 {
		vm.MemoryMiB = *memory
	}
	if *cpus > 0 {
		vm.CPUs = *cpus
	}
	if vm.Share, err = filepath.Abs(*share); err != nil {
		return fail(err)
	}
	if *verbose {
		vm.Console = os.Stderr
	}
	job, err := hostJob(args)
	if err != nil {
		return fail(err)
	}
	if *siw != "" {
		if err := useSiw(vm, &job, *siw); err != nil {
			fmt.Fprintf(os.Stderr, "rxevm: %v\n", err)
			return 2
		}
	}
	code, err := vm.Run(ctx, job, os.Stdout)
	if err != nil {
		return fail(err)
	}
	return code
}

// native runs args here with the same deadline as a guest run: past it
// the command and everything it started are killed and rxevm exits 125
// saying so.
func native(ctx context.Context, timeout time.Duration, args []string) int {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	killGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	runtime.LockOSThread() // Pdeathsig follows the thread that starts the command
	defer runtime.UnlockOSThread()
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fail(fmt.Errorf("the command was killed after %s: it exceeded its deadline of %s (-timeout)", time.Since(start).Round(10*time.Millisecond), timeout))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

func fail(err error) int {
	fmt.Fprintf(os.Stderr, "rxevm: %v\n", err)
	return 125
}

// hostJob is a job that runs args in the current directory with this
// process's environment and RDMA_IN_VM=1.
func hostJob(args []string) (loopback.Job, error) {
	dir, err := os.Getwd()
	if err != nil {
		return loopback.Job{}, fmt.Errorf("rxevm: %w", err)
	}
	return loopback.Job{Args: args, Dir: dir, Env: append(os.Environ(), "RDMA_IN_VM=1")}, nil
}

// checkFlags refuses what the guest could not run with: a deadline that is
// not positive (natively it would kill the command at once), and memory
// or vCPUs outside what a qemu TCG guest of this harness boots with (0:
// the default).
func checkFlags(timeout time.Duration, memMiB, cpus int) error {
	var errs []error
	if timeout <= 0 {
		errs = append(errs, fmt.Errorf("-timeout %v must be positive", timeout))
	}
	if memMiB != 0 && (memMiB < 256 || memMiB > 65536) {
		errs = append(errs, fmt.Errorf("-mem %d MiB is out of range 256..65536 (0: the default)", memMiB))
	}
	if cpus != 0 && (cpus < 1 || cpus > 64) {
		errs = append(errs, fmt.Errorf("-smp %d is out of range 1..64 (0: the default)", cpus))
	}
	return errors.Join(errs...)
}
