package main

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/oob"
)

// TestAgentCountsCounters: an atomic contention run's counters × stride
// are memory the agent counts before it builds anything. The hostile
// client's Run (8 Mi counters 8 bytes apart: two 64 MiB slots) took an
// agent from 18 to 150 MB under -max-mem 4 MiB when only size × depth ×
// QPs × threads was counted; it is refused now, naming the limit.
func TestAgentCountsCounters(t *testing.T) {
	a := newAgent("node1", []string{"node1", "node2"}, 18515, time.Minute, 4<<20, &rdmaMeasurer{})
	err := a.checkRun(&oob.Run{Dst: "node2", Scenario: "AtomicContention/op=fadd/counters=8388608/stride=8", Runs: 1, Iters: 1})
	require.ErrorIs(t, err, ErrOverLimit)
	assert.Contains(t, err.Error(), "over -max-mem 4194304")
	require.NoError(t, a.checkRun(&oob.Run{Dst: "node2", Scenario: "AtomicContention/op=fadd/counters=64/stride=64", Runs: 1, Iters: 1}))
}

// TestSpecMemoryBounds draws scenarios at random (seeded, printed) and
// holds the agent's memory estimate above what the run registers for
// certain: per thread, two slots a QP of the message size (of the
// counters' span for the atomics) and a send ring of 208-byte WQEs a QP.
func TestSpecMemoryBounds(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	m := &rdmaMeasurer{}
	for range 300 {
		size, qd, qps, threads := 1<<rng.IntN(21), 1+rng.IntN(1024), 1+rng.IntN(16), 1+rng.IntN(8)
		counters, stride := 1+rng.IntN(1<<16), 8*(1+rng.IntN(512))
		var name string
		var span int64
		switch rng.IntN(3) {
		case 0:
			name, span = fmt.Sprintf("WriteBW/size=%d/qd=%d/qps=%d", size, qd, qps), int64(size)
			threads = 1
		case 1:
			name, span = fmt.Sprintf("Threads/size=%d/qd=%d/qps=%d/threads=%d", size, qd, qps, threads), int64(size)
		default:
			name, span = fmt.Sprintf("AtomicContention/op=fadd/qd=%d/counters=%d/stride=%d", qd, counters, stride), int64(counters-1)*int64(stride)+8
			qps, threads = 1, 1
		}
		mem, err := m.check(name)
		require.NoError(t, err, name)
		registered := int64(threads) * 2 * int64(qps) * span
		rings := int64(threads) * int64(qps) * int64(qd) * 208
		assert.GreaterOrEqual(t, mem, registered+rings, "%s: %d bytes counted, %d registered and %d of send rings certain", name, mem, registered, rings)
	}
}
