// Command rxevm runs a command where an RDMA device exists.
//
//	go run ./loopback/cmd/rxevm [flags] -- COMMAND [ARGS...]
//
// On a machine with an RDMA device (a real HCA or an existing rxe) the
// command runs natively. On one whose kernel ships rdma_rxe, run as root,
// rxevm creates rxe0 on -netdev first (and removes it afterwards). On a
// kernel without RDMA it boots a qemu guest with Debian's kernel and runs
// the command there (see package loopback); -vm forces that path. The exit
// status is the command's; a guest or setup failure exits 125 with a
// message that says what went wrong.
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
		memory  = flag.Int("mem", 2048, "guest memory in MiB")
		cpus    = flag.Int("smp", 2, "guest vCPUs")
		netdev  = flag.String("netdev", "", "host network interface for a new rxe device (kind 2 machines); default: the first non-loopback interface that is up")
		verbose = flag.Bool("v", false, "print the guest console (kernel messages, init progress) to stderr")
	)
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: rxevm [flags] -- COMMAND [ARGS...]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	args := flag.Args()
	if len(args) == 0 {
		flag.Usage()
		return 2
	}
	m, err := loopback.Detect(loopback.HostRoot)
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch {
	case !*forceVM && m.Kind == loopback.HasDevice:
		fmt.Fprintf(os.Stderr, "rxevm: native run (%s)\n", m.Reason)
		return native(ctx, args)
	case !*forceVM && m.Kind == loopback.HasRxeModule && os.Geteuid() == 0:
		dev := *netdev
		if dev == "" {
			if dev, err = loopback.DefaultNetdev(); err != nil {
				return fail(err)
			}
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
		return native(ctx, args)
	}
	fmt.Fprintf(os.Stderr, "rxevm: running in a qemu guest (%s)\n", m.Reason)
	vm, err := loopback.NewVM()
	if err != nil {
		return fail(err)
	}
	vm.Timeout, vm.MemoryMiB, vm.CPUs = *timeout, *memory, *cpus
	if vm.Share, err = filepath.Abs(*share); err != nil {
		return fail(err)
	}
	if *verbose {
		vm.Console = os.Stderr
	}
	dir, err := os.Getwd()
	if err != nil {
		return fail(err)
	}
	env := append(os.Environ(), "RDMA_IN_VM=1")
	code, err := vm.Run(ctx, loopback.Job{Args: args, Dir: dir, Env: env}, os.Stdout)
	if err != nil {
		return fail(err)
	}
	return code
}

func native(ctx context.Context, args []string) int {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
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
