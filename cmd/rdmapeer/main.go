// Command rdmapeer serves the passive side of rdmabench's scenarios to
// benchmark processes on other hosts.
//
//	RDMA_PEER_TOKEN=… rdmapeer [-listen :18515] [-rdma.dev mlx5_0] …
//	rdmapeer -token-file /etc/rdmapeer.token …
//	rdmapeer -listen 127.0.0.1:18515 …            (loopback: no token needed)
//	rdmapeer -trusted-network …                   (no token: anyone who reaches the port)
//
// The device is chosen as for the benchmarks, with -rdma.dev, -rdma.port
// and -rdma.gid (rdmatest.RegisterDeviceFlags); -rdma.timeout bounds how
// long a shutdown waits for the sessions to end (the passive loops
// themselves wait for -idle). -rdma.cpus [RDMA_CPUS] lists the CPUs for
// the sessions' passive loops (default: the device's NUMA node): each
// loop busy-polls while its scenario runs and is pinned to a CPU of its
// own, taken in a benchmark's order (the second of the list first, the
// first last); a session that finds none free runs unpinned, and the
// session's log line says which. rdmapeer's own Go runtime is not kept
// off those CPUs. rdmapeer has no other -rdma.* flag, and reads none of
// the client settings (RDMA_PEER, RDMA_PEER_TOKEN_FILE, RDMA_HLOG_DIR):
// they neither stop it nor change what it serves. One variable is shared
// on purpose: RDMA_PEER_TOKEN is both the clients' token and rdmapeer's
// (when -token-file is not given), so the two ends of a session can be
// given one secret in one place.
//
// On host B run rdmapeer; on host A run the benchmarks with
// -rdma.peer hostB:18515 and the same token in RDMA_PEER_TOKEN. For each
// benchmark run the client connects over TCP (package rdmatest/oob),
// proves it knows the token, asks for the passive side of its scenario
// (receives posted and reposted, ping-pong answers, memory that A
// writes, reads or updates atomically, or — a pattern of the client's
// own — side B's program, steps as data that the peer checks, bounds and
// runs in a C loop of its own), connects its QPs to the peer's, and runs; when the client stops, disconnects or dies, everything made
// for it is released. The peer keeps serving other clients.
//
// Safety (README, Security): closed by default — rdmapeer refuses to
// listen on a non-loopback address without a token (from RDMA_PEER_TOKEN
// or -token-file, never the command line) unless -trusted-network says
// so; the handshake proves knowledge of the token without sending it, and
// failed handshakes are logged with the address and rate-limited. What the
// peer keeps per remote address is bounded (-max-hosts: an entry goes once
// nothing of it is left, a blocked one never before its block ends), and
// so are the log lines about an address (a burst, then a few a second; the
// rest counted in one summary line). A client sees only the memory
// registered for its own scenario, with the least access that scenario
// needs (remote write only for WRITE, remote read only for READ, remote
// atomic only for atomics, none for SEND; for a pattern of the client's
// own, exactly the accesses its Setup lists, derived from its side A's
// WRs). Every request is validated
// (peer.CheckSetup) and counted against the per-client (-max-*) and total
// (-total-*) limits before anything is created, its memory including an
// upper-bound estimate of its queue rings. Sessions create their resources
// concurrently: one slow Setup does not hold the others. SIGTERM or SIGINT
// ends every session within seconds (QPs to error, resources released,
// clients told); a second signal exits at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// minTokenLen is the shortest token accepted.
const minTokenLen = 16

// tokenEnv is the environment variable the token is read from.
const tokenEnv = "RDMA_PEER_TOKEN"

// options are the command line, checked.
type options struct {
	listen    string
	tokenFile string
	trusted   bool
	lim       limits
	agent     agentOptions
}

// agentOptions are the -agent mode's flags.
type agentOptions struct {
	on         bool
	node       string // this node's name
	nodes      string // -nodes: a comma-separated list
	nodesFile  string
	port       int // the other agents' port; 0: -listen's
	runTimeout time.Duration
}

// usageError is a bad command line (exit status 2).
type usageError struct{ error }

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	o := options{lim: defaultLimits}
	l := &o.lim
	fs.SetOutput(io.Discard)         // errors are returned, help printed by run
	rdmatest.RegisterDeviceFlags(fs) // -rdma.dev, -rdma.port, -rdma.gid, -rdma.cpus, -rdma.timeout
	fs.StringVar(&o.listen, "listen", ":18515", "TCP address to serve on")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the shared secret clients must prove they know (default: $"+tokenEnv+")")
	fs.BoolVar(&o.trusted, "trusted-network", false, "serve without a token on a non-loopback address: every host that can reach the port may use the RDMA device")
	fs.IntVar(&l.clients, "max-clients", l.clients, "sessions served at once")
	fs.IntVar(&l.perHost, "max-conns-per-host", l.perHost, "connections per remote address, handshakes included")
	fs.IntVar(&l.conns, "max-conns", l.conns, "connections from all addresses together, handshakes included (more are closed unanswered)")
	fs.IntVar(&l.hosts, "max-hosts", l.hosts, "remote addresses tracked at once (connections, recent failed handshakes, blocks, log budgets); a new address beyond is refused")
	fs.IntVar(&l.prefixV4, "prefix-v4", l.prefixV4, "bits of the IPv4 prefix whose addresses share a lockout and a log budget, as well as each address's own (32: per address only)")
	fs.IntVar(&l.prefixV6, "prefix-v6", l.prefixV6, "bits of the IPv6 prefix whose addresses share a lockout and a log budget, as well as each address's own (128: per address only)")
	fs.DurationVar(&l.hello, "hello-timeout", l.hello, "deadline of a client's handshake")
	fs.DurationVar(&l.idle, "idle", l.idle, "drop a client that sends nothing for this long while its scenario runs")
	fs.IntVar(&l.client.QPs, "max-qps", l.client.QPs, "QPs per client")
	fs.IntVar(&l.client.WRs, "max-wrs", l.client.WRs, "work requests per client (send and receive queue depths × QPs, SRQ)")
	fs.IntVar(&l.client.CQEs, "max-cqe", l.client.CQEs, "completion queue entries per client")
	fs.Int64Var(&l.client.Mem, "max-mem", l.client.Mem, "bytes per client of registered memory and queue rings (send, receive and completion queues with their inline space; an upper-bound estimate)")
	fs.IntVar(&l.total.QPs, "total-qps", l.total.QPs, "QPs of all clients together")
	fs.IntVar(&l.total.WRs, "total-wrs", l.total.WRs, "work requests of all clients together")
	fs.IntVar(&l.total.CQEs, "total-cqe", l.total.CQEs, "completion queue entries of all clients together")
	fs.Int64Var(&l.total.Mem, "total-mem", l.total.Mem, "bytes of all clients together (registered memory and queue rings, as -max-mem)")
	a := &o.agent
	fs.BoolVar(&a.on, "agent", false, "also serve an authenticated coordinator (rdmafabric run): this node's facts, and runs of a scenario from this node to another of the node list")
	fs.StringVar(&a.node, "node", "", "this node's name, as in the node list (default: $SLURMD_NODENAME in a Slurm task, $RDMA_NODE_NAME, or the host name up to its first dot)")
	fs.StringVar(&a.nodes, "nodes", "", "the nodes an -agent may send to, comma-separated (default: -nodes-file, or the Slurm job's nodes)")
	fs.StringVar(&a.nodesFile, "nodes-file", "", "file of the nodes an -agent may send to, one a line ('#' comments)")
	fs.IntVar(&a.port, "agent-port", 0, "the other agents' port (default: -listen's)")
	fs.DurationVar(&a.runTimeout, "run-timeout", 10*time.Minute, "deadline of one coordinator's run request (all its runs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err // run prints the flags
		}
		if strings.Contains(err.Error(), "defined: -token") {
			err = fmt.Errorf("%w (the token comes from $%s or -token-file, never the command line, where ps shows it)", err, tokenEnv)
		}
		return o, usageError{err}
	}
	if fs.NArg() > 0 {
		return o, usageError{fmt.Errorf("unexpected arguments %q (the token is read from $%s or -token-file, not the command line)", fs.Args(), tokenEnv)}
	}
	var errs []error
	positive := func(name string, v int64) {
		if v < 1 {
			errs = append(errs, fmt.Errorf("-%s %d must be at least 1", name, v))
		}
	}
	positive("max-clients", int64(l.clients))
	positive("max-conns-per-host", int64(l.perHost))
	positive("max-conns", int64(l.conns))
	positive("max-hosts", int64(l.hosts))
	if l.prefixV4 < 8 || l.prefixV4 > 32 {
		errs = append(errs, fmt.Errorf("-prefix-v4 %d: want 8..32 bits", l.prefixV4))
	}
	if l.prefixV6 < 16 || l.prefixV6 > 128 {
		errs = append(errs, fmt.Errorf("-prefix-v6 %d: want 16..128 bits", l.prefixV6))
	}
	totals := l.total.items(l.total, "total")
	for i, it := range l.client.items(l.total, "max") {
		positive(strings.TrimPrefix(it.flag, "-"), it.ask)
		if it.ask > it.limit {
			errs = append(errs, fmt.Errorf("%s %d exceeds %s %d: no client could use it", it.flag, it.ask, totals[i].flag, it.limit))
		}
	}
	for _, it := range l.total.items(l.total, "total") {
		positive(strings.TrimPrefix(it.flag, "-"), it.ask)
	}
	if l.hello <= 0 || l.idle <= 0 {
		errs = append(errs, fmt.Errorf("-hello-timeout %v and -idle %v must be positive", l.hello, l.idle))
	}
	if _, port, err := net.SplitHostPort(o.listen); err != nil {
		errs = append(errs, fmt.Errorf("-listen %q is not host:port: %w", o.listen, err))
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("-listen %q: port %q is not 0..65535", o.listen, port))
	}
	errs = append(errs, checkAgentFlags(o.agent, fs))
	if _, err := rdmatest.DeviceOpts(); err != nil { // the device flags, before the device is opened
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return o, usageError{err}
	}
	return o, nil
}

// loadToken reads the token from the file (oob.ReadTokenFile, as the
// clients read theirs), or else the environment.
func loadToken(file string, getenv func(string) string) (string, error) {
	tok := getenv(tokenEnv)
	if file != "" {
		var err error
		if tok, err = oob.ReadTokenFile(file); err != nil {
			return "", usageError{fmt.Errorf("-token-file: %w", err)}
		}
	}
	if tok != "" && len(tok) < minTokenLen {
		return "", usageError{fmt.Errorf("the token is %d bytes; use at least %d (e.g. openssl rand -hex 32)", len(tok), minTokenLen)}
	}
	return tok, nil
}

// checkExposure refuses a non-loopback listen address without a token,
// unless the network is declared trusted.
func checkExposure(listen, token string, trusted bool) error {
	if token != "" || trusted {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return usageError{fmt.Errorf("-listen %q: %w", listen, err)}
	}
	if isLoopback(host) {
		return nil
	}
	what := host
	if host == "" {
		what = "every interface"
	}
	return usageError{fmt.Errorf("refusing to serve the RDMA device on %s (-listen %q) without a token: set $%s or -token-file (and the same token on the clients), listen on 127.0.0.1, or pass -trusted-network if every host that can reach this port may use the device",
		what, listen, tokenEnv)}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func main() {
	log.SetPrefix("rdmapeer: ")
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("rdmapeer", flag.ContinueOnError)
	o, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(os.Stderr)
		fs.PrintDefaults()
		return 0
	}
	if err == nil {
		var tok string
		if tok, err = loadToken(o.tokenFile, os.Getenv); err == nil {
			if err = checkExposure(o.listen, tok, o.trusted); err == nil {
				return serveDevice(o, tok)
			}
		}
	}
	log.Print(err)
	return 2
}

func serveDevice(o options, token string) int {
	do, err := rdmatest.DeviceOpts() // a client's RDMA_PEER or token file is not ours
	if err != nil {
		log.Print(err)
		return 2
	}
	d, err := rdmatest.OpenDevWith(do)
	if err != nil {
		log.Print(err)
		return 1
	}
	defer d.Close()
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		log.Print(err)
		return 1
	}
	auth := "token required"
	if token == "" {
		auth = "no token (loopback or -trusted-network)"
	}
	log.Printf("serving %s port %d (GID %s) on %s, %s", d.Name(), d.PortNum, d.GIDEntry.GID, ln.Addr(), auth)
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go onSignals(sigs, cancel, os.Exit)
	// The passive loops' deadline is -idle, as the connection's: a client
	// may pause between its Start and its first message (see rdmaDevice).
	s := newServer(&rdmaDevice{d: d, timeout: o.lim.idle}, token, o.lim)
	if o.agent.on {
		if s.agent, err = startAgent(ctx, o, ln, &rdmaMeasurer{d: d, opts: do, token: token}); err != nil {
			log.Print(err)
			cancel()
			return 2
		}
	}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, s) }()
	var serr error
	select {
	case serr = <-done:
	case <-ctx.Done():
		// Every session ends within its device deadline once its QPs
		// are in error; do not wait forever for one that does not.
		select {
		case serr = <-done:
		case <-time.After(2*d.Opts.Timeout + 5*time.Second):
			log.Printf("sessions still ending after %v; exiting", 2*d.Opts.Timeout+5*time.Second)
			return 1
		}
	}
	if serr != nil {
		log.Print(serr)
		return 1
	}
	log.Printf("stopped: %d sessions done, %d failed", s.ok.Load(), s.failed.Load())
	return 0
}

// onSignals ends the sessions at the first signal and exits at the
// second.
func onSignals(sigs <-chan os.Signal, cancel context.CancelFunc, exit func(int)) {
	sig := <-sigs
	log.Printf("%v: ending every session (a second signal exits at once)", sig)
	cancel()
	sig = <-sigs
	log.Printf("%v again: exiting now", sig)
	exit(1)
}
