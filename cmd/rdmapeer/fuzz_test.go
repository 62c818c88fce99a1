package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// fuzzSession plays one whole session against a server with the fake
// device over an in-memory connection: when in[0] is odd the harness
// does a correct handshake first (so the fuzzer reaches Setup, Start and
// Stop, or an agent's Facts and Run); when its bit 1 is set the server
// is an agent (-agent, with a fake measurer); then it sends the rest of
// in as the client's frames, and reads whatever the peer answers.
// Nothing may panic, leak or hang, and an agent is free again after.
func fuzzSession(t *testing.T, in []byte) {
	f := newFakeDev()
	lim := hostLimits()
	lim.hello, lim.idle = time.Second, time.Second
	s := newServer(f, testToken, lim)
	s.logf = func(string, ...any) {}
	if len(in) > 0 && in[0]&2 == 2 {
		s.agent = newAgent("node1", []string{"node1", "node2"}, 18515, time.Second, lim.client.Mem, &fakeMeasurer{})
	}
	server, client := net.Pipe()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.handle(context.Background(), server)
	}()
	if len(in) > 0 && in[0]&1 == 1 {
		if _, err := handshake(client, testToken); err != nil {
			t.Fatalf("the harness's handshake failed: %v", err)
		}
		in = in[1:]
	}
	// The peer answers while frames arrive: read concurrently.
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(io.Discard, client)
	}()
	client.Write(in)
	client.Close()
	<-read
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the session did not end")
	}
	require.Zero(t, s.panics.Load(), "a session panicked")
	_, live, _ := f.state()
	require.Zero(t, live, "a passive side was not released")
	require.Equal(t, budget{}, s.pool.inUse(), "the budget was not returned")
	require.Empty(t, s.slots, "a client slot was not returned")
	if s.agent != nil {
		require.True(t, s.agent.busy.TryLock(), "the agent is still busy")
	}
}

func frames(t testing.TB, msgs ...any) []byte {
	var b bytes.Buffer
	for i := 0; i < len(msgs); i += 2 {
		require.NoError(t, oob.WriteFrame(&b, msgs[i].(oob.MsgType), msgs[i+1]))
	}
	return b.Bytes()
}

// FuzzSession drives whole sessions — frame sequences after a correct or
// no handshake — through the peer with a fake device: no input panics a
// session, leaks a passive side, a budget or a slot, or hangs.
func FuzzSession(f *testing.F) {
	auth := []byte{1}
	whole := frames(f, oob.MsgSetup, writeEchoSetup(), oob.MsgStart, &oob.Start{}, oob.MsgStop, &oob.Stop{})
	f.Add(append(auth, whole...))
	zero := writeEchoSetup()
	zero.Scenario.Size = 0
	f.Add(append(auth, frames(f, oob.MsgSetup, zero, oob.MsgStart, &oob.Start{})...))
	f.Add(append(auth, frames(f, oob.MsgSetup, targetSetup(4, 4096), oob.MsgStop, &oob.Stop{})...))
	f.Add(append(auth, frames(f, oob.MsgStart, &oob.Start{}, oob.MsgSetup, writeEchoSetup())...))
	f.Add(append(auth, frames(f, oob.MsgSetup, writeEchoSetup(), oob.MsgSetup, writeEchoSetup())...))
	f.Add(append(auth, frames(f, oob.MsgError, &oob.Error{Msg: "x"})...))
	// A program for side B (role program), whole and with a bad step.
	f.Add(append(auth, frames(f, oob.MsgSetup, programSetup(), oob.MsgStart, &oob.Start{}, oob.MsgStop, &oob.Stop{Expect: 3})...))
	badProg := programSetup()
	badProg.Program.Steps[1].WRs[0].Local.Off = 1 << 40
	f.Add(append(auth, frames(f, oob.MsgSetup, badProg)...))
	agent := []byte{3}
	f.Add(append(agent, frames(f, oob.MsgFacts, &oob.Facts{})...))
	f.Add(append(agent, frames(f, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW/size=65536", Runs: 3, Iters: 10})...))
	f.Add(append(agent, frames(f, oob.MsgRun, map[string]any{"dst": "node2", "scenario": "WriteBW", "runs": 1, "iters": 1, "extra": 1})...))
	f.Add(append(agent, frames(f, oob.MsgRun, &oob.Run{Dst: "node1", Scenario: "WriteBW", Runs: 1, Iters: 1}, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW", Runs: 1, Iters: 1})...))
	f.Add(append(auth, frames(f, oob.MsgRun, &oob.Run{Dst: "node2", Scenario: "WriteBW", Runs: 1, Iters: 1})...))
	nonce := bytes.Repeat([]byte{1}, oob.NonceLen)
	f.Add(append([]byte{0}, frames(f, oob.MsgHello, &oob.Hello{Version: oob.Version, Nonce: nonce}, oob.MsgAuth, &oob.Auth{Proof: nonce})...))
	f.Add([]byte{0})
	f.Add(append([]byte{0}, "GET / HTTP/1.1\r\n\r\n"...))
	f.Fuzz(func(t *testing.T, in []byte) { fuzzSession(t, in) })
}
