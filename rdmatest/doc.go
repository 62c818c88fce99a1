// Package rdmatest is what rdmabench's tests and benchmarks stand on, in
// the spirit of net/http/httptest: it picks and opens the RDMA device,
// builds connected endpoints, runs the measured loops, records latencies
// in HDR histograms and reports them as benchmark metrics.
//
// # Device selection
//
// Flags (registered when a test binary imports this package), each with
// an environment fallback:
//
//	-rdma.dev NAME      RDMA_DEVICE    device; default: the first device with an ACTIVE port
//	-rdma.port N        RDMA_PORT      port (default 1)
//	-rdma.gid N         RDMA_GID_INDEX GID index; default -1 = best GID (RoCE v2, IPv4-mapped, not link-local)
//	-rdma.timeout D     RDMA_TIMEOUT   deadline for every single wait (default 10s)
//	-rdma.hlog DIR      RDMA_HLOG_DIR  write every latency histogram as an HdrHistogram .hlog file in DIR
//
// [Device] opens the chosen device. With no device the test is skipped —
// except under CI=true or RDMA_REQUIRE=1, where it fails: a machine that
// should have RDMA must not pass by skipping. Every test or benchmark that
// calls Device also fails if a verbs object is still open when it ends
// (leak check, naming the object's kind and where it was created).
//
// # Endpoints
//
// [NewPair] connects two sides on the same device (in-process loopback:
// rxe and HCAs loop QPs on one port back to each other). Side A is the
// requester, driven by the measured loop; side B is the passive side:
// its memory is the target of WRITE, READ and atomics, and for SEND it
// posts receives (and, for ping-pong, answers) in a goroutine of its own.
// Benchmarks use only A and the published description of B's memory
// (address, rkey, QPN), so that a remote peer can stand in for B.
//
// # CPUs
//
// The measured loops busy-poll, and so does side B's goroutine when it
// has work of its own. Latency, Stream and EchoRPC skip (with the reason)
// a run whose busy goroutines outnumber GOMAXPROCS or the usable CPUs:
// there one would wait for the other's time slice. Threads runs are
// exempt: how the rate holds up when threads share CPUs is part of their
// scaling curve. [Main] applies a single -test.cpu value before
// the first benchmark and refuses a list when benchmarks run (a b.Loop
// benchmark runs before the testing package applies the list's first
// value: golang/go#49980).
//
// # Metric definitions
//
// All times come from Go's monotonic clock (time.Now), in nanoseconds.
//
//   - Ping-pong latency (SEND, RDMA WRITE): one sample per iteration = the
//     time from just before A posts its message until A sees B's answer
//     (its receive completion for SEND; the last byte of the payload
//     changing in its own buffer for WRITE), divided by 2. This is
//     perftest's "RTT/2" of ib_send_lat and ib_write_lat.
//   - Round-trip latency (RDMA READ, atomics): one sample per iteration =
//     from just before the post until its completion is polled; not
//     halved, as in ib_read_lat and ib_atomic_lat.
//   - Latency under load (streaming benchmarks): for every signaled work
//     request, the time from just before the post call that carried it
//     until its completion is polled. With signal=N only every N-th WR
//     is signaled, so that is one sample per N messages.
//   - p50-ns … p99.99-ns, max-ns: exact quantiles of all samples of the
//     run (an HDR histogram of 1 ns … 100 s with 3 significant digits, so
//     within 0.1%); nothing is dropped or trimmed (perftest drops the two
//     largest samples; we do not).
//   - msgs/s: messages completed divided by the benchmark's elapsed time.
//   - MB/s (from b.SetBytes): payload bytes per second, 1 MB = 10^6 bytes
//     (perftest prints MiB/s = 2^20 bytes/s: MB/s = 1.048576 × MiB/s).
//     For streaming benchmarks the elapsed time runs from the first post
//     to the last completion, as perftest's BW average.
//   - bidir=true (streaming): side B streams the mirror of A's stream
//     back to A at the same time, posting in lockstep as many messages as
//     A has posted, so each side moves b.N messages; the timed region
//     ends when both have completed. MB/s counts both directions
//     (b.SetBytes(2·size)), msgs/s = 2·b.N / elapsed, and the latency
//     percentiles merge both sides' samples.
//   - Echo RPC (HERD style, see EchoRPC): one sample per RPC = the full
//     round trip (not halved) from just before the request's post call
//     until the poll that returned its response's receive completion,
//     with qd requests outstanding; msgs/s = RPCs completed per second.
//   - Inbound, threads, header-only, atomics over many counters and the
//     control path: see Stream and ControlPath.
//   - ns/op: elapsed time divided by iterations. An iteration is one
//     message for streaming benchmarks and one full round trip (not
//     halved) for latency benchmarks.
package rdmatest
