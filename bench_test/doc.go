// Package bench holds rdmabench's benchmarks: every scenario of perftest
// (ib_{send,write,read,atomic}_{lat,bw}) as a Go benchmark over the verbs
// package, with HDR latency percentiles and benchstat-ready output.
//
// Run them with `make bench`, or directly:
//
//	go test -run '^$' -bench . -count 6 ./bench_test [-rdma.dev mlx5_0] [-rdma.sizes 2-1M]
//
// (in the qemu guest on a machine without RDMA: see loopback/cmd/rxevm).
//
// # Names
//
// Each benchmark is a family whose sub-benchmarks are named key=value, so
// that benchstat can use the keys as dimensions (-col /size, -row /transport):
//
//	transport  RC, UC or UD (where the verb allows it)
//	op         fadd (ATOMIC_FETCH_AND_ADD) or cas (ATOMIC_CMP_AND_SWP);
//	           EchoRPC: the request's verb, write (RDMA WRITE) or send (SEND_WITH_IMM)
//	size       message size in bytes
//	qd         outstanding WRs per QP (streaming); EchoRPC: requests outstanding (the window)
//	qps        QPs, posted to round-robin by one goroutine
//	inline     payload inlined in the WQE
//	batch      WRs per post call (doorbell batching)
//	signal     one signaled completion every N WRs
//	mode       poll (busy polling) or event (completion channel)
//	srq        the receiver uses a shared receive queue
//	bidir      both sides stream at once (perftest -b)
//	hdr        header-only SEND: no payload, 4-byte immediate (size 0)
//	counters   atomics spread over this many counters …
//	stride     … this many bytes apart
//	threads    goroutines, each on its own OS thread with its own QPs
//	side       requester (outbound) or responder (inbound) rate
//	mtu        path MTU in bytes (perftest -m; above the port's active MTU: skipped)
//	page       4K or huge pages (control path)
//	depth      queue depth of created CQs/QPs (control path)
//
// Package rdmatest/benchname owns this grammar (parsing, formatting, the
// .hlog file names); testdata/names.txt lists every name of the default
// matrix, and TestMatrixNames keeps it so.
//
// # What is measured
//
// The metrics are defined in package rdmatest's documentation and the
// families in package scenario's (scenario.Latency, scenario.Stream); in
// short:
//
//   - *Lat: one operation at a time. SendLat and WriteLat are ping-pongs:
//     p50-ns … max-ns are half round trips (perftest's RTT/2). ReadLat
//     and AtomicLat report full round trips. msgs/s counts round trips
//     per second; there is no MB/s (one message per round trip is not a
//     bandwidth).
//   - *BW: a stream of qd outstanding WRs per QP. MB/s (10^6 B/s) and
//     msgs/s run from the first post to the last completion, as
//     perftest's "BW average"; p50-ns … max-ns are latency under load:
//     post to completion of every signaled WR.
//
// Percentiles are exact quantiles of every sample (HDR histogram, 3
// significant digits): nothing is trimmed.
//
// # Matrices
//
// The default matrix finishes in a few minutes on rxe in the VM.
// -short runs the first combination of every variant (a smoke test).
// -rdma.full runs the full sweeps of the rdma_bench families (atc16_test.go).
// -rdma.sizes replaces every size axis (e.g. 2-1M for perftest -a's
// powers of two up to 1 MiB; "all" for 2 B … 8 MiB).
package bench
