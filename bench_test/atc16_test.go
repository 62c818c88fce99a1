package bench

import (
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/scenario"
	"github.com/rdmabench/rdmabench/verbs"
)

// The rdma_bench scenarios (Kalia, Kaminsky, Andersen, "Design Guidelines
// for High Performance RDMA Systems", USENIX ATC'16). Each is a
// declaration of its axes over scenario.Stream, with rdma_bench's
// selective-signalling invariants enforced (batch ≤ signal, qd ≥
// 2·signal); -rdma.full runs the paper-sized sweeps. On rxe (a software
// NIC) the absolute numbers say nothing about a ConnectX: compare shapes.

// sided returns v measured at the requester and, as a second variant
// (so that -short runs both), at the responder.
func sided(v axes) []axes {
	req, resp := v, v
	req.side, resp.side = no, yes
	return []axes{req, resp}
}

var (
	ud      = []verbs.Transport{verbs.TransportUD}
	noYes   = []bool{false, true}
	qd128   = []int{128}
	smallSz = []int{32}
)

// batchSweep is the doorbell-batching × selective-signalling sweep: one
// variant without either (batch=1, signal=1) and the product of batch and
// signal values that keeps batch ≤ signal.
func batchSweep(t []verbs.Transport, size []int, inline []bool) []axes {
	return []axes{
		{transport: t, size: size, qd: qd128, inline: inline, batch: one, signal: one},
		{transport: t, size: size, qd: qd128, inline: inline,
			batch: full([]int{16, 1}, []int{16, 4, 1}), signal: full([]int{16}, []int{16, 64})},
	}
}

// BenchmarkDoorbellWrite: outbound RDMA WRITE message rate vs doorbell
// batching (batch = WRs per post, rdma_bench's postlist), selective
// signalling (signal = unsig_batch) and inlining (paper §3.1–3.2, §5.3.2;
// rdma_bench rw-tput-sender).
func BenchmarkDoorbellWrite(b *testing.B) {
	atc16(b, verbs.OpWrite, batchSweep(rcUC, full(smallSz, []int{16, 32, 256}), noYes)...)
}

// BenchmarkDoorbellRead: outbound RDMA READ message rate vs batch and
// signal (paper §5.3.2 "outbound READ"; rw-tput-sender --do_read 1).
func BenchmarkDoorbellRead(b *testing.B) {
	atc16(b, verbs.OpRead, batchSweep(rc, full(smallSz, []int{16, 32, 256}), nil)...)
}

// BenchmarkDoorbellSend: outbound UD SEND message rate vs batch, signal
// and inline (paper Fig. 11a, §5.2.1; rdma_bench ud-sender).
func BenchmarkDoorbellSend(b *testing.B) {
	atc16(b, verbs.OpSend, batchSweep(ud, full([]int{60}, []int{16, 60, 256}), noYes)...)
}

// BenchmarkThreads: multi-queue and threads (paper Fig. 11b, §3.3): UD
// SEND of 60 B, inline, batch 16, from `threads` goroutines each locked
// to an OS thread with `qps` QPs of its own. msgs/s is the aggregate,
// msgs/s/thread the slowest thread's rate, p50-ns … the merged latency
// under load.
func BenchmarkThreads(b *testing.B) {
	v := axes{transport: ud, size: []int{60}, qd: qd128, inline: yes, batch: []int{16}, signal: []int{16},
		qps: full([]int{1, 4}, []int{1, 2, 4, 8})}
	one, more := v, v
	one.threads, more.threads = []int{1}, full([]int{2}, []int{2, 4})
	atc16(b, verbs.OpSend, one, more)
}

// BenchmarkInboundSend: the same SEND stream measured at the requester
// (side=requester: send completions) and at the responder
// (side=responder: receive completions per second at the passive side)
// (paper §2.2.3 and Table 5's inbound column; ud-sender vs ud-receiver).
func BenchmarkInboundSend(b *testing.B) {
	atc16(b, verbs.OpSend, sided(axes{transport: full(ud, rcUCUD), size: smallSz, qd: qd128})...)
}

// BenchmarkInboundWrite: RDMA WRITE measured at the requester and, as
// RDMA WRITE_WITH_IMM, at the responder, whose receive completions are
// the only inbound WRITEs a CPU can count (paper Fig. 12's inbound
// WRITE; rw-tput-receiver).
func BenchmarkInboundWrite(b *testing.B) {
	atc16(b, verbs.OpWriteImm, sided(axes{transport: full(rc, rcUC), size: smallSz, qd: qd128})...)
}

// BenchmarkHeaderOnly: UD SEND_WITH_IMM without payload (hdr=true, size
// 0: only the 4-byte immediate) vs with a payload (hdr=false), at the
// requester and the responder (paper Tables 4 and 5, "header-only";
// ss-sequencer's Spec-S0 messages).
func BenchmarkHeaderOnly(b *testing.B) {
	atc16(b, verbs.OpSendImm, append(
		sided(axes{transport: ud, size: []int{0}, qd: qd128, hdr: yes}),
		sided(axes{transport: ud, size: full(smallSz, []int{8, 32, 256}), qd: qd128, hdr: no})...)...)
}

// BenchmarkEchoRPC: HERD-style echo RPCs (paper §4, Fig. 7's baseline;
// rdma_bench ws-echo for op=write, ss-echo for op=send): the request goes
// over UC RDMA WRITE into the server's request slots (op=write) or as a
// UD SEND_WITH_IMM (op=send); the response always comes back as a UD
// SEND_WITH_IMM. qd is the client's window of outstanding requests.
// msgs/s = RPCs completed per second; p50-ns … max-ns are full round
// trips (see scenario.EchoRPC).
func BenchmarkEchoRPC(b *testing.B) {
	window := full([]int{1, 16}, []int{1, 4, 16, 32, 64})
	size := full(smallSz, []int{16, 32, 256})
	run(b, 0, []axes{
		{op: []verbs.Opcode{verbs.OpWrite}, transport: []verbs.Transport{verbs.TransportUC}, size: size, qd: window, inline: yes},
		{op: []verbs.Opcode{verbs.OpSendImm}, transport: ud, size: size, qd: window, inline: yes},
	}, scenario.EchoRPC)
}

// BenchmarkAtomicContention: fetch-and-add and compare-and-swap whose
// remote address rotates over `counters` 8-byte counters `stride` bytes
// apart (paper Fig. 14 and Table 4; counters=1 is the atomics sequencer
// of Table 3; rdma_bench atomics-sequencer's Z and kAppStrideSize).
func BenchmarkAtomicContention(b *testing.B) {
	v := axes{op: atomicOp, transport: rc, qd: []int{16}, stride: full([]int{8}, []int{8, 64})}
	single, many := v, v
	single.counters, many.counters = one, full([]int{256}, []int{16, 256, 4096})
	atc16(b, 0, single, many)
}

// BenchmarkReadWindow: outbound READs with qd outstanding per QP, every
// one signaled (paper §3.5 and Fig. 13: the best window, 16 on CX3 and
// 512 on Connect-IB; rdma_bench rw-allsig --window). Not under the
// signalling invariants: every WR is signaled.
func BenchmarkReadWindow(b *testing.B) {
	stream(b, verbs.OpRead, axes{transport: rc, size: smallSz,
		qd: full([]int{1, 16, 128}, []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512})})
}
