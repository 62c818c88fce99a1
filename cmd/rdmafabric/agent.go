package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
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
	// dial bounds the connection and handshake; iters is each run's
	// fixed count (0: the family's default, itersFor).
	dial  time.Duration
	iters int
}

// connect dials the agent and authenticates; the connection is closed
// when ctx ends.
func (a *remoteAgent) connect(ctx context.Context) (net.Conn, func(), error) {
	d := net.Dialer{Timeout: a.dial}
	conn, err := d.DialContext(ctx, "tcp", a.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("agent %s at %s: %w", a.node, a.addr, err)
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
	req := &oob.Run{Dst: dst, Scenario: name, Runs: runs, Iters: a.iters}
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
		out = append(out, coord.Result{Iters: res.Iters, Values: res.Values, Units: res.Units, Counters: res.Counters})
	}
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
