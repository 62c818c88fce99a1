package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// fakeMeasurer measures nothing: run returns a result whose MB/s is
// the run's number, after block (if set) is closed; failAt makes that
// run (1-based) fail.
type fakeMeasurer struct {
	mu      sync.Mutex
	runs    int
	addrs   []string
	block   chan struct{}
	started chan struct{} // when set: signaled as a run begins (its agent is busy by then)
	ended   chan error    // when set: a blocked run's end (its context's cause)
	failAt  int
}

func (f *fakeMeasurer) facts(node string) ([]string, error) {
	return []string{"fabric.node." + node + ".dev: fake0"}, nil
}

func (f *fakeMeasurer) check(scenario string) (int64, error) {
	switch scenario {
	case "EchoRPC":
		return 0, errors.New("EchoRPC is not one Parse takes")
	case "WriteBW/size=1073741824":
		return 1 << 30 * 128, nil
	}
	return 64 << 10, nil
}

func (f *fakeMeasurer) run(ctx context.Context, addr, scenario string, iters int) (*oob.RunResult, error) {
	if f.started != nil {
		select {
		case f.started <- struct{}{}:
		default:
		}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			if f.ended != nil {
				f.ended <- context.Cause(ctx)
			}
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	f.addrs = append(f.addrs, addr)
	if f.runs == f.failAt {
		return nil, errors.New("the QP went to the error state")
	}
	return &oob.RunResult{Iters: int64(iters), Values: map[string]float64{"ns/op": 1000, "MB/s": float64(f.runs)},
		Counters: map[string]uint64{"port_xmit_data": 42}}, nil
}

// startAgent serves a fake device with an agent of node1 over nodes
// node1..node3 (port 18515) measuring with m.
func startAgentServer(t *testing.T, m measurer, timeout time.Duration) (string, *server) {
	t.Helper()
	addr, srv := startServer(t, newFakeDev(), testToken, hostLimits())
	srv.agent = newAgent("node1", []string{"node1", "Node2", "node3"}, 18515, timeout, hostLimits().client.Mem, m)
	return addr, srv
}

// agentCall sends one agent request on a fresh authenticated connection
// and returns the results up to RunDone, or the refusal.
func agentCall(t *testing.T, addr string, t0 oob.MsgType, req any) ([]oob.RunResult, *oob.FactsOK, error) {
	t.Helper()
	c := dialAuth(t, addr, testToken)
	require.NoError(t, oob.WriteFrame(c, t0, req))
	if t0 == oob.MsgFacts {
		var ok oob.FactsOK
		err := oob.Decode(c, oob.MsgFactsOK, &ok)
		return nil, &ok, err
	}
	var out []oob.RunResult
	for {
		typ, payload, err := oob.ReadFrame(c)
		if err != nil {
			return out, nil, err
		}
		if typ == oob.MsgRunDone {
			return out, nil, nil
		}
		var r oob.RunResult
		if err := oob.DecodeFrame(typ, payload, oob.MsgRunResult, &r); err != nil {
			return out, nil, err
		}
		out = append(out, r)
	}
}

// TestAgentRuns: a Run streams one result per run, then RunDone; the
// agent dials the destination at the agents' port; Facts names the node.
func TestAgentRuns(t *testing.T) {
	m := &fakeMeasurer{}
	addr, _ := startAgentServer(t, m, time.Minute)
	res, _, err := agentCall(t, addr, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW/size=65536", Runs: 3, Iters: 500})
	require.NoError(t, err)
	require.Len(t, res, 3)
	for i, r := range res {
		assert.Equal(t, int64(500), r.Iters)
		assert.Equal(t, float64(i+1), r.Values["MB/s"])
	}
	assert.Equal(t, []string{"node2:18515", "node2:18515", "node2:18515"}, m.addrs, "dst at the agents' port (node names match ignoring case)")

	_, facts, err := agentCall(t, addr, oob.MsgFacts, &oob.Facts{})
	require.NoError(t, err)
	assert.Equal(t, &oob.FactsOK{Node: "node1", Lines: []string{"fabric.node.node1.dev: fake0"}}, facts)
}

// TestAgentRefuses: every bound of the driver endpoint, before anything
// runs, with the value named.
func TestAgentRefuses(t *testing.T) {
	m := &fakeMeasurer{}
	addr, _ := startAgentServer(t, m, time.Minute)
	run := func(dst, sc string, runs int) *oob.Run {
		return &oob.Run{Dst: dst, Scenario: sc, Runs: runs, Iters: 10}
	}
	for _, tc := range []struct {
		name string
		req  *oob.Run
		want string
	}{
		{"not in the list", run("node9", "WriteBW", 1), `dst "node9" is not in this agent's node list (2 other nodes)`},
		{"itself", run("NODE1", "WriteBW", 1), `dst "NODE1" is this node`},
		{"an address, not a node", run("10.0.0.1", "WriteBW", 1), `dst "10.0.0.1" is not in this agent's node list`},
		{"too many runs", run("node2", "WriteBW", 101), "runs 101 out of range 1..100"},
		{"bad scenario", run("node2", "EchoRPC", 1), `scenario "EchoRPC": EchoRPC is not one Parse takes`},
		{"over -max-mem", run("node2", "WriteBW/size=1073741824", 1), "over -max-mem"},
		{"not a node name", run("node2/80", "WriteBW", 1), `node name "node2/80" holds '/'`},
		{"a port", run("node2:80", "WriteBW", 1), `dst "node2:80" is not in this agent's node list`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := agentCall(t, addr, oob.MsgRun, tc.req)
			var pe *oob.PeerError
			require.ErrorAs(t, err, &pe)
			assert.Contains(t, pe.Msg, tc.want)
		})
	}
	t.Run("unknown field", func(t *testing.T) {
		_, _, err := agentCall(t, addr, oob.MsgRun, map[string]any{"dst": "node2", "scenario": "WriteBW", "runs": 1, "iters": 1, "bytes": 1 << 40})
		var pe *oob.PeerError
		require.ErrorAs(t, err, &pe)
		assert.Contains(t, pe.Msg, `unknown field "bytes"`)
	})
	assert.Zero(t, m.runs, "nothing ran")
}

// TestAgentOnlyWithFlag: a peer without -agent refuses Facts, Clock
// and Run.
func TestAgentOnlyWithFlag(t *testing.T) {
	addr, _ := startServer(t, newFakeDev(), testToken, hostLimits())
	_, _, err := agentCall(t, addr, oob.MsgFacts, &oob.Facts{})
	var pe *oob.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "Facts: this rdmapeer is not an agent")
	c := dialAuth(t, addr, testToken)
	require.NoError(t, oob.WriteFrame(c, oob.MsgClock, &oob.Clock{}))
	err = oob.Decode(c, oob.MsgClockOK, &oob.ClockOK{})
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "Clock: this rdmapeer is not an agent")
}

// TestAgentClock: an agent answers Clock with its system clock, for the
// coordinator's offset (read between the request and the answer here).
func TestAgentClock(t *testing.T) {
	addr, _ := startAgentServer(t, &fakeMeasurer{}, time.Minute)
	c := dialAuth(t, addr, testToken)
	t1 := time.Now()
	var ok oob.ClockOK
	require.NoError(t, oob.Call(c, time.Second, oob.MsgClock, &oob.Clock{}, oob.MsgClockOK, &ok))
	t3 := time.Now()
	assert.GreaterOrEqual(t, ok.Now, t1.UnixNano())
	assert.LessOrEqual(t, ok.Now, t3.UnixNano())
}

// TestAgentOneRunAtATime: a second Run while one runs is refused as
// busy; the first completes.
func TestAgentOneRunAtATime(t *testing.T) {
	m := &fakeMeasurer{block: make(chan struct{}), started: make(chan struct{}, 1)}
	addr, _ := startAgentServer(t, m, time.Minute)
	first := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			first <- err
			return
		}
		defer c.Close()
		if _, err := oob.Handshake(c, testToken, "first", 10*time.Second); err != nil {
			first <- err
			return
		}
		first <- oob.WriteFrame(c, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW", Runs: 1, Iters: 1})
		var r oob.RunResult
		first <- oob.Decode(c, oob.MsgRunResult, &r)
	}()
	require.NoError(t, <-first)
	// The second Run only once the first is running: sent sooner, it
	// could be served first and block in the measurer.
	select {
	case <-m.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the first Run never started")
	}
	require.Eventually(t, func() bool {
		_, _, err := agentCall(t, addr, oob.MsgRun, &oob.Run{Dst: "node3", Scenario: "WriteBW", Runs: 1, Iters: 1})
		var pe *oob.PeerError
		return errors.As(err, &pe) && assert.Contains(t, pe.Msg, "busy")
	}, 5*time.Second, 50*time.Millisecond)
	close(m.block)
	assert.NoError(t, <-first)
}

// TestAgentRunFails: a run that fails ends the answer with an Error
// naming the run and the link, after the results before it.
func TestAgentRunFails(t *testing.T) {
	addr, _ := startAgentServer(t, &fakeMeasurer{failAt: 2}, time.Minute)
	res, _, err := agentCall(t, addr, oob.MsgRun, &oob.Run{Dst: "node3", Scenario: "WriteBW", Runs: 3, Iters: 1})
	assert.Len(t, res, 1)
	var pe *oob.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "run 2 of 3, node1 -> node3 WriteBW: the QP went to the error state")
}

// TestAgentRunTimeout: a Run ends within -run-timeout.
func TestAgentRunTimeout(t *testing.T) {
	addr, _ := startAgentServer(t, &fakeMeasurer{block: make(chan struct{})}, 200*time.Millisecond)
	start := time.Now()
	_, _, err := agentCall(t, addr, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW", Runs: 1, Iters: 1})
	var pe *oob.PeerError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, pe.Msg, "run 1 of 1, node1 -> node2 WriteBW: not done within -run-timeout 200ms")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// blockingMeasurer's runs block until their context ends (or block is
// closed), telling their start and their end.
func blockingMeasurer() *fakeMeasurer {
	return &fakeMeasurer{block: make(chan struct{}), started: make(chan struct{}, 1), ended: make(chan error, 1)}
}

// runStarted sends a Run to node2 on a fresh authenticated connection to
// addr and returns the connection once m's run has begun.
func runStarted(t *testing.T, addr string, m *fakeMeasurer) net.Conn {
	t.Helper()
	c := dialAuth(t, addr, testToken)
	require.NoError(t, oob.WriteFrame(c, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW", Runs: 1, Iters: 1}))
	select {
	case <-m.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the Run never started")
	}
	return c
}

// TestAgentClientLeaves: a client that closes its connection mid-run
// ends the run within a second (its context is cancelled, which stops
// the loops: see rdmaMeasurer.run), and the agent takes the next Run at
// once instead of refusing it as busy until -run-timeout.
func TestAgentClientLeaves(t *testing.T) {
	m := blockingMeasurer()
	addr, _ := startAgentServer(t, m, time.Minute)
	c := runStarted(t, addr, m)
	left := time.Now()
	require.NoError(t, c.Close())
	select {
	case cause := <-m.ended:
		assert.ErrorIs(t, cause, errClientLeft)
		assert.Less(t, time.Since(left), time.Second, "the run ended %v after its client left", time.Since(left))
		t.Logf("the run ended %v after its client left: %v", time.Since(left), cause)
	case <-time.After(5 * time.Second):
		t.Fatal("the run went on 5 s after its client left")
	}
	close(m.block)
	require.Eventually(t, func() bool {
		_, _, err := agentCall(t, addr, oob.MsgRun, &oob.Run{Dst: "node3", Scenario: "WriteBW", Runs: 1, Iters: 1})
		return err == nil
	}, time.Second, 20*time.Millisecond, "the next Run is taken")
}

// TestAgentShutdownMidRun: the peer's shutdown ends a running Run (its
// context) and the server returns within seconds.
func TestAgentShutdownMidRun(t *testing.T) {
	m := blockingMeasurer()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := newServer(newFakeDev(), testToken, hostLimits())
	s.logf = t.Logf
	s.agent = newAgent("node1", []string{"node1", "node2"}, 18515, time.Minute, hostLimits().client.Mem, m)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, s) }()
	c := runStarted(t, ln.Addr().String(), m)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
		assert.Less(t, time.Since(start), 5*time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("serve still running 10 s after its shutdown")
	}
	var pe *oob.PeerError
	_, _, err = oob.ReadFrame(c)
	if errors.As(err, &pe) {
		assert.Contains(t, pe.Msg, "shutting down")
	}
}

// TestAgentNodes: the node list and this node's name from the flags,
// Slurm's environment and the host name; this node must be in the list.
func TestAgentNodes(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	ctx := context.Background()
	node, list, err := agentNodes(ctx, agentOptions{on: true, nodes: "a,b,c", node: "b"}, env())
	require.NoError(t, err)
	assert.Equal(t, "b", node)
	assert.Equal(t, []string{"a", "b", "c"}, list)

	node, _, err = agentNodes(ctx, agentOptions{on: true, nodes: "a,b,c"}, env("RDMA_NODE_NAME", "a", "SLURMD_NODENAME", "c"))
	require.NoError(t, err)
	assert.Equal(t, "c", node, "SLURMD_NODENAME first: srun passes RDMA_NODE_NAME from the submitting shell")

	_, _, err = agentNodes(ctx, agentOptions{on: true, nodes: "a,b", node: "z"}, env())
	assert.ErrorContains(t, err, `this node, "z", is not in the node list (2 nodes, first "a")`)

	_, _, err = agentNodes(ctx, agentOptions{on: true, nodes: "a,A"}, env())
	assert.ErrorContains(t, err, `node "A" is already at -nodes: name 1`)

	t.Setenv("SLURM_JOB_NODELIST", "")
	_, _, err = agentNodes(ctx, agentOptions{on: true}, env())
	assert.ErrorContains(t, err, "-agent without -nodes or -nodes-file: SLURM_JOB_NODELIST is not set")
}

// TestAgentFlags: the -agent flags are refused without -agent, and
// checked with it.
func TestAgentFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-nodes", "a,b"}, "-nodes is a flag of -agent, which is not given"},
		{[]string{"-agent", "-nodes", "a", "-nodes-file", "f"}, `-nodes "a" and -nodes-file "f": give one of them`},
		{[]string{"-agent", "-agent-port", "70000"}, "-agent-port 70000: want 1..65535"},
		{[]string{"-agent", "-run-timeout", "0s"}, "-run-timeout 0s must be positive"},
		{[]string{"-agent", "-node", "a/b"}, `-node: node name "a/b" holds '/'`},
	} {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			_, err := parseFlags(flag.NewFlagSet("agent", flag.ContinueOnError), tc.args)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}
