// Package rdmatest is what an RDMA test or benchmark of one's own needs,
// in the spirit of net/http/httptest: it picks and opens the RDMA device
// (skipping, or failing under CI, when there is none), checks that every
// verbs object is released, connects loopback pairs, serves side B,
// times a pattern of one's own and reports latencies from HDR histograms
// as benchmark metrics, with the configuration and Unit lines benchstat
// and the gate read.
//
// rdmabench's standard scenarios (bench_test's matrix) run through
// package rdmatest/scenario; cmd/rdmapeer serves side B to another host
// through package rdmatest/peer. All three stand on one engine, an
// internal package: the metrics defined below are the same everywhere.
// The own-pattern types (Pair, Side, Program, Step, WR, Mem) are this
// package's own: go doc ./rdmatest is all one needs to write a pattern
// (go doc ./rdmatest Side.Post and friends). Dev, Recorder and a few
// others are the engine's and rdmatest/internal/hist's types under their
// rdmatest names.
//
// # Device selection
//
// Flags, each with an environment fallback, registered by [Main] on
// flag.CommandLine or by [RegisterFlags] on a flag set of your own —
// never on import (a program that registers none gets the environment
// and the defaults):
//
//	-rdma.dev NAME      RDMA_DEVICE     device; default: the first device with an ACTIVE port
//	-rdma.port N        RDMA_PORT       port (default 1)
//	-rdma.gid N         RDMA_GID_INDEX  GID index; default -1 = best GID (RoCE v2, IPv4-mapped, not link-local)
//	-rdma.timeout D     RDMA_TIMEOUT    deadline for every single wait (default 10s)
//	-rdma.cpus LIST     RDMA_CPUS       CPUs for the timed loops, requester first (default: the device's NUMA node)
//	-rdma.hlog DIR      RDMA_HLOG_DIR   write every latency histogram as an HdrHistogram .hlog file in DIR (cycle histograms in DIR/cycles)
//	                                    (made if missing; Main refuses an unwritable one before any benchmark)
//	-rdma.peer H:P      RDMA_PEER       an rdmapeer on another host plays side B
//	-rdma.peer-token T  RDMA_PEER_TOKEN the secret that peer requires
//	-rdma.peer-token-file F  RDMA_PEER_TOKEN_FILE  the same, from a file (not visible in ps)
//	-rdma.cm MODE       RDMA_CM         connect every pair through rdma_cm (perftest's -R): true, false, or auto
//	                                    (default: rdma_cm on iWARP devices only, by hand elsewhere); NewPair's pairs
//	                                    too; a UC pair skips under it
//	-rdma.warmup N      RDMA_WARMUP     untimed round trips before a built-in latency run's samples (default 1,
//	                                    0 … 1000000); not Measure's: see MeasureOpts.Warmup (default 16)
//	-rdma.signal-all    RDMA_SIGNAL_ALL built-in latency runs do perftest's latency work: every WR signaled and
//	                                    awaited, a receive reposted per message (default false); not Measure's
//
// [RegisterDeviceFlags] registers only the first five, for a command
// that serves the device (cmd/rdmapeer pins its sessions' passive loops
// to the CPUs of -rdma.cpus, one each).
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
// posts receives (and, for ping-pong, answers) in a C loop on a thread
// of its own. Benchmarks use only A and the published description of B's
// memory (address, rkey, QPN), so that a remote peer can stand in for B.
//
// # Your own pattern
//
// A pattern of one's own is a program per side, built in Go as data and
// run by one C loop in package verbs on a thread and CPU of its own — the
// built-in families' fidelity: no cgo call, no Go code and no allocation
// per operation (a device test counts the cgo calls). A lock-protected
// 256-byte READ, all served by B's NIC (B runs no program), in a
// _test.go file whose TestMain is [Main]:
//
//	func BenchmarkLockedRead(b *testing.B) {
//		p := rdmatest.NewPair(b, rdmatest.Device(b), rdmatest.PairConfig{SlotSize: 512})
//		a := p.A
//		lock, record := a.Peer(0, 0), a.Peer(0, 64) // in B's memory: the lock word (0: free), the record
//		old := a.In(0, 0, 8)                        // where the lock's old value lands
//		rdmatest.Measure(b, p, rdmatest.MeasureOpts{Rate: "reads/s"}, a.Program(
//			a.Post(0, rdmatest.CmpSwap(old, lock, 0, 1).Signaled()),
//			a.Await(rdmatest.Sends(1)),
//			a.Expect(old, 0), // the lock was free
//			a.Post(0, rdmatest.Read(a.In(0, 64, 256), record).Signaled()),
//			a.Await(rdmatest.Sends(1)),                                 // the record is here
//			a.Post(0, rdmatest.Write(a.Out(0, 0, 8), lock).Signaled()), // 8 zero bytes: release
//			a.Await(rdmatest.Sends(1)),
//		))
//	}
//
// go doc does not print examples. This package has three, run on the
// device by make test: example_lock_test.go (the one above),
// example_commit_test.go (WRITE a block, SEND a commit, B's program
// answers with an ACK: Serve and Measure) and example_rpc_test.go (a
// SEND request answered by WRITE plus WRITE_WITH_IMM). Read them in the
// package's directory (go list -f '{{.Dir}}' github.com/rdmabench/rdmabench/rdmatest
// prints it, in the module cache too) or on pkg.go.dev; run them with
// go test -run Example -v ./rdmatest in a checkout, or with the import
// path from a module that requires rdmabench (each is skipped without a
// device). docs/own-benchmark.md has a go.mod for a module of one's own.
//
//   - [NewPair] connects A and B; [Side.Out], [Side.In] and [Side.Peer]
//     name memory (each QP has a 64-byte aligned "out" and "in" slot per
//     side, registered for local write and every remote access and
//     zeroed at the start; a WR reaches the peer's "in" slots only).
//   - [Write], [Read], [Send], [CmpSwap] and [FetchAdd] build WRs
//     ([WR.Signaled], [WR.Fenced], [WR.Inline], [WR.WithImm]); atomics
//     return the old value in host byte order.
//   - A side's steps: [Side.Post] (one chain, one doorbell;
//     [Step.SignalEvery] for background signaling), [Side.Await]
//     ([Recvs], [Sends]), [Side.NextGen], [Side.PutGen], [Side.SpinGen],
//     [Side.SpinChange], [Side.SpinEqual], [Side.Repost],
//     [Side.CopyImm], [Side.CopyLen], [Side.Expect] (a pattern checks
//     its results with it: one 1-, 4- or 8-byte word per step), and the
//     sample's bounds [Side.StartSample], [Side.EndSample],
//     [Side.EndHalfSample] (without them a sample is the whole
//     iteration).
//   - [Side.Program] makes them a program, run in order once per
//     iteration ([Program.KeepRecvs] keeps receives posted).
//   - [Serve] runs B's program until the benchmark ends (none is needed
//     when B's NIC serves READ, WRITE and atomics alone); [Measure] runs
//     A's for b.N iterations and reports what the built-in families
//     report, the rate in a unit of one's own ([MeasureOpts.Rate]).
//     [Benchmark] runs a benchmark outside go test -bench (an Example, a
//     program).
//
// Where results land. A local READ's data and an atomic's old value
// land in the Mem given to [Read], [CmpSwap] or [FetchAdd]: make it a
// range of this side's [Side.In] slot (as the examples do) that nothing
// else writes — not the peer's WRITEs into that slot (their
// [Side.Peer] offsets on the other side) and not the receives, which
// land at offset 0 of every "in" slot ([Program.KeepRecvs]'s bytes).
// [Side.Out] works too (it is registered for local write), but it is
// what this side's WRITEs and SENDs carry, so a result there is sent on
// by any WR whose source overlaps it. An atomic's result is 8 bytes,
// 8-byte aligned. It has arrived once the completion of its post's last
// WR, which must be Signaled, is awaited: Measure refuses a post whose
// READ or atomic is not followed by a Signaled WR, and a Signaled WR
// never awaited, but placing the [Side.Await] before the step that uses
// the result (Expect, SpinEqual, a WR that carries it) is the program's
// order to get right.
//
// Generations keep a ping-pong of WRITEs in step without resetting
// memory. Each side has a generation byte, 0 at the start. The leader
// (side A) moves its own on once per iteration with [Side.NextGen]
// (1 … 255, then 1 again: never 0, which is what memory starts as),
// stores it with [Side.PutGen] in the last byte of what its WRITE
// carries, posts that WRITE, then waits with [Side.SpinGen] on the last
// byte of what the peer WRITEs back until it equals the generation. The
// follower (side B) never calls NextGen: [Side.SpinChange] waits until
// the byte A writes differs from B's generation and adopts it, then
// PutGen and its WRITE answer with that same value. After every
// iteration both generations are equal; a stale answer (the previous
// iteration's value) never satisfies SpinGen. Spin on the last byte of
// a WRITE: like perftest's ib_write_lat, this relies on the device
// placing a WRITE's last byte last (rxe and common HCAs do; the
// InfiniBand specification does not promise it). BenchmarkProgramWriteLat
// in own_test.go is the built-in WriteLat ping-pong written this way.
//
// Programs are checked before anything is posted: every memory range
// against its slot, every WR against its QP, the send queues'
// accounting (a post that could overfill one, a QP whose WRs are never
// signaled), the awaits (a Signaled WR never awaited, a READ or atomic
// whose result is never known to have arrived, a program that never
// waits) and the samples. At run time every wait has the -rdma.timeout
// deadline, a failed [Side.Expect] or completion ends the benchmark,
// and after the run every message A sent that consumes a receive must
// have reached B's program (on RC). An error of a step, refused or
// failed, names the side and the step first — steps are counted from 0
// in the order given to [Side.Program], with the file:line of the code
// that built the step — then why:
//
//	bench_test.go:31: rdmatest: side A, step 2 (expect, bench_test.go:24), warm-up: program loop: iteration 3 (from 0, warm-up included) read 1, expected 0
//
// The file:line in front is the Measure or Serve call's (where the
// program runs); the one beside the step is the step's. When side B
// also failed, its step follows on a line of its own.
//
// What applies to Measure: -rdma.dev, -rdma.port, -rdma.gid,
// -rdma.timeout (every wait), -rdma.cpus (A's loop on the first CPU,
// B's on the second), -rdma.cm (how NewPair's pair is connected),
// -rdma.hlog and -rdma.peer. Its warm-up is [MeasureOpts.Warmup]
// (default 16 iterations of A's program, untimed and unrecorded);
// -rdma.warmup (default 1) is the built-in latency families' only and
// does not change it, and neither does -rdma.signal-all: a program
// signals what it marks Signaled or SignalEvery.
//
// With -rdma.peer, a remote rdmapeer plays side B: the pair is opened by
// Measure, which sends the peer B's program (given to Serve) as data —
// steps, never code — with the remote accesses A's program uses; the
// peer checks and bounds it as any request (at most 16 QPs, 64 steps and
// 64 WRs), exposes exactly those accesses on memory that starts zeroed,
// runs the program in its own C loop and reports what it received, so
// the delivered-count check holds across hosts too. A program the peer
// refuses fails the benchmark naming the side and the step. Without a
// program for B, the peer is a target its NIC serves.
//
// # CPUs
//
// [Main] applies a single -test.cpu value before the first benchmark and
// refuses a list when benchmarks run (a b.Loop benchmark runs before the
// testing package applies the list's first value: golang/go#49980).
//
// Each spinning loop runs on an OS thread of its own, locked and pinned
// to a CPU of its own: the CPUs of the device's NUMA node (sysfs
// device/local_cpulist) that the process may use, or -rdma.cpus [RDMA_CPUS]
// (a CPU list, requester first); the requester takes the first, the
// passive side the second; with fewer CPUs than loops nothing is pinned.
// Where the process may use more CPUs than those two, every other thread
// of the process (the Go runtime's sysmon above all, which wakes every few
// milliseconds while a loop runs in C) is moved onto the rest when the
// device is opened, so that nothing else runs where a loop spins; a loop
// that is not pinned (threads runs) takes every allowed CPU back for its
// run. The rdma-cpus configuration line says which CPUs were used and why
// (",runtime=2-7" when the rest was moved; absent when no CPU was spare,
// as in a 2-CPU guest).
//
// # Metric definitions
//
// Times in the C loops come from CLOCK_MONOTONIC (clock_gettime through
// the vDSO; Go's time.Now reads the same clock), in nanoseconds. perftest
// reads the TSC and converts with a calibrated MHz; the two agree far
// within the histogram's 0.1%.
//
//   - Ping-pong latency (SEND, RDMA WRITE): one sample per round trip =
//     from just before the post call of A's message until A sees B's
//     answer (the poll that returned its receive completion for SEND; for
//     WRITE, the spin that saw the last byte of its own buffer change),
//     divided by 2: perftest's "RTT/2" of ib_send_lat and ib_write_lat.
//     perftest's sample is the time between two successive posts (its
//     bookkeeping between iterations included); ours stops at the answer.
//     A run of b.N round trips starts with -rdma.warmup (default 1)
//     untimed, unrecorded round trips (the built-in ping-pong and
//     round-trip families; Measure warms up with MeasureOpts.Warmup,
//     default 16, instead).
//   - cycle-p50-ns, cycle-p99-ns (every ping-pong and round-trip latency
//     run): perftest's sample, from just before one measured post to
//     just before the next (b.N−1 samples), so the whole iteration:
//     the answer, then the work until the next post (reposts, waiting
//     for send completions, any stall; the histogram's adds are done
//     after the next post, while its message is in flight), halved
//     like the samples above. Same histogram and quantile rule as p50-ns.
//   - Signaling (latency runs): by default one WR in half the send queue
//     is signaled and receives are reposted in batches of 32, between
//     samples, as a pipelining application does; the post → answer
//     sample is the latency an operation experiences. -rdma.signal-all
//     (Spec.SignalAll) does perftest's latency work instead (its latency
//     tests force tx_depth 1, so cq_mod 1): every WR signaled and its
//     completion awaited right after its post (perftest's order, before
//     the answer), a receive reposted after every message, on both
//     sides; that work is in the cycle samples. make
//     calibrate compares cycle-p50-ns under -rdma.signal-all
//     -rdma.warmup 0 with perftest (docs/performance.md).
//   - Round-trip latency (RDMA READ, atomics): from just before the post
//     call until the poll that returned its completion; not halved, as in
//     ib_read_lat and ib_atomic_lat.
//   - Latency under load (streams): for every signaled WR, from just
//     before the post call that carried it until the poll that returned
//     its completion. With signal=N only every N-th WR is signaled, so
//     that is one sample per N messages.
//   - p50-ns … p99.99-ns, max-ns: HDR histogram values over all samples
//     of the run (1 ns … 100 s, 3 significant digits; nothing dropped or
//     trimmed, perftest drops its two largest): the value reported for
//     quantile q is the highest value equivalent to the bucket holding the
//     sample of rank round(q·n), at least 1 (hdrhistogram-go's
//     ValueAtPercentile), so it may exceed that sample by up to 0.1%.
//   - msgs/s: operations completed divided by the loop's own time, from
//     just before the first measured post to the poll that returned the
//     last completion (for ping-pong: the last answer). Operations are
//     round trips for the latency families and messages for streams.
//   - MB/s (streams only): payload bytes of those messages over the same
//     time, 1 MB = 10^6 bytes (perftest prints MiB/s = 2^20 bytes/s: MB/s
//     = 1.048576 × MiB/s): perftest's "BW average".
//   - ns/op: the testing timer around the one call that runs the loop
//     (started once the thread is pinned; stopped after the thread's CPU
//     affinity is restored, one system call) divided by b.N:
//     a full round trip for the latency families (not halved, while their
//     percentiles are halves), one message for streams, one message each
//     way for bidir streams (b.N pairs).
//   - bidir=true (streams): side B streams the mirror of A's stream back
//     to A at the same time, b.N messages each; the time runs from A's
//     first post until the later of both last completions. MB/s counts
//     both directions, msgs/s = 2·b.N / that time, and the latency
//     percentiles merge both sides' samples.
//   - cpu-ns/op: user + system CPU time of the whole process during the
//     timed region (getrusage: the requester's loop, the in-process
//     passive side, the Go runtime) divided by b.N. A busy-polling loop
//     burns its CPU whether or not work arrives: for polling runs this is
//     about (spinning threads × elapsed) / b.N.
//   - preempted/run: how often the kernel took the CPU from the timed
//     loops' threads during the run (involuntary context switches,
//     getrusage RUSAGE_THREAD, summed over the requester's loop and the
//     in-process passive side's, the latter over its whole life, from
//     its start to its stop: just before the warm-up for the latency
//     families, before the peak-rate measurement for rate= runs, at Serve
//     for a pattern of one's own): every one is a pause of a spinning loop
//     that lands in the samples of that moment. Not gated (no direction):
//     a diagnostic of the machine's noise next to the tail it explains.
//     Read it against b.N: a handful per run is a quiet machine; about
//     one per message (one or two per iteration) on rxe's UC and UD SEND
//     and RC READ paths is the device's own per-message softirq work
//     (ksoftirqd preempting the loop on its CPU; perftest pays it too),
//     not noise; many, varying between runs, is other load on the loops'
//     CPUs (docs/metrics.md).
//   - delivered-msgs/s, lost-msgs/op (UC and UD streams of verbs that
//     consume a receive, local passive side): messages the passive side
//     received per second of the sender's time, and the fraction of the
//     messages sent that never arrived. On RC every message must arrive,
//     or the run fails.
//   - recv-MB/s (streams of verbs that consume a receive, local passive
//     side, any transport): the receiver's bandwidth as perftest's
//     ib_send_bw server row measures it — payload bytes received (size ×
//     messages received) over the passive loop's own interval, from the
//     poll return that gave it the stream's first receive to the end of
//     the last poll that gave it receives; MB = 10^6 bytes.
//   - <counter>/run: port counters (sysfs hw_counters and counters) that
//     moved during the run and are watched (see Watched), as deltas from
//     just before the timed region to just after it (not per operation;
//     the run's length is b.N operations). The control path reports no
//     preempted/run: it runs on the benchmark's goroutine, not a loop
//     thread. On rxe, a few completer_retry_err/run and
//     duplicate_request/run in an RC run that verified are its
//     retransmit timer firing spuriously (it is not stopped when all is
//     acknowledged; about 67 ms at the default local ACK timeout): a
//     resend the responder recognises as duplicate, harmless unless they
//     grow with the operations or come with sequence, RNR or
//     retry-exceeded counters (docs/metrics.md).
//   - Echo RPC (HERD style, see scenario.EchoRPC): one sample per RPC = the full
//     round trip (not halved) from just before the request's post call
//     until the poll that returned its response's receive completion,
//     with qd requests outstanding, every one posted in the timed region
//     (it starts by filling the window); msgs/s = RPCs completed per
//     second.
//   - offered-msgs/s (rate= runs): the offered rate, Load × the peak
//     measured just before on the same pair; msgs/s is then the achieved
//     rate, and a latency sample runs from the message's due time (see
//     scenario.Stream).
//   - Inbound, threads, header-only, offered load, atomics over many
//     counters and the control path: see scenario.Stream and
//     scenario.ControlPath, and bench_test's package doc.
//
// Every standard scenario verifies its results after the timed region
// (payload patterns, atomics' returned values and counters, delivered
// counts), and Measure checks every operation's error, the send queue's
// accounting and the completions awaited; a mismatch fails the benchmark.
package rdmatest
