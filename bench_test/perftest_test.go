package bench

import (
	"testing"
	"time"

	"github.com/rdmabench/rdmabench/verbs"
)

// The perftest scenarios: ib_{send,write,read,atomic}_{lat,bw}. Each is a
// declaration of its axes; package rdmatest measures.

func BenchmarkSendLat(b *testing.B) {
	latency(b, verbs.OpSend,
		axes{transport: rcUCUD, size: []int{8, 1024}, inline: no, event: no},
		axes{transport: rc, size: []int{8}, inline: yes, event: no},
		axes{transport: rc, size: []int{8}, inline: no, event: yes},
	)
}

func BenchmarkWriteLat(b *testing.B) {
	latency(b, verbs.OpWrite,
		axes{transport: rcUC, size: []int{8, 4096}, inline: no},
		axes{transport: rc, size: []int{8}, inline: yes},
	)
}

// BenchmarkWriteLatGap is ib_write_lat --latency_gap: idle time between
// round trips (the loop spins on the clock), which changes the tail on
// real NICs (power states, caches going cold). The percentiles are the
// round trips' alone; msgs/s and ns/op include the gaps.
func BenchmarkWriteLatGap(b *testing.B) {
	latency(b, verbs.OpWrite, axes{transport: rc, size: []int{8}, gap: []time.Duration{0, 10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond}})
}

// BenchmarkWriteLatMTU is ib_write_lat -m: a 4 KiB WRITE ping-pong at
// several path MTUs (the message in 4096/MTU packets); MTUs above the
// port's active MTU are skipped with the reason.
func BenchmarkWriteLatMTU(b *testing.B) {
	latency(b, verbs.OpWrite, axes{transport: rc, size: []int{4096}, mtu: full([]int{256, 1024}, []int{256, 512, 1024, 2048, 4096})})
}

func BenchmarkReadLat(b *testing.B) {
	latency(b, verbs.OpRead, axes{transport: rc, size: []int{8, 4096}, event: []bool{false, true}})
}

func BenchmarkAtomicLat(b *testing.B) {
	latency(b, 0, axes{op: atomicOp, transport: rc})
}

func BenchmarkSendBW(b *testing.B) {
	qd := []int{128}
	stream(b, verbs.OpSend,
		axes{transport: rcUCUD, size: []int{64, 1024}, qd: qd, batch: one, signal: one, event: no, srq: no, bidir: no},
		axes{transport: rc, size: []int{4096}, qd: qd, batch: one, signal: one, event: no, srq: no, bidir: no},
		axes{transport: rc, size: []int{1024}, qd: qd, batch: one, signal: one, event: yes, srq: no, bidir: no},
		axes{transport: rc, size: []int{1024}, qd: qd, batch: one, signal: one, event: no, srq: yes, bidir: no},
		axes{transport: rcUCUD, size: []int{1024}, qd: qd, batch: one, signal: one, event: no, srq: no, bidir: yes},
	)
}

func BenchmarkWriteBW(b *testing.B) {
	qd := []int{128}
	stream(b, verbs.OpWrite,
		axes{transport: rcUC, size: []int{64, 4096, 65536}, qd: qd, qps: one, inline: no, batch: one, signal: one, bidir: no},
		axes{transport: rc, size: []int{64}, qd: qd, qps: one, inline: yes, batch: one, signal: one, bidir: no},
		axes{transport: rc, size: []int{64}, qd: qd, qps: one, inline: no, batch: []int{8}, signal: []int{8}, bidir: no},
		axes{transport: rc, size: []int{4096}, qd: qd, qps: []int{4}, inline: no, batch: one, signal: one, bidir: no},
		axes{transport: rcUC, size: []int{4096}, qd: qd, qps: one, inline: no, batch: one, signal: one, bidir: yes},
	)
}

func BenchmarkReadBW(b *testing.B) {
	stream(b, verbs.OpRead, axes{transport: rc, size: []int{64, 4096, 65536}, qd: []int{16}})
}

func BenchmarkAtomicBW(b *testing.B) {
	stream(b, 0, axes{op: atomicOp, transport: rc, qd: []int{16}})
}
