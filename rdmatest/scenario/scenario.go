// Package scenario runs rdmabench's standard RDMA scenarios — the
// latency, stream, echo-RPC and control-path families that bench_test
// declares — each described by a Spec (or a Control) and run on a device
// opened by rdmatest.Device.
//
// A scenario is a short declaration: the bench_test matrix names a
// family's axes, builds a Spec per variant and calls the family's runner
// ([Latency], [Stream], [EchoRPC], [ControlPath]). The runner checks the
// Spec against the device's limits before anything is created, builds
// the pair, runs the timed loop in C on a pinned thread, verifies the
// results after the run and reports the metrics that package rdmatest
// defines. With -rdma.peer side B of Latency and Stream is an rdmapeer on
// another host; EchoRPC runs both sides in this process (it skips under
// -rdma.peer), and ControlPath has no side B.
//
// # Names
//
// The matrix names each point as go test prints it, family and key=value
// parts ("WriteBW/transport=RC/size=65536/qd=128"): Axes is the grammar
// of the parts, one Axis per key. Parse reads such a name back into the
// family's runner and Spec, so that a process outside go test (the
// fabric agent) can run any Latency or Stream scenario of the matrix by
// its name.
//
// # CPUs
//
// The measured loops busy-poll, and so does the in-process passive side
// when it has work of its own. Latency, Stream and EchoRPC skip (with the
// reason) a run whose busy loops outnumber GOMAXPROCS or the usable CPUs:
// there one would wait for the other's time slice. Threads runs are
// exempt: how the rate holds up when threads share CPUs is part of their
// scaling curve.
//
// # The measured path
//
// Every per-operation loop of Latency, Stream (all variants, Threads
// included), EchoRPC (client and both servers) and of the passive side
// (local, or in rdmapeer) runs in C (package verbs: NewPing, NewServe,
// NewStream, NewRPC): one cgo call per run, no Go code, cgo crossing or
// allocation per operation; samples go into an HDR counts array imported
// after the run. These benchmarks are b.N style (b.Loop cannot hand a
// count to C): the setup of each call (pair, loops, the loop's thread)
// is outside the timer, so every -count row is independent. One family
// times in Go by design: ControlPath (one verbs call per sample, each a
// system call of µs to ms: a cgo crossing is noise there).
package scenario

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/internal/engine"
	"github.com/rdmabench/rdmabench/rdmatest/internal/sizes"
)

// Spec describes one scenario: verb, transport, message size, queue
// depth, batching and signaling, QPs, threads, direction, offered load
// and the other axes of the matrix. Spec.CheckLimits is the rule book:
// every combination it refuses is named with the value and the limit.
type Spec = engine.Spec

// Kind is what a Spec measures; the runner sets it.
type Kind = engine.Kind

// The kinds of Spec.
const (
	KindLatency = engine.KindLatency // one operation at a time (Latency)
	KindStream  = engine.KindStream  // WRs outstanding (Stream)
	KindRPC     = engine.KindRPC     // echo RPCs (EchoRPC)
)

// Latency measures spec s one operation at a time on QP 0 and reports
// p50-ns … max-ns and msgs/s (round trips per second, from the C loop's
// own clock). After the run the results are verified; a mismatch fails
// the benchmark. Unsupported combinations are skipped, invalid ones fail.
func Latency(b *testing.B, d *rdmatest.Dev, s Spec) { engine.Latency(b, d, s) }

// Stream measures spec s as a stream: QD WRs outstanding per QP, posted
// Batch at a time round-robin over the QPs, one in Signal signaled, with
// b.N messages. It reports MB/s (payload bytes per second, 1 MB = 10^6 B)
// and msgs/s, both from the loop's own clock: from just before the first
// post to the poll that returned the last completion (perftest's BW
// average); and latency under load (p50-ns … max-ns: from just before
// the post call that carried a signaled WR until the poll that returned
// its completion). After the run it verifies payloads, atomics' counters
// and delivered counts; a mismatch fails the benchmark.
//
// Variants, by Spec field:
//
//   - Bidir: side B streams the mirror of A's stream to A at the same
//     time, b.N messages each. The time runs from A's first post until the
//     later of the two loops' last completions; MB/s counts both
//     directions, msgs/s = 2·b.N / that time, and the percentiles merge
//     both sides' samples.
//   - Inbound (side=responder): msgs/s is the passive side's rate, its
//     receives over the time from the requester's first post to the poll
//     that last returned receive completions at B (one clock: both loops
//     run in this process). No MB/s; the percentiles stay the requester's.
//   - Threads: that many C loops, each with its own pair, CQs, passive
//     side and histogram, started together; the time runs from the first
//     post to the slowest thread's last completion. msgs/s = b.N / that
//     time; msgs/s/thread is the slowest thread's rate. Threads are not
//     pinned and may share CPUs: how the rate holds up then is part of
//     the scaling curve.
//   - HeaderOnly: SEND_WITH_IMM or WRITE_WITH_IMM of 0 bytes (Size 0); MB/s
//     is then 0 and msgs/s is the figure.
//   - Counters, Stride (atomics): WR k of a QP targets counter k mod
//     Counters, Stride bytes apart.
//   - Load (rate=): first, untimed, a closed-loop stream of 5000 messages
//     on the same pair measures the peak rate; then the run is open-loop
//     at Load × that peak: message k is due k / offered s after the start
//     and is posted at its due time, or as soon as the queue has room
//     when behind (a batch at its first message's due time). A
//     latency sample runs from the message's due time, not its post, to
//     its completion, so time spent behind schedule counts (wrk2).
//     offered-msgs/s is the offered rate, msgs/s the achieved one.
//
// UC and UD streams of verbs that consume a receive also report
// delivered-msgs/s and lost-msgs/op (see package rdmatest).
func Stream(b *testing.B, d *rdmatest.Dev, s Spec) { engine.Stream(b, d, s) }

// EchoRPC measures HERD-style echo RPCs: s gives the request verb and
// transport (WRITE over UC or RC, SEND_WITH_IMM over UD), Size, the
// window QD and Inline. One sample is one RPC's full round trip, of a
// request posted in the timed region (which starts by filling the
// window); msgs/s counts RPCs from that first post. Under -rdma.peer the
// UD variant's server is the peer's echo role; the RDMA_WRITE variants
// need the server in this process and skip.
func EchoRPC(b *testing.B, d *rdmatest.Dev, s Spec) { engine.EchoRPC(b, d, s) }

// Control is one control-path measurement: the operation and its size or
// depth.
type Control = engine.Control

// ControlOp is a control-path operation measured by ControlPath.
type ControlOp = engine.ControlOp

// The control-path operations.
const (
	OpRegMR    = engine.OpRegMR    // ibv_reg_mr of a Size-byte buffer (Huge: on huge pages)
	OpDeregMR  = engine.OpDeregMR  // ibv_dereg_mr of such a region
	OpConnect  = engine.OpConnect  // two QPs of Transport connected to each other (RESET → RTS)
	OpCreateCQ = engine.OpCreateCQ // ibv_create_cq with Depth entries
	OpCreateQP = engine.OpCreateQP // ibv_create_qp of an RC QP with Depth send and receive WRs
)

// ControlPath measures c: each iteration runs the operation once, and one
// sample is the time of that operation alone (setup and teardown outside
// the sample). It reports p50-ns … max-ns and ops/s = samples / their sum.
func ControlPath(b *testing.B, d *rdmatest.Dev, c Control) { engine.ControlPath(b, d, c) }

// MaxSize is the largest message size ParseSizes accepts (1 GiB).
const MaxSize = sizes.MaxSize

// ParseSizes reads a message-size list: comma-separated sizes in bytes
// with an optional K, M or G suffix (powers of 1024), a range LO-HI
// meaning every power of two from LO to HI, or "all" for perftest -a's
// 2 B … 8 MiB. Every size must be within 1..MaxSize.
func ParseSizes(s string) ([]int, error) { return sizes.Parse(s) }
