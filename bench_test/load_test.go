package bench

import (
	"testing"

	"github.com/rdmabench/rdmabench/verbs"
)

// Latency at an offered load: open-loop streams (scenario.Stream with
// Spec.Load). rate= is the offered message rate as a percentage of the
// peak rate measured just before on the same pair; messages are due at
// fixed intervals and every sample runs from its message's due time, so
// time spent behind schedule is charged (no coordinated omission).
// msgs/s is the achieved rate, offered-msgs/s the offered one; a run that
// did not sustain its load (achieved below 95% of offered) says so in the
// log and keeps its row, where the two rates show it.

func BenchmarkSendLoad(b *testing.B) {
	stream(b, verbs.OpSend, axes{transport: rc, size: []int{64}, qd: []int{128}, rate: []int{10, 25, 50, 75, 90}})
}

func BenchmarkWriteLoad(b *testing.B) {
	stream(b, verbs.OpWrite, axes{transport: rc, size: []int{64}, qd: []int{128}, rate: []int{10, 25, 50, 75, 90}})
}
