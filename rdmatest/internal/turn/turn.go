// Package turn lets a benchmark process take turns with another one
// (make compare): under RDMA_TURN each run of a benchmark waits for its
// turn on a FIFO before it starts, so that two processes' runs alternate
// run by run and each has the machine to itself.
//
// ci/interleave.sh runs OLD's and NEW's benchmark binaries side by side,
// both started with -test.count N on one benchmark, and lets them run
// one run at a time in ABBA order, so that the two sides' runs alternate
// run by run with no process start between them. RDMA_TURN=IN,OUT names
// two FIFOs that interleave.sh made. Before each run of a benchmark the
// process writes "ready NAME" on OUT and waits for a line "go" on IN
// (Take); after its tests it writes "exit" (End). The engine takes the
// turn at the first call of a *testing.B into a family's entry (Latency,
// Stream, EchoRPC or ControlPath), before any setup; for a pattern of
// one's own, at Measure, after the pattern's Pair was made. A run is
// everything testing does with one *testing.B: the b.N = 1 call and the
// calls of the b.N ramp. The process that waits is idle (blocked on the
// FIFO), so the other side's run has the machine to itself.
//
// Without RDMA_TURN nothing waits.
package turn

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// turnEnv names the FIFOs.
const turnEnv = "RDMA_TURN"

// Wait is how long a process waits for its turn before the run fails.
// The other side's run is the wait: seconds at make compare's default.
var Wait = 10 * time.Minute

var turn struct {
	sync.Mutex
	env  string // the RDMA_TURN the files were opened for
	err  error
	in   *os.File
	out  *os.File
	r    *bufio.Reader
	last *testing.B // the run that had the last turn
}

// openTurn opens RDMA_TURN's FIFOs (read-write, so that opening does not
// wait for the other end), again when RDMA_TURN has changed; ok is false
// without RDMA_TURN. The caller holds turn's lock.
func openTurn() (ok bool, err error) {
	v := os.Getenv(turnEnv)
	if v == "" {
		return false, nil
	}
	if v == turn.env {
		return true, turn.err
	}
	for _, f := range []*os.File{turn.in, turn.out} {
		if f != nil {
			f.Close()
		}
	}
	turn.env, turn.in, turn.out, turn.last = v, nil, nil, nil
	turn.err = func() error {
		in, out, found := strings.Cut(v, ",")
		if !found || in == "" || out == "" {
			return fmt.Errorf("rdmatest: %s=%q: want IN,OUT (two FIFOs)", turnEnv, v)
		}
		var err error
		if turn.in, err = os.OpenFile(in, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("rdmatest: %s: %w", turnEnv, err)
		}
		if turn.out, err = os.OpenFile(out, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("rdmatest: %s: %w", turnEnv, err)
		}
		turn.r = bufio.NewReader(turn.in)
		return nil
	}()
	return true, turn.err
}

// Take waits for this run's turn under RDMA_TURN: once per *testing.B,
// at its first call into the engine, before any setup; then it resets
// b's timer (the wait is no part of the run, nor of the ramp's
// estimate). Without RDMA_TURN, or at a later call of the same run, it
// returns at once. The error is a wait that failed or timed out (Wait):
// the caller fails b with it.
func Take(b *testing.B) error {
	turn.Lock()
	defer turn.Unlock()
	ok, err := openTurn()
	if !ok {
		return nil
	}
	if err == nil && turn.last == b {
		return nil // a later call of the same run (the b.N ramp)
	}
	turn.last = b
	if err == nil {
		err = waitTurn(b.Name())
	}
	if err != nil {
		return err
	}
	b.ResetTimer() // the wait is no part of the run (nor of the ramp's estimate)
	return nil
}

// waitTurn writes "ready NAME" and waits for "go".
func waitTurn(name string) error {
	if _, err := fmt.Fprintf(turn.out, "ready %s\n", name); err != nil {
		return fmt.Errorf("rdmatest: %s: announcing the run: %w", turnEnv, err)
	}
	if err := turn.in.SetReadDeadline(time.Now().Add(Wait)); err != nil {
		return fmt.Errorf("rdmatest: %s: the FIFO takes no deadline: %w", turnEnv, err)
	}
	line, err := turn.r.ReadString('\n')
	if err != nil {
		return fmt.Errorf("rdmatest: %s: waiting %v for the turn of %s: %w", turnEnv, Wait, name, err)
	}
	if line = strings.TrimSpace(line); line != "go" {
		return fmt.Errorf("rdmatest: %s: got %q for %s, want \"go\"", turnEnv, line, name)
	}
	return nil
}

// End tells the driver that the process has run its tests (the engine's
// Main calls it after m.Run).
func End() {
	turn.Lock()
	defer turn.Unlock()
	if ok, err := openTurn(); ok && err == nil {
		fmt.Fprintf(turn.out, "exit\n")
	}
}
