// loop.h: the timed loops of rdmabench, in C (loop.c), and what Go hands
// them. Go allocates every structure below in C memory (never Go memory),
// fills it before the run, calls one rb_run_* function per run, and reads
// the outcome and the histogram after it returns. Nothing is allocated,
// and no system call of ours is made, inside a loop (event mode aside:
// waiting on a completion channel is a system call by definition).
#ifndef RB_LOOP_H
#define RB_LOOP_H

#include "rb.h"

// rb_hist is an HDR histogram's counts array with hdrhistogram-go's exact
// geometry (bucket arithmetic of its countsIndexFor): Go imports the counts
// with hdrhistogram.Import after the run.
typedef struct {
	int64_t *counts;
	int64_t len;
	int64_t sub_bucket_mask;
	int32_t unit_magnitude, half_count_magnitude;
	int64_t half_count;
	int64_t lowest, highest; // values are clamped into this range
	int64_t total, overflow; // samples recorded; samples above highest
} rb_hist;

// Outcomes of a loop (rb_ctl.status).
enum {
	RB_OK = 0,
	RB_STOPPED,    // the stop flag was set before the work was done
	RB_STALLED,    // a wait passed its deadline (rb_ctl.waiting says which)
	RB_POST_SEND,  // ibv_post_send failed: err, err_index
	RB_POST_RECV,  // ibv_post_recv / ibv_post_srq_recv failed: err, err_index
	RB_POLL,       // ibv_poll_cq returned a negative count
	RB_WC,         // a completion with an error status: bad
	RB_UNEXPECTED, // a completion the loop cannot place: bad
	RB_CHECK,      // a returned value differs from the expected one: want, got, at
	RB_EVENT,      // the completion channel failed: err
	RB_IDLE,       // a passive loop saw no request for timeout_ns
};

// What a stalled loop was waiting for (rb_ctl.waiting).
enum {
	RB_WAIT_NONE = 0,
	RB_WAIT_ECHO_BYTE,   // the peer's WRITE changing the last byte of our buffer
	RB_WAIT_ANSWER,      // a receive completion answering our message
	RB_WAIT_COMPLETION,  // the completion of our own READ or atomic
	RB_WAIT_SEND,        // completions of our own sends (room in the send queue)
	RB_WAIT_GATE,        // the start of the stream we start together with
	RB_WAIT_RECVS,       // the other side's messages (our receives), bidir streams
	RB_WAIT_SPIN,        // a program's spin: a byte or word of our memory
	RB_WAIT_AWAIT,       // a program's await: receive completions and/or our signaled WRs' completions
};

// rb_ctl is the part every loop shares: the stop flag Go sets, the
// deadline of every single wait, and the outcome.
typedef struct {
	volatile int32_t stop;
	int32_t status, err, err_index, waiting, pad;
	int64_t timeout_ns;
	int64_t outstanding;       // WRs outstanding when the loop failed
	rb_wc bad;                 // RB_WC, RB_UNEXPECTED
	uint64_t want, got, at;    // RB_CHECK: expected, found, operation index
	int64_t t_first, t_last;   // first post and last completion, CLOCK_MONOTONIC ns
	int64_t ops;               // operations completed (messages, round trips)
	int64_t recvs;             // receive completions seen (passive side)
	int64_t t_recv_last;       // when a poll last returned receives (sink)
	// The sink's receiver interval (perftest's ib_send_bw server row):
	// t_recv_first is when the poll returned whose receives took recvs
	// past recv_mark (Go sets the mark, atomically, before a stream
	// whose receives are to be timed; 0 from the start).
	int64_t t_recv_first;
	volatile int64_t recv_mark;
} rb_ctl;

// rb_rq keeps one receive queue (a QP's, or an SRQ when srq is set)
// stocked: every receive WR points at the same SGE and carries id in its
// wr_id; consumed receives are reposted RB_RBATCH at a time at most, and
// sooner where a loop has time that is not measured: the passive loops on
// an empty poll, the ping requester between round trips.
#define RB_RBATCH 64
typedef struct {
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	struct ibv_recv_wr wr[RB_RBATCH];
	struct ibv_sge sge;
	int32_t pending, pad;
} rb_rq;

// Ping-pong requester modes.
enum { RB_PING_WRITE = 1, RB_PING_RECV, RB_PING_ROUND };
// Atomic checks of a round trip.
enum { RB_ATOMIC_NONE = 0, RB_ATOMIC_FADD, RB_ATOMIC_CSWAP };

// rb_ping is the requester of a latency run: one operation at a time on
// one QP, one sample per operation.
typedef struct {
	rb_ctl ctl;
	rb_hist hist;
	rb_hist cycle;               // iteration to iteration: post to next post
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch; // event mode when set
	struct ibv_qp *qp;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	rb_rq *rq;                   // RB_PING_RECV: the requester's receives
	int32_t mode, halve, send_depth, atomic;
	int32_t signal_all, pad0;    // every WR signaled, its completion awaited, receives reposted per message
	volatile uint8_t *in_last;   // RB_PING_WRITE: the byte the answer changes
	uint8_t *out_last;           // RB_PING_WRITE: the byte we change
	volatile uint64_t *result;   // atomics: where the returned value lands
	int64_t iters, warmup, gap_ns;
	uint64_t base;               // atomics: the counter's value before the first operation
	uint64_t done_before;        // atomics: operations of earlier runs (Warm)
	// Kept from one call to the next (Warm, then Run): sends posted and
	// known complete (the send queue's accounting), and the last value
	// the WRITE ping wrote (the next one must differ from it).
	uint64_t posted, covered;
	int32_t have_base;
	uint8_t v, pad[3];
} rb_ping;

// Passive-side modes.
enum { RB_SERVE_WRITE_ECHO = 1, RB_SERVE_RECV_ECHO, RB_SERVE_SINK, RB_SERVE_WRITE_RPC };

// rb_serve is the passive side of a run: it answers or absorbs what the
// requester sends until the stop flag is set.
typedef struct {
	rb_ctl ctl;
	struct ibv_cq *cq;
	rb_rq *rq;                   // receive queues (per QP, or one SRQ)
	int32_t nrq, mode;
	struct ibv_qp *qp;           // echo modes: the QP answers go out on
	struct ibv_send_wr wr;       // echo modes: the answer
	struct ibv_sge sge;
	int32_t send_depth, imm_cap; // imm_cap: room in imms (≥ receives posted)
	uint32_t *imms;              // RB_SERVE_RECV_ECHO: immediates still to answer
	volatile uint8_t *in_last;   // RB_SERVE_WRITE_ECHO
	uint8_t *out_last;
	int64_t idle_ns;             // give up after this long without a request (0: never)
	// RB_SERVE_WRITE_RPC: window request slots of stride bytes in req
	// (a request's last byte, nonzero, is its generation), copied to the
	// same slot of resp (at resp_addr) and answered with wr.
	volatile uint8_t *req;
	uint8_t *resp;
	uint64_t resp_addr;
	int32_t window, stride, size;
	int32_t signal_all;          // every answer signaled and its completion awaited; receives reposted per message
} rb_serve;

// RPC client phases.
enum { RB_RPC_FILL = 1, RB_RPC_MEASURE, RB_RPC_DRAIN };

// rb_rpc is the client of an echo RPC run: window requests outstanding,
// each answered by a SEND_WITH_IMM carrying its tag (slot | gen << 16).
typedef struct {
	rb_ctl ctl;
	rb_hist hist;
	struct ibv_cq *req_cq, *resp_cq; // the same CQ when requests and responses share a QP
	struct ibv_qp *qp;               // requests go out here
	struct ibv_send_wr wr;           // the request
	struct ibv_sge sge;
	rb_rq *rq;                       // the responses' receives
	int32_t window, stride, size, write, send_depth, phase;
	uint64_t out_addr;               // the client's request slots
	uint8_t *out;
	uint64_t remote_base;            // the server's request region (RDMA WRITE)
	uint8_t *gen;                    // per slot: generation of its outstanding request (0: none)
	int64_t *sent_at;                // per slot: just before its post
	uint32_t *pend_tag;              // responses polled, not yet taken (a ring of window)
	int64_t *pend_at;
	int32_t pend_head, pend_n;
	uint64_t posted, covered;        // request sends posted, known complete
	int64_t n;                       // RPCs of the phase
} rb_rpc;

// rb_sq is one QP of a stream.
typedef struct {
	struct ibv_qp *qp;
	struct ibv_send_wr *wrs;     // batch WRs (and their SGEs), reused
	struct ibv_sge *sges;
	struct ibv_send_wr marker;   // the completion marker (see Stream in rdmatest/internal/engine)
	struct ibv_sge marker_sge;
	uint64_t posted, done, last_signal;
	int64_t *posted_at;          // ring of post times of signaled WRs
	uint64_t mask;
	uint64_t base;               // remote address of counter 0 (atomics)
} rb_sq;

// rb_stream is the requester of a streaming run: n messages over nqp QPs,
// qd outstanding per QP, batch WRs per post, one in signal signaled.
typedef struct {
	rb_ctl ctl;
	rb_hist hist;
	struct ibv_cq *cq;
	struct ibv_comp_channel *ch;
	rb_sq *sq;
	int32_t nqp, qd, batch, signal, counters, stride, send_depth, cswap;
	rb_rq *rq;                   // bidir SEND: the side's own receives (indexed by wr_id)
	int32_t nrq, opens_gate;
	volatile int32_t *gate;      // start together: wait until *gate != 0, or open it
	int32_t gate_word, pad;      // the gate a leading stream opens
	int64_t n;
	int64_t expect_recvs;        // bidir: receives to see before the loop ends
	int64_t interval_ns;         // open loop: message k is due at start + k·interval_ns (0: closed loop)
	int64_t t_start;
} rb_stream;

// Program steps (rb_step.kind): the Go StepKind values.
enum {
	RB_STEP_POST = 1,     // post wrs[first, first+n) on qps[qp] as one chain (one doorbell)
	RB_STEP_AWAIT,        // recvs receive completions and sends completions of Signaled WRs
	RB_STEP_NEXT_GEN,     // gen = gen % 255 + 1
	RB_STEP_PUT_GEN,      // mem[off] = gen
	RB_STEP_SPIN_GEN,     // spin until mem[off] == gen
	RB_STEP_SPIN_CHANGE,  // spin until mem[off] != gen, then gen = mem[off]
	RB_STEP_SPIN_EQUAL,   // spin until the width-byte word at off == value
	RB_STEP_REPOST,       // post the consumed receives again now
	RB_STEP_COPY_IMM,     // the last receive's immediate data → the 4 bytes at off
	RB_STEP_COPY_LEN,     // the last receive's byte_len → the 4 bytes at off
	RB_STEP_EXPECT,       // the width-byte word at off must equal value (else RB_CHECK)
	RB_STEP_SAMPLE_START, // the sample starts here
	RB_STEP_SAMPLE_END,   // the sample ends here (halved when halve)
};

// rb_step is one step of a program (loop.go's Step, checked there).
typedef struct {
	int32_t kind, qp, first, n;  // RB_STEP_POST
	int32_t recvs, sends;        // RB_STEP_AWAIT
	int32_t every;               // RB_STEP_POST: signal the last WR once every `every` iterations, reaped in the background
	int32_t halve, width;        // RB_STEP_SAMPLE_END; RB_STEP_SPIN_EQUAL and RB_STEP_EXPECT: 1, 4 or 8 bytes
	int32_t consumes;            // RB_STEP_POST: WRs that consume a receive at the peer
	int64_t off;                 // offset into mem
	uint64_t value;
	int32_t due, pad;            // RB_STEP_POST with every: iterations until the signaled one (the loop's; no division per post)
} rb_step;

// rb_pq is the send-queue accounting of one QP of a program.
typedef struct {
	struct ibv_qp *qp;
	uint64_t posted, covered; // WRs posted; WRs known complete (through the last signaled completion seen)
} rb_pq;

// rb_prog is a side's program (issue #28): steps interpreted once per
// iteration, iters iterations (the requester) or until the stop flag
// (passive), with no allocation and no system call of ours.
typedef struct {
	rb_ctl ctl;
	rb_hist hist;
	struct ibv_cq *cq;
	rb_pq *qps;
	rb_rq *rq;                   // kept receives: per QP, or one SRQ (NULL: none)
	struct ibv_send_wr *wrs;     // the posts' WRs, chained per post step
	rb_step *steps;
	volatile uint8_t *mem;       // the side's memory: step offsets are into it
	int32_t nqp, nrq, nstep, send_depth;
	int32_t passive, whole;      // whole: the sample is the whole iteration (no sample steps)
	int32_t step, pad;           // the step running (the failing one when the loop fails)
	int64_t iters, warmup, idle_ns;
	// Kept from one call to the next (Warm, then Run): iterations done,
	// completions seen but not yet awaited, the last receive's fields
	// and the generation register.
	int64_t iter, got_recv, got_send, consumed;
	uint32_t last_imm, last_len;
	uint8_t gen, pad2[7];
} rb_prog;

int rb_run_ping(rb_ping *p);
int rb_run_prog(rb_prog *p);
int rb_run_serve(rb_serve *s);
int rb_run_stream(rb_stream *s);
int rb_run_rpc(rb_rpc *r);
int rb_stream_settle(rb_stream *s, int64_t want, int64_t quiet_ns);
void rb_rq_init(rb_rq *r, struct ibv_qp *qp, struct ibv_srq *srq, uint64_t addr, uint32_t length, uint32_t lkey, uint64_t id);
int rb_rq_fill(rb_ctl *c, rb_rq *r, int n);
void rb_hist_add(rb_hist *h, int64_t v);
// The loops' clock (clock.go, loop.c's rb_clock): CLOCK_MONOTONIC, or
// the CPU's counter calibrated against CLOCK_MONOTONIC_RAW; changed only
// while no loop runs.
//
// rb_clock_pair is the counter and CLOCK_MONOTONIC_RAW read together:
// ticks taken between two RAW reads raw_ns − width_ns/2 and raw_ns +
// width_ns/2 (the tightest of a few tries).
typedef struct {
	uint64_t ticks;
	int64_t raw_ns, width_ns;
} rb_clock_pair;

int64_t rb_clock_ns(void);
void rb_clock_read_pair(rb_clock_pair *p);
int rb_clock_use_monotonic(void);
double rb_clock_use_counter(int64_t span_ns);

#endif
