package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
)

// scenarioKey is the part of a row's name that holds the scenario: a
// coord.Scenario is key=value parts, and a bench_test name starts with
// its family ("WriteBW/size=65536" → "bench=WriteBW/size=65536").
const scenarioKey = "bench="

// remoteAgent is a node's rdmapeer -agent, as the coordinator drives it
// (coord.Agent): one TCP connection per request, authenticated as every
// rdmapeer session is (package oob).
type remoteAgent struct {
	node  string
	addr  string // host:port
	token string
	// dial bounds the connection and handshake; iters maps a scenario
	// (without bench=) to its runs' fixed count (absent: the family's
	// default, itersFor).
	dial  time.Duration
	iters map[string]int
}

// connect dials the agent (dialAgent: a refusal is retried within
// a.dial) and authenticates; the connection is closed when ctx ends.
func (a *remoteAgent) connect(ctx context.Context) (net.Conn, func(), error) {
	conn, err := dialAgent(ctx, a.addr, a.dial)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s: %w", a.node, err)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	done := func() { stop(); conn.Close() }
	if _, err := oob.Handshake(conn, a.token, "rdmafabric", a.dial); err != nil {
		done()
		return nil, nil, fmt.Errorf("agent %s at %s: %w", a.node, a.addr, err)
	}
	return conn, done, nil
}

// Facts asks the agent for its node's configuration lines; the agent
// must call itself what the coordinator calls it.
func (a *remoteAgent) Facts(ctx context.Context) ([]string, error) {
	conn, done, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	var ok oob.FactsOK
	if err := oob.Call(conn, a.dial, oob.MsgFacts, &oob.Facts{}, oob.MsgFactsOK, &ok); err != nil {
		return nil, fmt.Errorf("agent %s: %w", a.node, err)
	}
	if !strings.EqualFold(ok.Node, a.node) {
		return nil, fmt.Errorf("agent at %s calls itself %q, not %q: its -node (or the node lists) disagree", a.addr, ok.Node, a.node)
	}
	return ok.Lines, nil
}

// Clock asks the agent for its system clock (oob.Clock): coord measures
// each node's clock offset with it (coord.Clocked).
func (a *remoteAgent) Clock(ctx context.Context) (coord.ClockSample, error) {
	conn, done, err := a.connect(ctx)
	if err != nil {
		return coord.ClockSample{}, err
	}
	defer done()
	var ok oob.ClockOK
	sent := time.Now() // after the connection's setup: the exchange alone
	if err := oob.Call(conn, a.dial, oob.MsgClock, &oob.Clock{}, oob.MsgClockOK, &ok); err != nil {
		return coord.ClockSample{}, fmt.Errorf("agent %s: %w", a.node, err)
	}
	return coord.ClockSample{Sent: sent, Agent: time.Unix(0, ok.Now), Back: time.Now()}, nil
}

// Run asks the agent to run sc runs times against dst and reads the
// results as they come, until RunDone; ctx's end closes the connection.
func (a *remoteAgent) Run(ctx context.Context, dst string, sc coord.Scenario, runs int) ([]coord.Result, error) {
	name, ok := strings.CutPrefix(sc.Name, scenarioKey)
	if !ok {
		return nil, fmt.Errorf("scenario %q: not a %s… scenario", sc.Name, scenarioKey)
	}
	conn, done, err := a.connect(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	req := &oob.Run{Dst: dst, Scenario: name, Runs: runs, Iters: a.iters[name]}
	if req.Iters == 0 {
		req.Iters = itersFor(name)
	}
	if err := oob.WriteFrame(conn, oob.MsgRun, req); err != nil {
		return nil, err
	}
	var out []coord.Result
	for {
		// The runs take what they take: ctx (the pair timeout) bounds
		// them; the deadline only catches a dead connection.
		if dl, ok := ctx.Deadline(); ok {
			conn.SetReadDeadline(dl)
		}
		t, payload, err := oob.ReadFrame(conn)
		if err == nil && t == oob.MsgRunDone {
			err = oob.DecodeFrame(t, payload, oob.MsgRunDone, &oob.RunDone{})
			if err == nil && len(out) != runs {
				err = fmt.Errorf("%d results for %d runs", len(out), runs)
			}
			if err != nil {
				return nil, fmt.Errorf("agent %s: %w", a.node, err)
			}
			return out, nil
		}
		var res oob.RunResult
		if err == nil {
			err = oob.DecodeFrame(t, payload, oob.MsgRunResult, &res)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("agent %s: %w", a.node, err)
		}
		if len(out) == runs {
			return nil, fmt.Errorf("agent %s: more than %d results", a.node, runs)
		}
		out = append(out, withCounterUnits(res))
	}
}

// withCounterUnits is a run's result for the stream: its values, and its
// source node's watched counters that moved (rdmatest.Watched:
// retransmissions, retries, sequence errors, drops, …) as values
// "<counter>/run", lower is better, as rdmatest reports them on one
// host. blame reads them per link: the node totals written after the
// last row cannot tell a lossy link from a lossy node at its end (issue
// #44).
func withCounterUnits(res oob.RunResult) coord.Result {
	r := coord.Result{Iters: res.Iters, Values: res.Values, Units: res.Units, Counters: res.Counters}
	if res.Start != 0 { // validated: both set, in order
		r.Start, r.End = time.Unix(0, res.Start), time.Unix(0, res.End)
	}
	for c, v := range res.Counters {
		if v == 0 || !rdmatest.Watched(c) {
			continue
		}
		if r.Units == nil {
			r.Units = make(map[string]string)
		}
		if r.Values == nil {
			r.Values = make(map[string]float64)
		}
		r.Values[c+"/run"], r.Units[c+"/run"] = float64(v), "lower"
	}
	return r
}

// itersFor is a run's fixed count when -iters is not given: perftest's
// defaults, 1000 iterations for a latency scenario and 5000 for a
// stream (name is checked by checkRunOptions).
func itersFor(name string) int {
	if n, err := scenario.Parse(name); err == nil && n.Spec.Kind == scenario.KindLatency {
		return 1000
	}
	return 5000
}

// dialAgent connects to the agent at addr, trying again while the
// answer is "not listening yet" until window has passed. The agents and
// the coordinator start side by side (srun … rdmapeer -agent & then
// rdmafabric run, as docs/fabric.md shows; a Kubernetes Job beside the
// agents' Indexed Job), and nothing tells the coordinator when an agent
// listens: an agent still starting refuses the connection
// (ECONNREFUSED), and under Kubernetes its name may not be in DNS yet
// (not found). Those are retried, 50 ms apart at first and at most 1 s;
// any other error (a timeout, no route) is the answer. The error after
// the last try names the address, the tries and the window, and wraps
// the last cause (errors.Is(err, syscall.ECONNREFUSED)).
func dialAgent(ctx context.Context, addr string, window time.Duration) (net.Conn, error) {
	deadline := time.Now().Add(window)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	var refused error // the last "not listening yet"
	gaveUp := func(tries int) error {
		return fmt.Errorf("at %s: not listening after %d tries within %v (the agent did not start, or a wrong -port): %w", addr, tries, window, refused)
	}
	for tries, wait := 1, 50*time.Millisecond; ; tries, wait = tries+1, min(2*wait, time.Second) {
		conn, err := d.DialContext(dctx, "tcp", addr)
		switch {
		case err == nil:
			return conn, nil
		case notListeningYet(err):
			refused = err
		case refused != nil && (dctx.Err() != nil || isTimeout(err)):
			// The window ended during this try (the dial's timer can
			// fire a moment before the context's).
			return nil, gaveUp(tries - 1)
		default:
			return nil, fmt.Errorf("at %s: %w", addr, err)
		}
		left := time.Until(deadline)
		if left <= 0 || ctx.Err() != nil {
			return nil, gaveUp(tries)
		}
		t := time.NewTimer(min(wait, left))
		select {
		case <-t.C:
		case <-dctx.Done():
			t.Stop()
			return nil, gaveUp(tries)
		}
	}
}

// notListeningYet tells whether a dial error may go away once the agent
// runs: a refused connection, or a name its DNS does not know yet.
func notListeningYet(err error) bool {
	var dns *net.DNSError
	return errors.Is(err, syscall.ECONNREFUSED) || (errors.As(err, &dns) && dns.IsNotFound)
}

// isTimeout tells whether err is a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
