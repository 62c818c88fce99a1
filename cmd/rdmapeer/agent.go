package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmabench/rdmabench/cmd/internal/nodes"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// The agent mode (-agent): rdmapeer also takes, from an authenticated
// client (the coordinator, rdmafabric run), a Facts request (this node's
// name and configuration lines) or a Run request: run a scenario as the
// requester against another node's rdmapeer, and send the results back
// (package oob). What the coordinator may make the node do is bounded
// here, not by the coordinator:
//
//   - the destination must be in the agent's own node list (-nodes,
//     -nodes-file, or the Slurm job's nodes), not this node, and is
//     reached at the agent port (-agent-port, default -listen's);
//   - a Run is at most oob.MaxRuns runs of at most oob.MaxIters
//     iterations and runs alone (a second one is refused as busy);
//   - it ends inside its loops (their stop flag, raised through the
//     run's context: verbs.Device.StopLoops) at -run-timeout as a whole,
//     when its client closes the connection or sends anything before
//     RunDone, and at the agent's shutdown;
//   - its memory, counted before anything is built, is within -max-mem:
//     the registered buffers (two slots a QP, counters × stride for the
//     atomics) and queue rings of its pair, priced as the peer prices a
//     Setup, times its threads (specMemory). The destination prices and
//     refuses its own share by its own limits, but only once this side is
//     built: the protocol has no dry run yet.

// measurer measures for an agent: the real one opens the RDMA device and
// runs rdmabench's scenarios; tests substitute a fake.
type measurer interface {
	// facts returns the configuration lines of this node, named node.
	facts(node string) ([]string, error)
	// check parses scenario and returns an estimate of its memory, or
	// why it cannot run.
	check(scenario string) (mem int64, err error)
	// run runs scenario once, iters iterations, as the requester against
	// the rdmapeer at addr; it returns within the device's deadlines.
	run(ctx context.Context, addr, scenario string, iters int) (*oob.RunResult, error)
}

// agent is the -agent mode's state.
type agent struct {
	node    string          // this node's name
	allowed map[string]bool // lower-cased names of the nodes it may send to
	port    string          // the other agents' port
	timeout time.Duration   // a whole Run's deadline
	maxMem  int64           // -max-mem
	m       measurer
	busy    sync.Mutex // one Run at a time
}

// newAgent makes the agent of node with the node list nodes (node may
// be in it; it is never a destination).
func newAgent(node string, nodes []string, port int, timeout time.Duration, maxMem int64, m measurer) *agent {
	a := &agent{node: node, allowed: make(map[string]bool), port: strconv.Itoa(port), timeout: timeout, maxMem: maxMem, m: m}
	for _, n := range nodes {
		if !strings.EqualFold(n, node) {
			a.allowed[strings.ToLower(n)] = true
		}
	}
	return a
}

// serveFacts answers a Facts request.
func (c *session) serveFacts(ctx context.Context, a *agent) error {
	lines, err := a.m.facts(a.node)
	if err != nil {
		return c.fail(ctx, fmt.Errorf("facts of %s: %w", a.node, err))
	}
	c.deadline(step)
	return oob.WriteFrame(c.conn, oob.MsgFactsOK, &oob.FactsOK{Node: a.node, Lines: lines})
}

// serveRun checks a Run request against the agent's bounds, runs it and
// streams one RunResult a run, then RunDone.
func (c *session) serveRun(ctx context.Context, a *agent, req *oob.Run) error {
	if err := a.checkRun(req); err != nil {
		return c.fail(ctx, err)
	}
	if !a.busy.TryLock() {
		return c.fail(ctx, errors.New("busy: this agent is running another scenario (one at a time)"))
	}
	defer a.busy.Unlock()
	// runCtx bounds the runs: -run-timeout, the client leaving
	// (watchClient) and, through ctx, the shutdown. ctx stays the
	// server's, which fail tells a shutdown by.
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	runCtx, cancelTimeout := context.WithTimeoutCause(runCtx, a.timeout, fmt.Errorf("not done within -run-timeout %v", a.timeout))
	defer cancelTimeout()
	defer c.watchClient(cancel)()
	addr := net.JoinHostPort(req.Dst, a.port)
	c.s.logHost(c.host, "%s (client %q): run %s -> %s %s, %d runs of %d", c.who, c.client, a.node, req.Dst, req.Scenario, req.Runs, req.Iters)
	for i := range req.Runs {
		res, err := a.m.run(runCtx, addr, req.Scenario, req.Iters)
		if runCtx.Err() != nil && ctx.Err() == nil {
			err = context.Cause(runCtx)
		}
		if err != nil {
			return c.fail(ctx, fmt.Errorf("run %d of %d, %s -> %s %s: %w", i+1, req.Runs, a.node, req.Dst, req.Scenario, err))
		}
		if err := res.Validate(); err != nil {
			return c.fail(ctx, fmt.Errorf("run %d: a result this agent cannot send: %w", i+1, err))
		}
		c.writeDeadline(step)
		if err := oob.WriteFrame(c.conn, oob.MsgRunResult, res); err != nil {
			return err
		}
	}
	c.writeDeadline(step)
	return oob.WriteFrame(c.conn, oob.MsgRunDone, &oob.RunDone{})
}

// checkRun tells why req is outside the agent's bounds: a destination
// not in its list or itself, a scenario that does not parse, or too much
// memory.
func (a *agent) checkRun(req *oob.Run) error {
	switch {
	case strings.EqualFold(req.Dst, a.node):
		return fmt.Errorf("dst %q is this node: a run needs two", req.Dst)
	case !a.allowed[strings.ToLower(req.Dst)]:
		return fmt.Errorf("dst %q is not in this agent's node list (%d other nodes): it sends only to those", req.Dst, len(a.allowed))
	}
	mem, err := a.m.check(req.Scenario)
	if err != nil {
		return fmt.Errorf("scenario %q: %w", req.Scenario, err)
	}
	if mem > a.maxMem {
		return fmt.Errorf("scenario %q needs about %d bytes of buffers, over -max-mem %d: %w", req.Scenario, mem, a.maxMem, ErrOverLimit)
	}
	return nil
}

// checkAgentFlags tells what is wrong with the -agent flags: one given
// without -agent, both -nodes and -nodes-file, a port outside 1..65535,
// a run timeout that is not positive.
func checkAgentFlags(a agentOptions, fs *flag.FlagSet) error {
	var errs []error
	if !a.on {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "node", "nodes", "nodes-file", "agent-port", "run-timeout":
				errs = append(errs, fmt.Errorf("-%s is a flag of -agent, which is not given", f.Name))
			}
		})
		return errors.Join(errs...)
	}
	if a.nodes != "" && a.nodesFile != "" {
		errs = append(errs, fmt.Errorf("-nodes %q and -nodes-file %q: give one of them", a.nodes, a.nodesFile))
	}
	if a.port < 0 || a.port > 65535 {
		errs = append(errs, fmt.Errorf("-agent-port %d: want 1..65535 (0: -listen's)", a.port))
	}
	if a.runTimeout <= 0 {
		errs = append(errs, fmt.Errorf("-run-timeout %v must be positive", a.runTimeout))
	}
	if a.node != "" {
		if err := oob.CheckNodeName(a.node); err != nil {
			errs = append(errs, fmt.Errorf("-node: %w", err))
		}
	}
	return errors.Join(errs...)
}

// agentNodes resolves this node's name and the node list of the -agent
// flags: -nodes, -nodes-file, or else the Slurm job's nodes. This node
// must be in the list: it is how the coordinator names it.
func agentNodes(ctx context.Context, a agentOptions, getenv func(string) string) (node string, list []string, err error) {
	switch {
	case a.nodes != "":
		list, err = nodes.Split(a.nodes, "-nodes", maxAgentNodes)
	case a.nodesFile != "":
		list, err = nodes.ReadFile(a.nodesFile, maxAgentNodes)
	default:
		list, err = nodes.Slurm(ctx, maxAgentNodes)
		if err != nil {
			err = fmt.Errorf("-agent without -nodes or -nodes-file: %w", err)
		}
	}
	if err != nil {
		return "", nil, err
	}
	node = a.node
	// SLURMD_NODENAME first: srun passes the submitting shell's
	// environment, RDMA_NODE_NAME included, to every task.
	for _, v := range []string{getenv("SLURMD_NODENAME"), getenv("RDMA_NODE_NAME")} {
		if node == "" {
			node = v
		}
	}
	if node == "" {
		h, herr := os.Hostname()
		if herr != nil {
			return "", nil, fmt.Errorf("this node's name: %w (give -node)", herr)
		}
		node, _, _ = strings.Cut(h, ".")
	}
	if err := oob.CheckNodeName(node); err != nil {
		return "", nil, fmt.Errorf("this node's name: %w (give -node)", err)
	}
	if !slices.ContainsFunc(list, func(n string) bool { return strings.EqualFold(n, node) }) {
		return "", nil, fmt.Errorf("this node, %q, is not in the node list (%d nodes, first %q): the coordinator names it from that list (give -node)", node, len(list), list[0])
	}
	return node, list, nil
}

// maxAgentNodes bounds an agent's node list (schedule.MaxNodes's value).
const maxAgentNodes = 100000

// startAgent makes the -agent mode's state for the server listening on
// ln, and logs what it may do.
func startAgent(ctx context.Context, o options, ln net.Listener, m measurer) (*agent, error) {
	node, list, err := agentNodes(ctx, o.agent, os.Getenv)
	if err != nil {
		return nil, err
	}
	port := o.agent.port
	if port == 0 {
		port = ln.Addr().(*net.TCPAddr).Port
	}
	a := newAgent(node, list, port, o.agent.runTimeout, o.lim.client.Mem, m)
	log.Printf("agent %s: runs scenarios to the %d other nodes of its list at port %d, one run request at a time, each within %v", node, len(a.allowed), port, o.agent.runTimeout)
	return a, nil
}
