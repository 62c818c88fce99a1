package main

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// freeAddr is a loopback address nobody listens on (one a listener had a
// moment ago).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// An agent that starts listening after the coordinator's first dial is
// reached: the refusals before it are retried.
func TestDialAgentWaitsForALateAgent(t *testing.T) {
	addr := freeAddr(t)
	late := 300 * time.Millisecond // the agent starts this long after the first dial
	served := make(chan error, 1)
	go func() {
		time.Sleep(late)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			served <- err
			return
		}
		defer ln.Close()
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		served <- err
	}()
	start := time.Now()
	conn, err := dialAgent(context.Background(), addr, 10*time.Second)
	require.NoError(t, err)
	conn.Close()
	assert.GreaterOrEqual(t, time.Since(start), late)
	require.NoError(t, <-served)
}

// Nobody ever listens: the dial gives up at the window's end, and the
// error names the address, the tries and the window, and wraps the
// refusal.
func TestDialAgentGivesUpAtTheWindow(t *testing.T) {
	addr := freeAddr(t)
	const window = 400 * time.Millisecond
	start := time.Now()
	conn, err := dialAgent(context.Background(), addr, window)
	took := time.Since(start)
	require.Error(t, err)
	assert.Nil(t, conn)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Contains(t, err.Error(), "at "+addr+": not listening after ")
	assert.Contains(t, err.Error(), " tries within 400ms (the agent did not start, or a wrong -port)")
	assert.GreaterOrEqual(t, took, window)
	assert.Less(t, took, window+2*time.Second)
}

// The coordinator's end (ctx) stops the retries at once.
func TestDialAgentStopsWithTheContext(t *testing.T) {
	addr := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := dialAgent(ctx, addr, time.Minute)
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestNotListeningYet(t *testing.T) {
	assert.True(t, notListeningYet(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}))
	assert.True(t, notListeningYet(&net.DNSError{Err: "no such host", Name: "node7", IsNotFound: true}))
	assert.False(t, notListeningYet(&net.DNSError{Err: "i/o timeout", Name: "node7", IsTimeout: true}))
	assert.False(t, notListeningYet(&net.OpError{Op: "dial", Err: syscall.EHOSTUNREACH}))
	assert.False(t, notListeningYet(context.DeadlineExceeded))
	assert.False(t, notListeningYet(errors.New("other")))
}

func TestWithCounterUnits(t *testing.T) {
	r := withCounterUnits(oob.RunResult{Iters: 50, Values: map[string]float64{"MB/s": 3.5},
		Counters: map[string]uint64{"completer_retry_err": 4, "sent_pkts": 3200, "duplicate_request": 0}})
	assert.Equal(t, map[string]float64{"MB/s": 3.5, "completer_retry_err/run": 4}, r.Values,
		"watched counters that moved become values; traffic and zero ones do not")
	assert.Equal(t, map[string]string{"completer_retry_err/run": "lower"}, r.Units)
	assert.Equal(t, uint64(3200), r.Counters["sent_pkts"], "the node totals keep every counter")
	bare := withCounterUnits(oob.RunResult{Iters: 1, Values: map[string]float64{"ns/op": 1}})
	assert.Nil(t, bare.Units, "no counter, no unit")
}
