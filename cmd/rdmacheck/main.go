// Command rdmacheck is the bring-up check: before any benchmark, it
// proves step by step that two hosts can talk RDMA, and names the step
// and the likely cause when they cannot. Its one job is that verdict; the
// benchmarks measure.
//
// Run the far end on one host and the near end on the other:
//
//	hostB$ rdmacheck -listen [-addr IP] [-port N] [-d DEV] [-i PORT] [-x GID_INDEX] [-timeout D]
//	hostA$ rdmacheck -connect hostB [-port N] [-d DEV] [-i PORT] [-x GID_INDEX] [-timeout D] [-n N] [-s SIZE]
//
// The near end runs these steps, in order, and prints one line each,
// "ok   <step>: <facts>" or "FAIL <step>: <what> — <likely cause>"; it
// stops at the first failure (exit status 1):
//
//  1. device and port: the port is ACTIVE (else its state, its physical
//     state and, on RoCE, the netdev under it and that netdev's state);
//  2. gid: the GID index (-x; by default the best, as the benchmarks pick
//     it) is set: its value, RoCE version and netdev (a wrong index lists
//     the set entries);
//  3. control channel: TCP to the far end's -port within the deadline
//     (IP reachability); it carries the far end's GID and QP numbers and
//     its verdicts;
//  4. udp 4791: a RoCE v2 datagram (a UD SEND) reaches the far end's UD
//     QP, which confirms it over TCP (TCP passing and UDP 4791 dropped is
//     the classic firewall); on InfiniBand, iWARP or a RoCE v1 GID the
//     step does not apply and says why;
//  5. rdma_cm connect: an RC QP connected through the connection manager
//     (rdma_cm on the far end's -port + 1), its error named on failure;
//  6. ping-pong: -n SEND/RECV round trips of -s bytes over it, each
//     payload a pattern checked on both ends (a mismatch names the
//     iteration and byte); min/median/max round trip, a bring-up figure,
//     not a benchmark;
//  7. disconnect: everything released on both ends, checked with verbs'
//     leak accounting (verbs.Live).
//
// The far end prints the same steps for each client, prefixed with the
// client's address, serves one client at a time and runs until SIGINT or
// SIGTERM (exit status 0 when nothing was left open). It validates
// everything a client sends and bounds its sizes; a bad client ends only
// its own session.
//
// The device is -d, else $RDMA_DEVICE, else the only one. Every wait has
// the deadline -timeout (the far end uses the shorter of both ends'). Exit
// status: 0 every step ok, 1 a step failed, 2 a bad command line.
//
// Every kernel fact comes through the seam in seam.go, so each failure
// message is tested with fake facts on any machine.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	defaultPort    = 18517
	defaultTimeout = 5 * time.Second
	defaultN       = 1000
	defaultSize    = 64
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv("RDMA_DEVICE"), verbsHost{sysfs: "/sys"}, os.Stdout, os.Stderr))
}

// run is main with its inputs and outputs as arguments; it returns the
// exit status.
func run(args []string, envDev string, h Host, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, envDev, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmacheck:", err)
		return 2
	}
	if c.listen {
		stop := make(chan struct{})
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(sigs)
		go func() {
			<-sigs
			close(stop)
		}()
		if err := runFar(h, c, stdout, stop, nil); err != nil {
			fmt.Fprintln(stderr, "rdmacheck:", err)
			return 1
		}
		return 0
	}
	err = runNear(h, c, stdout)
	var serr *StepError
	switch {
	case errors.As(err, &serr):
		fmt.Fprintf(stdout, "FAIL %s\n", serr.Error())
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "rdmacheck:", err)
		return 1
	}
	return 0
}

// parseFlags reads and checks the command line: every bad value is named
// with its limit before anything is opened.
func parseFlags(args []string, envDev string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("rdmacheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var addr string
	fs.BoolVar(&c.listen, "listen", false, "be the far end: serve near ends one at a time until SIGINT/SIGTERM")
	fs.StringVar(&c.connect, "connect", "", "be the near end: check the path to the far end on `HOST`")
	fs.StringVar(&addr, "addr", "", "the far end's listening `IP` (default: all), or the near end's TCP source address")
	fs.IntVar(&c.port, "port", defaultPort, "the control channel's TCP `port`; rdma_cm listens on port+1")
	fs.StringVar(&c.dev, "d", envDev, "RDMA `device` (default $RDMA_DEVICE, else the only one)")
	fs.IntVar(&c.ibPort, "i", 1, "the device's `port` number")
	fs.IntVar(&c.gidIndex, "x", -1, "GID `index` (default: the best, as the benchmarks pick it)")
	fs.DurationVar(&c.timeout, "timeout", defaultTimeout, "deadline of every wait")
	fs.IntVar(&c.n, "n", defaultN, "ping-pongs (near end)")
	fs.IntVar(&c.size, "s", defaultSize, "ping-pong payload `bytes` (near end)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rdmacheck -listen [flags] | rdmacheck -connect HOST [flags]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q: give the far end as -connect HOST", fs.Arg(0))
	case c.listen && set["connect"]:
		return c, errors.New("-listen and -connect exclude each other: -listen on the far end, -connect HOST on the near end")
	case !c.listen && !set["connect"]:
		return c, errors.New("give -listen (the far end) or -connect HOST (the near end)")
	case !c.listen && c.connect == "":
		return c, errors.New("-connect needs the far end's host name or address")
	case c.listen && (set["n"] || set["s"]):
		return c, errors.New("-n and -s are the near end's (-connect): the far end takes them from it")
	}
	if addr != "" {
		a, err := netip.ParseAddr(addr)
		if err != nil {
			return c, fmt.Errorf("-addr %q is not an IP address", addr)
		}
		c.addr = a
	}
	checks := []struct {
		name     string
		val, lo  int64
		hi       int64
		limitsOf string
	}{
		{"-port", int64(c.port), 1, 65534, "a TCP port, and rdma_cm takes port+1"},
		{"-i", int64(c.ibPort), 1, 255, "port numbers start at 1"},
		{"-x", int64(c.gidIndex), -1, 255, "a GID table index; -1 picks the best"},
		{"-n", int64(c.n), 1, maxCount, "ping-pongs"},
		{"-s", int64(c.size), 1, maxSize, "bytes"},
		{"-timeout", int64(c.timeout), int64(10 * time.Millisecond), int64(maxTimeout), ""},
	}
	for _, ck := range checks {
		if ck.val >= ck.lo && ck.val <= ck.hi {
			continue
		}
		if ck.name == "-timeout" {
			return c, fmt.Errorf("-timeout %s is outside %s-%s", c.timeout, time.Duration(ck.lo), time.Duration(ck.hi))
		}
		return c, fmt.Errorf("%s %d is outside %d-%d (%s)", ck.name, ck.val, ck.lo, ck.hi, ck.limitsOf)
	}
	if len(c.dev) > 64 {
		return c, fmt.Errorf("-d %.20q… is %d bytes long (device names have at most 64)", c.dev, len(c.dev))
	}
	return c, nil
}
