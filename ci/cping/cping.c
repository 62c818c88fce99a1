// cping: calibrate's C-only control (issue #13). It runs rdmabench's own
// WRITE ping-pong — the same C loops as WriteLat (verbs/loop.c:
// rb_run_ping in RB_PING_WRITE mode, rb_run_serve in
// RB_SERVE_WRITE_ECHO) over a setup like the benchmark's (one RC QP per
// side on one device, looped back on one port, 64-byte slots (a page
// with -DCPING_PERFTEST_LAYOUT), send depth 64 — so one WR in 32
// signaled, as the loop derives it —, timeout 14, retry 7; it differs
// in a receive depth of 512, a CQ of 576, one outstanding RDMA read or
// atomic and a heap buffer, which -DCPING_GO_SETUP aligns) — in a
// process with no Go
// runtime, each loop on a thread pinned to a CPU of its own. Comparing
// it with WriteLat and ib_write_lat in one boot tells what the Go process
// around the loop costs.
//
// With -S it does perftest's latency work instead (as WriteLat with
// -rdma.signal-all -rdma.warmup 0): every WR signaled and its completion
// awaited in its iteration on both sides, no warm-up; calibrate then reads
// the cycle histogram (post → next post ÷ 2, iters − 1 samples: perftest's
// sample; not halved with -o read|fadd|cas, as perftest's READ and atomic
// samples), so the control also runs under the like-for-like definition.
//
// It prints the histogram's counts (hdrhistogram-go's geometry,
// 1 ns … 100 s, 3 significant figures; the samples are RTT/2 as in
// WriteLat, the whole round trip with -o read|fadd|cas) as "cping-counts LOWEST HIGHEST SIGFIGS TOTAL LEN" followed by
// "INDEX COUNT" lines for the non-zero counts, then the cycle histogram's
// as "cping-cycle-counts …" and its lines, so that calibrate reads the
// percentiles exactly as rdmatest does (hdrhistogram.Import).
//
// Three experiment builds of issue #27 (make calibrate-setup, make
// calibrate-phases, docs/performance.md): -DCPING_PERFTEST_QUEUES
// (perftest's latency queues, below), -DCPING_TWO_PROCESSES (side B in a
// process of its own, forked before any verbs call and connected over
// pipes, as perftest's server is a process of its own) and
// -DCPING_PERFTEST_LOOP (x86 only, -S only: both sides run the shape of
// perftest's run_iter_lat_write instead of rdmabench's loops — spin, TSC
// stamp, post, poll the send completion —, no clock read and no
// histogram add inside the loop; the stamps become the cycle histogram
// after the run). Two more (issue #43) split what that build changes by
// side: -DCPING_PERFTEST_LOOP_A (perftest's loop on side A, the one whose
// cycle is measured, rdmabench's serve loop on side B) and
// -DCPING_PERFTEST_LOOP_B (rdmabench's ping loop on A, perftest's loop
// answering on B); both sides then count 1..255 as rdmabench's loops do.
// -DCPING_PT_ANSWER_STAMP adds to perftest's loop on side A the one clock
// read it lacks against ours: at the answer; with -o read|fadd|cas,
// -DCPING_PT_HIST_ADDS adds our two histogram adds a round trip and
// -DCPING_PT_OUR_POLL our poll (a batch of 32, every status checked),
// -DCPING_PT_OUR_CLOCK our clock read at the post (rb_clock_ns, a call)
// instead of an inline rdtsc. -DCPING_PERFTEST_LAYOUT
// (perftest's buffer layout) and
// -DCPING_TWO_CONTEXTS (a device context per side) change the setup
// alone, as -DCPING_TWO_CQS does (a receive CQ a side besides the send
// CQ, as perftest's; with -DCPING_PERFTEST_LOOP only); the builds combine
// (make calibrate-phases' PHASE_BUILDS).
//
// With -o read, -o fadd or -o cas (issue #43: the other families'
// phases), side A runs the READ, FETCH_AND_ADD or COMPARE_AND_SWAP round
// trip of ReadLat and AtomicLat instead (rdmabench's loop in
// RB_PING_ROUND mode; with -DCPING_PERFTEST_LOOP perftest's
// run_iter_lat: stamp, post, poll), a sample the whole round trip as
// perftest's, and side B runs no loop: only the default and
// -DCPING_PERFTEST_LOOP builds take it. With -o send, the two sides run
// SendLat's RC ping-pong (rdmabench's loops in RB_PING_RECV and
// RB_SERVE_RECV_ECHO mode, 512 receives posted on each side, the answer
// echoing the bytes received; the sample halved as WRITE's), or with
// -DCPING_PERFTEST_LOOP perftest's run_iter_lat_send on both sides (over
// our one CQ a side: pt_next); the default and -DCPING_PERFTEST_LOOP
// builds take it, not those with perftest's queues or our pieces.
//
// Usage: cping -d DEV [-i PORT] [-x GID_INDEX] [-s SIZE] [-n ITERS] [-o write|read|fadd|cas|send]
//              [-a CPU_A] [-b CPU_B] [-t TIMEOUT_S] [-S]
// Built by calibrate's make target with -Wall -Wextra -Werror.
#define _GNU_SOURCE
#include "../../verbs/loop.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what, int err) {
	fprintf(stderr, "cping: %s: %s\n", what, err ? strerror(err) : "failed");
	exit(1);
}

// rb_hist_init is verbs.NewHistGeometry (hdrhistogram-go's New).
static void rb_hist_init(rb_hist *h, int64_t lowest, int64_t highest, int sigfigs) {
	memset(h, 0, sizeof *h);
	int32_t sub_bucket_count_magnitude = (int32_t)ceil(log2(2 * pow(10, sigfigs)));
	h->half_count_magnitude = (sub_bucket_count_magnitude > 1 ? sub_bucket_count_magnitude : 1) - 1;
	h->unit_magnitude = 63 - __builtin_clzll((uint64_t)lowest);
	int64_t sub_bucket_count = (int64_t)1 << (h->half_count_magnitude + 1);
	h->half_count = sub_bucket_count / 2;
	h->sub_bucket_mask = (sub_bucket_count - 1) << h->unit_magnitude;
	int64_t smallest_untrackable = sub_bucket_count << h->unit_magnitude;
	int64_t buckets = 1;
	while (smallest_untrackable < highest) {
		if (smallest_untrackable > INT64_MAX / 2) {
			buckets++;
			break;
		}
		smallest_untrackable <<= 1;
		buckets++;
	}
	h->len = (buckets + 1) * h->half_count;
	h->counts = calloc((size_t)h->len, sizeof *h->counts);
	if (!h->counts)
		die("histogram", ENOMEM);
	h->lowest = lowest;
	h->highest = highest;
}

// side is one end: CQ, buffer (out slot, in slot), MR, QP.
struct side {
	struct ibv_cq *cq;
	struct ibv_cq *rcq; // -DCPING_TWO_CQS: the receive CQ; else NULL (cq takes both)
	uint8_t *buf;
	struct ibv_mr *mr;
	struct ibv_qp *qp;
	uint32_t psn;
};

// WriteLat's pair (rdmatest Spec.pairConfig for a latency run). Built
// with -DCPING_PERFTEST_QUEUES, the queues of perftest's latency tests
// instead (tx_depth 1: a send queue and a CQ of one entry; no receives
// in a WRITE ping-pong), the loop accounting for 2 (its least; at most
// one WR is outstanding with -S): an experiment of issue #27 (make
// calibrate-setup, docs/performance.md).
//
// With -DCPING_PERFTEST_LAYOUT (issue #43), perftest's buffer layout: the
// byte polled a page after the byte written (its BUFF_SIZE, one page for
// small messages), in a registered region of two pages, instead of
// WriteLat's 64-byte slots.
#ifdef CPING_PERFTEST_LAYOUT
enum { SLOT = 4096 };
#else
enum { SLOT = 64 };
#endif
#ifdef CPING_PERFTEST_QUEUES
enum { SEND_DEPTH = 1, RECV_DEPTH = 1, CQ_DEPTH = 1, LOOP_DEPTH = 2 };
#else
enum { SEND_DEPTH = 64, RECV_DEPTH = 512, CQ_DEPTH = SEND_DEPTH + RECV_DEPTH, LOOP_DEPTH = SEND_DEPTH };
#endif

// With -DCPING_GO_SETUP (issue #43), the Go benchmarks' setup where it
// differs from the above (verbs and the engine's specs): for WRITE, READ
// and the atomics a receive queue of 1 and a CQ of SEND_DEPTH + 1, the
// device's maximum of outstanding RDMA reads and atomics both ways (128
// on rxe) instead of 1, and each side's buffer a page of its own from
// mmap, registered whole, instead of 128 bytes from posix_memalign.
// SEND keeps its receive queue and CQ. Paired with cping, it tells
// whether the setup explains any of the benchmark's gap to the control.
static int recv_depth = RECV_DEPTH, cq_depth = CQ_DEPTH, rd_atomic = 1;

static void side_open(struct side *s, struct ibv_context *ctx, struct ibv_pd *pd) {
	memset(s, 0, sizeof *s);
	if (!(s->cq = ibv_create_cq(ctx, cq_depth, NULL, NULL, 0)))
		die("ibv_create_cq", errno);
#ifdef CPING_TWO_CQS
	if (!(s->rcq = ibv_create_cq(ctx, cq_depth, NULL, NULL, 0)))
		die("ibv_create_cq (receives)", errno);
#endif
#ifdef CPING_GO_SETUP
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	if (len < 2 * SLOT)
		len = 2 * SLOT;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		die("buffer", errno);
	s->buf = m;
#else
	size_t len = 2 * SLOT;
	if (posix_memalign((void **)&s->buf, (size_t)sysconf(_SC_PAGESIZE), len))
		die("buffer", ENOMEM);
	memset(s->buf, 0, len);
#endif
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (!(s->mr = ibv_reg_mr(pd, s->buf, len, access)))
		die("ibv_reg_mr", errno);
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.send_cq = s->cq;
	ia.recv_cq = s->rcq ? s->rcq : s->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = SEND_DEPTH;
	ia.cap.max_recv_wr = (uint32_t)recv_depth;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	if (!(s->qp = ibv_create_qp(pd, &ia)))
		die("ibv_create_qp", errno);
	s->psn = (uint32_t)lrand48() & 0xffffff;
}

// pub is what a side publishes to the other: its QP, PSN and memory.
struct pub {
	uint32_t qpn, psn, rkey, pad;
	uint64_t buf;
};

static struct pub publish(const struct side *s) {
	struct pub p = {.qpn = s->qp->qp_num, .psn = s->psn, .rkey = s->mr->rkey, .buf = (uintptr_t)s->buf};
	return p;
}

// side_connect moves s's QP to RTS facing the QP peer (same port, GID).
static void side_connect(struct side *s, const struct pub *peer, int port, int gid_index, const union ibv_gid *gid, enum ibv_mtu mtu) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.port_num = (uint8_t)port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc)
		die("modify to INIT", rc);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qpn;
	a.rq_psn = peer->psn;
	a.max_dest_rd_atomic = (uint8_t)rd_atomic;
	a.min_rnr_timer = 12;
	a.ah_attr.port_num = (uint8_t)port;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		die("modify to RTR", rc);
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s->psn;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = (uint8_t)rd_atomic;
	rc = ibv_modify_qp(s->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		die("modify to RTS", rc);
}

// write_wr fills a signaled RDMA WRITE of size bytes from from's out slot
// to to's in slot.
static void write_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, const struct side *from, const struct pub *to, int size) {
	memset(wr, 0, sizeof *wr);
	sge->addr = (uintptr_t)from->buf;
	sge->length = (uint32_t)size;
	sge->lkey = from->mr->lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->opcode = IBV_WR_RDMA_WRITE;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->wr.rdma.remote_addr = to->buf + SLOT;
	wr->wr.rdma.rkey = to->rkey;
}

static void pin(int cpu) {
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	if (rc) {
		fprintf(stderr, "cping: pinning a loop's thread to CPU %d: %s\n", cpu, strerror(rc));
		exit(1);
	}
}

// preemptions is the calling thread's involuntary context switches so far
// (rdmatest's preempted/run counts the same).
static long preemptions(void) {
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru))
		return 0;
	return ru.ru_nivcsw;
}

struct server {
	rb_serve s;
	int cpu;
	long preempted;
	int status;
};

// The experiment builds that combine, and those that do not.
#if (defined(CPING_PERFTEST_LOOP) + defined(CPING_PERFTEST_LOOP_A) + defined(CPING_PERFTEST_LOOP_B)) > 1
#error "choose one of CPING_PERFTEST_LOOP, CPING_PERFTEST_LOOP_A, CPING_PERFTEST_LOOP_B"
#endif
#if defined(CPING_TWO_PROCESSES) && \
	(defined(CPING_PERFTEST_LOOP) || defined(CPING_PERFTEST_LOOP_A) || defined(CPING_PERFTEST_LOOP_B) || defined(CPING_TWO_CONTEXTS))
#error "CPING_TWO_PROCESSES runs rdmabench's loops, each process on a context of its own: it takes no other loop or context build"
#endif
#if defined(CPING_TWO_CQS) && !defined(CPING_PERFTEST_LOOP)
#error "CPING_TWO_CQS (a receive CQ a side, as perftest's) needs CPING_PERFTEST_LOOP: rdmabench's loops take one CQ a side"
#endif
#if (defined(CPING_PT_HIST_ADDS) || defined(CPING_PT_OUR_POLL) || defined(CPING_PT_OUR_CLOCK)) && !defined(CPING_PERFTEST_LOOP)
#error "CPING_PT_HIST_ADDS, CPING_PT_OUR_POLL and CPING_PT_OUR_CLOCK change perftest's round-trip loop: they need CPING_PERFTEST_LOOP"
#endif
#if defined(CPING_PT_ANSWER_STAMP) && !defined(CPING_PERFTEST_LOOP) && !defined(CPING_PERFTEST_LOOP_A)
#error "CPING_PT_ANSWER_STAMP changes perftest's loop on side A: it needs CPING_PERFTEST_LOOP or CPING_PERFTEST_LOOP_A"
#endif

#if defined(CPING_PERFTEST_LOOP_A) || defined(CPING_PERFTEST_LOOP_B)
#define CPING_PT_ANY
#define CPING_PT_ONE_SIDE
#elif defined(CPING_PERFTEST_LOOP)
#define CPING_PT_ANY
#endif

#if !defined(CPING_PERFTEST_LOOP) && !defined(CPING_PERFTEST_LOOP_B)
static void *serve_main(void *arg) {
	struct server *sv = arg;
	pin(sv->cpu);
	long p0 = preemptions();
	sv->status = rb_run_serve(&sv->s);
	sv->preempted = preemptions() - p0;
	if (sv->status != RB_OK && sv->status != RB_STOPPED)
		sv->s.ctl.stop = 1; // a perftest-shaped side A waiting on us stops too (LOOP_A)
	return NULL;
}
#endif

#ifdef CPING_TWO_PROCESSES
static void xwrite(int fd, const void *p, size_t n) {
	if (write(fd, p, n) != (ssize_t)n)
		die("write to the other process", errno);
}

static void xread(int fd, void *p, size_t n) {
	if (read(fd, p, n) != (ssize_t)n)
		die("read from the other process", errno ? errno : EPIPE);
}

// stop_watch sets B's stop flag when A writes or closes its pipe.
static volatile int32_t *stop_flag;
static void *stop_watch(void *arg) {
	char c;
	(void)!read(*(int *)arg, &c, 1);
	*stop_flag = 1;
	return NULL;
}
#endif

#ifdef CPING_PT_ANY
#include <x86intrin.h>

// PT_BYTE is round trip n's byte: perftest's (char)n when both sides run
// its loop; rdmabench's sequence (1..255, never 0) when one side runs
// rdmabench's loop, which expects it.
#ifdef CPING_PT_ONE_SIDE
#define PT_BYTE(n) ((uint8_t)(((n) - 1) % 255 + 1))
#else
#define PT_BYTE(n) ((uint8_t)(n))
#endif

// PT_STATUSES names a pt_side's status values, for the messages.
#define PT_STATUSES "(1 stopped, 2 deadline, 3 post, 4 completion, 5 post receive)"

// pt_side is one side of the perftest-shaped loop. The side marked
// passive posts first and the other waits first, as perftest's server
// and client; side A (the requester) stamps the TSC before each post.
// Both sides: B is passive. -DCPING_PERFTEST_LOOP_A: A is, since its
// peer, rdmabench's serve loop, waits for a change. -DCPING_PERFTEST_LOOP_B:
// neither, B answers rdmabench's ping.
struct pt_side {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	struct ibv_cq *rcq; // -DCPING_TWO_CQS: where receives complete (pt_next)
	struct ibv_send_wr *wr;
	volatile uint8_t *in, *out;
	long iters;
	int passive, cpu;
	uint64_t *stamps; // side A's, one per post; NULL on side B
	volatile int32_t *stop;
	int64_t timeout_ns;
	int status; // 0, or one of PT_STATUSES
	volatile int64_t answered; // -DCPING_PT_ANSWER_STAMP: the last answer's clock read
	rb_hist *hist;             // -DCPING_PT_HIST_ADDS: where pt_round adds its two values a round trip
	struct ibv_recv_wr *rwr;   // -o send: the receive pt_send reposts per message
};

// pt_late tells a wait of the perftest-shaped loop to end: 1 on the stop
// flag, 2 past the deadline (its clock read every 1024 turns, starting
// at the first such read: *since 0), else 0.
static int pt_late(struct pt_side *s, unsigned turns, int64_t *since) {
	if (*s->stop)
		return 1;
	if (turns % 1024 == 0) {
		int64_t now = rb_clock_ns();
		if (*since == 0)
			*since = now;
		else if (now - *since > s->timeout_ns)
			return 2;
	}
	return 0;
}

// pt_spin waits for the peer's byte want.
static int pt_spin(struct pt_side *s, uint8_t want) {
	int64_t since = 0;
	int late = 0;
	for (unsigned spins = 1; *s->in != want && !late; spins++)
		late = pt_late(s, spins, &since);
	return late;
}

static void *pt_loop(void *arg) {
	struct pt_side *s = arg;
	pin(s->cpu);
	long scnt = 0, ccnt = 0, rcnt = 0;
	struct ibv_wc wc;
	struct ibv_send_wr *bad;
	while (scnt < s->iters || ccnt < s->iters || rcnt < s->iters) {
		if (rcnt < s->iters && !(scnt < 1 && s->passive)) {
			rcnt++;
			if ((s->status = pt_spin(s, PT_BYTE(rcnt))))
				goto out;
#ifdef CPING_PT_ANSWER_STAMP
			// rdmabench's ping reads the clock where it sees the
			// answer too (its post → answer sample): the same read here,
			// on the stamping side.
			if (s->stamps)
				s->answered = rb_clock_ns();
#endif
		}
		if (scnt < s->iters) {
			if (s->stamps)
				s->stamps[scnt] = __rdtsc();
			*s->out = PT_BYTE(++scnt);
			if (ibv_post_send(s->qp, s->wr, &bad)) {
				s->status = 3;
				goto out;
			}
		}
		if (ccnt < s->iters) {
			int ne;
			int64_t since = 0;
			for (unsigned polls = 1; (ne = ibv_poll_cq(s->cq, 1, &wc)) == 0; polls++)
				if ((s->status = pt_late(s, polls, &since)))
					goto out;
			if (ne < 0 || wc.status != IBV_WC_SUCCESS) {
				s->status = 4;
				goto out;
			}
			ccnt++;
		}
	}
out:
	if (s->status)
		*s->stop = 1; // the other side stops too
	return NULL;
}
#endif

#ifdef CPING_PERFTEST_LOOP
// pt_round is perftest's run_iter_lat on side A (READ and atomics):
// stamp, post, poll the completion, iters times.
static void pt_round(struct pt_side *s) {
	pin(s->cpu);
	struct ibv_wc wc;
	struct ibv_send_wr *bad;
#ifdef CPING_PT_HIST_ADDS
	int64_t t_prev = 0;
#endif
	for (long scnt = 0; scnt < s->iters; scnt++) {
#ifdef CPING_PT_OUR_CLOCK
		s->stamps[scnt] = (uint64_t)rb_clock_ns(); // our clock read at the post, in ns
#else
		s->stamps[scnt] = __rdtsc();
#endif
		if (ibv_post_send(s->qp, s->wr, &bad)) {
			s->status = 3;
			return;
		}
#ifdef CPING_PT_HIST_ADDS
		// rdmabench's two histogram adds after each post (the previous
		// round trip's sample and cycle), here of the stamps' difference.
		if (scnt > 0) {
			int64_t d = (int64_t)(s->stamps[scnt] - s->stamps[scnt - 1]);
			rb_hist_add(s->hist, d);
			rb_hist_add(s->hist, d - t_prev);
			t_prev = d / 2;
		}
#endif
		int ne;
		int64_t since = 0;
#ifdef CPING_PT_OUR_POLL
		// rdmabench's poll: a batch of 32 (verbs/loop.c's RB_POLL_BATCH),
		// every status checked.
		struct ibv_wc wcs[32];
		for (unsigned polls = 1; (ne = ibv_poll_cq(s->cq, 32, wcs)) == 0; polls++)
			if ((s->status = pt_late(s, polls, &since)))
				return;
		for (int i = 0; i < ne; i++)
			if (wcs[i].status != IBV_WC_SUCCESS)
				ne = -1;
		wc.status = IBV_WC_SUCCESS;
#else
		for (unsigned polls = 1; (ne = ibv_poll_cq(s->cq, 1, &wc)) == 0; polls++)
			if ((s->status = pt_late(s, polls, &since)))
				return;
#endif
		if (ne < 0 || wc.status != IBV_WC_SUCCESS) {
			s->status = 4;
			return;
		}
#ifdef CPING_PT_ANSWER_STAMP
		s->answered = rb_clock_ns();
#endif
	}
}
#endif

// The round trips cping runs (-o).
enum { OP_WRITE, OP_READ, OP_FADD, OP_CAS, OP_SEND };

#ifdef CPING_PERFTEST_LOOP
// pt_next polls side s's CQ one completion at a time, as perftest does,
// until one of the kind wanted (a receive, or its own send) is there,
// and takes it. perftest has a send CQ and a receive CQ; our setup has
// one CQ a side, so a completion of the other kind that comes first is
// counted (*recvs, *sends) and taken when its turn comes. With
// -DCPING_TWO_CQS, perftest's: receives are polled on their own CQ.
// 0, or one of PT_STATUSES.
static int pt_next(struct pt_side *s, long *recvs, long *sends, int want_recv) {
	long *want = want_recv ? recvs : sends;
	struct ibv_cq *cq = want_recv && s->rcq ? s->rcq : s->cq;
	int64_t since = 0;
	for (unsigned polls = 1; *want == 0; polls++) {
		struct ibv_wc wc;
		int ne = ibv_poll_cq(cq, 1, &wc);
		if (ne < 0 || (ne > 0 && wc.status != IBV_WC_SUCCESS))
			return 4;
		if (ne > 0)
			++*((wc.opcode & IBV_WC_RECV) ? recvs : sends);
		else if ((ne = pt_late(s, polls, &since)))
			return ne;
	}
	--*want;
	return 0;
}

// pt_send is perftest's run_iter_lat_send on one side (-o send): wait
// for the peer's message (side A, the client, not before its first
// post), repost that receive (while the posted ones still fall short of
// iters, as perftest), stamp (side A), post the SEND, signaled, and
// poll its completion.
static void *pt_send(void *arg) {
	struct pt_side *s = arg;
	pin(s->cpu);
	long scnt = 0, rcnt = 0, recvs = 0, sends = 0;
	struct ibv_send_wr *bad;
	struct ibv_recv_wr *rbad;
	while (scnt < s->iters || rcnt < s->iters) {
		if (rcnt < s->iters && !(scnt < 1 && s->stamps)) {
			if ((s->status = pt_next(s, &recvs, &sends, 1)))
				goto out;
			rcnt++;
			if (rcnt + RECV_DEPTH <= s->iters && ibv_post_recv(s->qp, s->rwr, &rbad)) {
				s->status = 5;
				goto out;
			}
		}
		if (scnt < s->iters) {
			if (s->stamps)
				s->stamps[scnt] = __rdtsc();
			scnt++;
			if (ibv_post_send(s->qp, s->wr, &bad)) {
				s->status = 3;
				goto out;
			}
			if ((s->status = pt_next(s, &recvs, &sends, 0)))
				goto out;
		}
	}
out:
	if (s->status)
		*s->stop = 1; // the other side stops too
	return NULL;
}

// pt_send_setup turns side x's WRITE wr (side A's from its out slot,
// side B's echo from its in slot) into a SEND and posts RECV_DEPTH
// receives into x's in slot, one WR each, as perftest posts its rx_depth.
static void pt_send_setup(struct side *x, struct ibv_send_wr *wr, struct ibv_recv_wr *rwr, struct ibv_sge *rsge, int size) {
	wr->opcode = IBV_WR_SEND;
	memset(rwr, 0, sizeof *rwr);
	rsge->addr = (uintptr_t)(x->buf + SLOT);
	rsge->length = (uint32_t)size;
	rsge->lkey = x->mr->lkey;
	rwr->sg_list = rsge;
	rwr->num_sge = 1;
	struct ibv_recv_wr *bad;
	for (int i = 0; i < RECV_DEPTH; i++)
		if (ibv_post_recv(x->qp, rwr, &bad))
			die("ibv_post_recv", errno);
}
#endif

#if !defined(CPING_TWO_PROCESSES) && !defined(CPING_PT_ONE_SIDE)
// round_wr fills side A's signaled READ (size bytes), FETCH_AND_ADD
// (8 bytes, add 1) or COMPARE_AND_SWAP (8 bytes; perftest's 0 for 0:
// rdmabench's loop sets its own pair a round trip) of b's memory into a's
// in slot.
static void round_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, const struct side *from, const struct pub *to, int size, int op) {
	memset(wr, 0, sizeof *wr);
	sge->addr = (uintptr_t)(from->buf + SLOT);
	sge->length = (uint32_t)size;
	sge->lkey = from->mr->lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	if (op == OP_READ) {
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = to->buf;
		wr->wr.rdma.rkey = to->rkey;
	} else {
		wr->opcode = op == OP_CAS ? IBV_WR_ATOMIC_CMP_AND_SWP : IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr->wr.atomic.remote_addr = to->buf + SLOT;
		wr->wr.atomic.rkey = to->rkey;
		wr->wr.atomic.compare_add = op == OP_CAS ? 0 : 1;
	}
}
#endif

static long arg_long(const char *flag, const char *v, long lo, long hi) {
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < lo || n > hi) {
		fprintf(stderr, "cping: %s %s: want an integer in %ld..%ld\n", flag, v, lo, hi);
		exit(2);
	}
	return n;
}

// print_counts prints h's header line (name, geometry, total, length)
// and its non-zero counts as "INDEX COUNT" lines.
static void print_counts(const char *name, const rb_hist *h) {
	printf("%s %lld %lld %d %lld %lld\n", name, (long long)h->lowest, (long long)h->highest, 3, (long long)h->total,
	       (long long)h->len);
	for (int64_t i = 0; i < h->len; i++)
		if (h->counts[i])
			printf("%lld %lld\n", (long long)i, (long long)h->counts[i]);
}

// use_clock takes the loops' clock as the benchmarks do (verbs.SetClock
// from RDMA_CLOCK: auto, tsc or monotonic; auto takes the counter where
// the kernel's clocksource is tsc) and names it on stderr; 0, or 2 on a
// bad RDMA_CLOCK.
static int use_clock(void) {
	const char *want = getenv("RDMA_CLOCK");
	if (!want || !*want)
		want = "auto";
	int counter = !strcmp(want, "tsc");
	if (!strcmp(want, "auto")) {
		char cs[32] = "";
		FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
		if (f) {
			if (!fgets(cs, sizeof cs, f))
				cs[0] = 0;
			fclose(f);
		}
		counter = !strcmp(cs, "tsc\n");
	} else if (!counter && strcmp(want, "monotonic")) {
		fprintf(stderr, "cping: RDMA_CLOCK=%s: want auto, tsc or monotonic\n", want);
		return 2;
	}
	if (!counter) {
		fprintf(stderr, "cping: clock monotonic\n");
		return 0;
	}
	double hz = rb_clock_use_counter(50000000); // 50 ms, as verbs' calibration
	if (hz == 0) {
		fprintf(stderr, "cping: RDMA_CLOCK=%s: the CPU counter is not a usable clock here\n", want);
		return 2;
	}
	fprintf(stderr, "cping: clock tsc %.3f MHz\n", hz / 1e6);
	return 0;
}

int main(int argc, char **argv) {
	const char *dev = NULL;
	int port = 1, gid_index = 1, size = 8, cpu_a = -1, cpu_b = -1, timeout_s = 10, signal_all = 0, op = OP_WRITE;
	long iters = 10000;
	int opt;
	while ((opt = getopt(argc, argv, "d:i:x:s:n:a:b:t:So:")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'i': port = (int)arg_long("-i", optarg, 1, 255); break;
		case 'x': gid_index = (int)arg_long("-x", optarg, 0, 255); break;
		case 's': size = (int)arg_long("-s", optarg, 1, SLOT); break;
		case 'n': iters = arg_long("-n", optarg, 1, 1000000000L); break;
		case 'a': cpu_a = (int)arg_long("-a", optarg, -1, CPU_SETSIZE - 1); break;
		case 'b': cpu_b = (int)arg_long("-b", optarg, -1, CPU_SETSIZE - 1); break;
		case 't': timeout_s = (int)arg_long("-t", optarg, 1, 3600); break;
		case 'S': signal_all = 1; break;
		case 'o':
			if (!strcmp(optarg, "write"))
				op = OP_WRITE;
			else if (!strcmp(optarg, "read"))
				op = OP_READ;
			else if (!strcmp(optarg, "fadd"))
				op = OP_FADD;
			else if (!strcmp(optarg, "cas"))
				op = OP_CAS;
			else if (!strcmp(optarg, "send"))
				op = OP_SEND;
			else {
				fprintf(stderr, "cping: -o %s: want write, read, fadd, cas or send\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: cping -d DEV [-i PORT] [-x GID_INDEX] [-s SIZE 1..%d] [-n ITERS] [-a CPU_A] [-b CPU_B] [-t TIMEOUT_S] [-S] [-o write|read|fadd|cas|send]\n", SLOT);
			return 2;
		}
	}
	if (!dev) {
		fprintf(stderr, "cping: -d DEV is required\n");
		return 2;
	}
#ifdef CPING_PT_ANY
	if (!signal_all) {
		fprintf(stderr, "cping: this build (-DCPING_PERFTEST_LOOP*) runs perftest's loop: -S is required\n");
		return 2;
	}
#endif
#if defined(CPING_TWO_PROCESSES) || defined(CPING_PT_ONE_SIDE)
	if (op != OP_WRITE) {
		fprintf(stderr, "cping: -o read|fadd|cas|send: this build runs one side with perftest's write loop or in a process of its own\n");
		return 2;
	}
#endif
#if defined(CPING_PERFTEST_QUEUES) || defined(CPING_PT_ANSWER_STAMP) || defined(CPING_PT_HIST_ADDS) || \
	defined(CPING_PT_OUR_POLL) || defined(CPING_PT_OUR_CLOCK)
	if (op == OP_SEND) {
		fprintf(stderr, "cping: -o send: this build has perftest's queues or our pieces in perftest's loop; "
				"-o send runs in the default and the -DCPING_PERFTEST_LOOP builds\n");
		return 2;
	}
#endif
	if ((op == OP_FADD || op == OP_CAS) && size != 8) {
		fprintf(stderr, "cping: -o %s -s %d: an atomic is 8 bytes\n", op == OP_FADD ? "fadd" : "cas", size);
		return 2;
	}
	if (signal_all && iters < 2) {
		fprintf(stderr, "cping: -S -n %ld: want at least 2 round trips (the cycle sample spans two posts)\n", iters);
		return 2;
	}
	if (use_clock())
		return 2;
#ifdef CPING_TWO_PROCESSES
	// Two processes, as perftest's client and server (an experiment of
	// issue #27): forked before any verbs call, each opening the device
	// on its own; pipes carry the published QPs, the stop and B's
	// outcome.
	int ab[2], ba[2]; // A → B, B → A
	if (pipe(ab) || pipe(ba))
		die("pipe", errno);
	pid_t child = fork();
	if (child < 0)
		die("fork", errno);
	const int is_a = child != 0, is_b = child == 0;
#else
	const int is_a = 1, is_b = 1;
#endif
	srand48(getpid() ^ (long)rb_clock_ns());
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx = NULL;
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), dev))
			ctx = ibv_open_device(list[i]);
	if (!ctx) {
		fprintf(stderr, "cping: device %s: not found or cannot be opened\n", dev);
		return 1;
	}
	struct ibv_port_attr pa;
	int rc = ibv_query_port(ctx, (uint8_t)port, &pa);
	if (rc) {
		fprintf(stderr, "cping: %s port %d: %s\n", dev, port, strerror(rc));
		return 1;
	}
	if (pa.state != IBV_PORT_ACTIVE) {
		fprintf(stderr, "cping: %s port %d is not ACTIVE (state %d)\n", dev, port, pa.state);
		return 1;
	}
	union ibv_gid gid;
	static const union ibv_gid zero;
	if ((rc = ibv_query_gid(ctx, (uint8_t)port, gid_index, &gid)) || !memcmp(&gid, &zero, sizeof gid)) {
		fprintf(stderr, "cping: %s port %d GID index %d: %s\n", dev, port, gid_index, rc ? strerror(rc) : "empty (all zero)");
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		die("ibv_alloc_pd", errno);
#ifdef CPING_GO_SETUP
	struct ibv_device_attr da;
	if ((rc = ibv_query_device(ctx, &da)))
		die("ibv_query_device", rc);
	rd_atomic = da.max_qp_rd_atom < da.max_qp_init_rd_atom ? da.max_qp_rd_atom : da.max_qp_init_rd_atom;
	if (rd_atomic < 1)
		rd_atomic = 1;
	if (rd_atomic > 255)
		rd_atomic = 255;
	if (op != OP_SEND) {
		recv_depth = 1;
		cq_depth = SEND_DEPTH + 1;
	}
	fprintf(stderr, "cping: Go setup: receive queue %d, CQ %d, max_rd_atomic %d, a page per side from mmap\n", recv_depth, cq_depth, rd_atomic);
#endif
	struct side a, b;
	struct pub pub_a, pub_b;
	if (is_a) {
		side_open(&a, ctx, pd);
		pub_a = publish(&a);
	}
	struct ibv_context *ctx_b = ctx;
	struct ibv_pd *pd_b = pd;
#ifdef CPING_TWO_CONTEXTS
	// Side B on a device context (and PD) of its own, as perftest's
	// server process has: an experiment of issue #43.
	if (!(ctx_b = ibv_open_device(ctx->device)) || !(pd_b = ibv_alloc_pd(ctx_b)))
		die("side B's context", errno);
#endif
	if (is_b) {
		side_open(&b, ctx_b, pd_b);
		pub_b = publish(&b);
	}
#ifdef CPING_TWO_PROCESSES
	if (is_a) {
		xwrite(ab[1], &pub_a, sizeof pub_a);
		xread(ba[0], &pub_b, sizeof pub_b);
	} else {
		xwrite(ba[1], &pub_b, sizeof pub_b);
		xread(ab[0], &pub_a, sizeof pub_a);
	}
#endif
	if (is_a)
		side_connect(&a, &pub_b, port, gid_index, &gid, pa.active_mtu);
	if (is_b)
		side_connect(&b, &pub_a, port, gid_index, &gid, pa.active_mtu);

	int64_t timeout_ns = (int64_t)timeout_s * 1000000000;
	static struct server sv;
	sv.cpu = cpu_b;
	rb_serve *s = &sv.s;
	if (is_b) {
		s->ctl.timeout_ns = timeout_ns;
		s->cq = b.cq;
		s->mode = RB_SERVE_WRITE_ECHO;
		s->qp = b.qp;
		write_wr(&s->wr, &s->sge, &b, &pub_a, size);
		s->send_depth = LOOP_DEPTH;
		s->in_last = b.buf + SLOT + size - 1;
		s->out_last = b.buf + size - 1;
		s->idle_ns = timeout_ns;
		s->signal_all = signal_all;
	}
#ifdef CPING_TWO_PROCESSES
	if (is_b) {
		// B: serve until A writes (or closes) its end of the pipe.
		stop_flag = &s->ctl.stop;
		pthread_t w;
		if ((rc = pthread_create(&w, NULL, stop_watch, &ab[0])))
			die("pthread_create", rc);
		serve_main(&sv);
		pthread_join(w, NULL);
		int out[2] = {sv.status, (int)sv.preempted};
		xwrite(ba[1], out, sizeof out);
		ibv_destroy_qp(b.qp);
		ibv_dereg_mr(b.mr);
		ibv_destroy_cq(b.cq);
		ibv_dealloc_pd(pd);
		ibv_close_device(ctx);
		ibv_free_device_list(list);
		return 0;
	}
#endif

	static rb_ping p;
	p.ctl.timeout_ns = timeout_ns;
	rb_hist_init(&p.hist, 1, (int64_t)100 * 1000000000, 3);
	rb_hist_init(&p.cycle, 1, (int64_t)100 * 1000000000, 3);
#ifdef CPING_PT_ANY
	static struct ibv_send_wr wa;
	static struct ibv_sge sa;
	write_wr(&wa, &sa, &a, &pub_b, size);
#endif
#if defined(CPING_PERFTEST_LOOP) || defined(CPING_PERFTEST_LOOP_A)
	// Side A runs perftest's loop and stamps its posts; side B is
	// perftest's loop posting first (both sides), or rdmabench's serve
	// loop, which waits for a change (A posts first then).
	uint64_t *stamps = calloc((size_t)iters, sizeof *stamps);
	if (!stamps)
		die("stamps", ENOMEM);
#ifdef CPING_PERFTEST_LOOP_A
	volatile int32_t *stop = &s->ctl.stop;
#else
	static volatile int32_t stop_both;
	volatile int32_t *stop = &stop_both;
#endif
	struct pt_side pa_ = {.qp = a.qp, .cq = a.cq, .rcq = a.rcq, .wr = &wa, .in = a.buf + SLOT + size - 1, .out = a.buf + size - 1,
			      .iters = iters, .cpu = cpu_a, .stamps = stamps, .stop = stop, .timeout_ns = timeout_ns};
#ifdef CPING_PERFTEST_LOOP_A
	pa_.passive = 1;
	void *(*side_b)(void *) = serve_main;
	void *arg_b = &sv;
#else
	struct pt_side pb_ = {.qp = b.qp, .cq = b.cq, .rcq = b.rcq, .wr = &s->wr, .in = s->in_last, .out = s->out_last,
			      .iters = iters, .passive = 1, .cpu = cpu_b, .stop = stop, .timeout_ns = timeout_ns};
	void *(*side_b)(void *) = pt_loop;
	void *arg_b = &pb_;
#endif
	uint64_t c0 = __rdtsc();
	int64_t n0 = rb_clock_ns();
	pthread_t pth;
	long p0 = 0, preempted = 0;
	void *(*side_a)(void *) = pt_loop;
#ifdef CPING_PERFTEST_LOOP
	static struct ibv_recv_wr rwa, rwb;
	static struct ibv_sge rsa, rsb;
	if (op == OP_SEND) {
		// perftest's SEND latency: both sides run run_iter_lat_send;
		// B echoes from where A's message landed, as rdmabench's serve.
		pt_send_setup(&a, &wa, &rwa, &rsa, size);
		pt_send_setup(&b, &s->wr, &rwb, &rsb, size);
		s->sge.addr += SLOT;
		pa_.rwr = &rwa;
		pb_.rwr = &rwb;
		side_a = side_b = pt_send;
	} else if (op != OP_WRITE) {
		// perftest's READ and atomic latency: side A alone.
		round_wr(&wa, &sa, &a, &pub_b, size, op);
#ifdef CPING_PT_HIST_ADDS
		static rb_hist scratch; // a histogram like ours, not printed
		rb_hist_init(&scratch, 1, (int64_t)100 * 1000000000, 3);
		pa_.hist = &scratch;
#endif
		p0 = preemptions();
		pt_round(&pa_);
		preempted = preemptions() - p0;
#ifdef CPING_PT_HIST_ADDS
		free(scratch.counts);
#endif
		goto converted;
	}
#endif
	if ((rc = pthread_create(&pth, NULL, side_b, arg_b)))
		die("pthread_create", rc);
	p0 = preemptions();
	side_a(&pa_);
	preempted = preemptions() - p0; // the requester's only: the loop pins the calling thread
#ifdef CPING_PERFTEST_LOOP_A
	*stop = 1; // side B's end: rdmabench's serve loop runs until stopped
#endif
	pthread_join(pth, NULL);
#ifdef CPING_PERFTEST_LOOP
converted:
#endif
	;
	double per_ns = (double)(__rdtsc() - c0) / (double)(rb_clock_ns() - n0);
#ifdef CPING_PT_OUR_CLOCK
	if (op != OP_WRITE) { // pt_round's stamps are ns already
		per_ns = 1;
		c0 = (uint64_t)n0;
	}
#endif
#ifdef CPING_PERFTEST_LOOP_A
	if (pa_.status || (sv.status != RB_OK && sv.status != RB_STOPPED)) {
		fprintf(stderr, "cping: side A's perftest-shaped loop: %d " PT_STATUSES "; side B's serve loop: status %d\n",
			pa_.status, sv.status);
		return 1;
	}
#else
	if (pa_.status || pb_.status) {
		fprintf(stderr, "cping: perftest-shaped loop failed: requester %d, passive side %d " PT_STATUSES "\n",
			pa_.status, pb_.status);
		return 1;
	}
#endif
	// The samples as perftest's: tposted[i+1] − tposted[i], halved for
	// the WRITE and SEND ping-pongs (READ and atomics: the whole round trip).
	const double halve = op == OP_WRITE || op == OP_SEND ? 2 : 1;
	for (long i = 0; i + 1 < iters; i++) {
		int64_t ns = (int64_t)((double)(stamps[i + 1] - stamps[i]) / per_ns / halve);
		rb_hist_add(&p.cycle, ns);
	}
	p.ctl.t_first = n0;
	p.ctl.t_last = n0 + (int64_t)((double)(stamps[iters - 1] - c0) / per_ns);
	free(stamps);
	int st = RB_OK;
#ifndef CPING_PERFTEST_LOOP_A
	sv.status = RB_OK;
#endif
	const int64_t own_samples = 0; // this build has no post → answer sample
#else
	const int64_t own_samples = iters;
	p.cq = a.cq;
	p.qp = a.qp;
	write_wr(&p.wr, &p.sge, &a, &pub_b, size);
	p.mode = RB_PING_WRITE;
	p.halve = 1;
	p.send_depth = LOOP_DEPTH;
	p.in_last = a.buf + SLOT + size - 1;
	p.out_last = a.buf + size - 1;
	p.iters = iters;
	p.warmup = signal_all ? 0 : 1; // one untimed round trip, as WriteLat's Warm(1); none like perftest with -S
	p.signal_all = signal_all;

#ifdef CPING_TWO_PROCESSES
	pin(cpu_a);
	long p0 = preemptions();
	int st = rb_run_ping(&p);
	long preempted = preemptions() - p0;
	xwrite(ab[1], "x", 1); // B's stop
	int out[2];
	xread(ba[0], out, sizeof out);
	sv.status = out[0];
	sv.preempted = out[1];
	int wst;
	if (waitpid(child, &wst, 0) != child || !WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
		fprintf(stderr, "cping: side B's process failed (wait status %#x)\n", wst);
		return 1;
	}
#elif defined(CPING_PERFTEST_LOOP_B)
	// Side B answers with perftest's loop (waiting first, as A posts
	// first), iters times; it stops early on A's stop flag.
	struct pt_side pb_ = {.qp = b.qp, .cq = b.cq, .wr = &s->wr, .in = s->in_last, .out = s->out_last,
			      .iters = iters, .cpu = cpu_b, .stop = &p.ctl.stop, .timeout_ns = timeout_ns};
	pthread_t th;
	if ((rc = pthread_create(&th, NULL, pt_loop, &pb_)))
		die("pthread_create", rc);
	pin(cpu_a);
	long p0 = preemptions();
	int st = rb_run_ping(&p);
	long preempted = preemptions() - p0;
	if (st != RB_OK)
		p.ctl.stop = 1;
	pthread_join(th, NULL);
	sv.status = RB_OK;
	if (pb_.status) {
		fprintf(stderr, "cping: side B's perftest-shaped loop failed: %d " PT_STATUSES "\n", pb_.status);
		return 1;
	}
#else
	static rb_rq rq_a, rq_b;
	if (op == OP_SEND) {
		// SendLat's RC ping-pong: SEND, answered by a SEND of the bytes
		// received; each side's receives posted before either loop runs.
		p.wr.opcode = IBV_WR_SEND;
		p.mode = RB_PING_RECV;
		p.rq = &rq_a;
		rb_rq_init(&rq_a, a.qp, NULL, (uintptr_t)(a.buf + SLOT), (uint32_t)size, a.mr->lkey, 0);
		s->wr.opcode = IBV_WR_SEND;
		s->sge.addr += SLOT; // the echo: from where the request landed
		s->mode = RB_SERVE_RECV_ECHO;
		s->rq = &rq_b;
		s->nrq = 1;
		s->imm_cap = RECV_DEPTH;
		if (!(s->imms = calloc(RECV_DEPTH, sizeof *s->imms)))
			die("immediates", ENOMEM);
		rb_rq_init(&rq_b, b.qp, NULL, (uintptr_t)(b.buf + SLOT), (uint32_t)size, b.mr->lkey, 0);
		if (rb_rq_fill(&p.ctl, &rq_a, RECV_DEPTH) || rb_rq_fill(&s->ctl, &rq_b, RECV_DEPTH))
			die("ibv_post_recv", p.ctl.err ? p.ctl.err : s->ctl.err);
	} else if (op != OP_WRITE) {
		// ReadLat's and AtomicLat's round trip: side A alone.
		round_wr(&p.wr, &p.sge, &a, &pub_b, size, op);
		p.mode = RB_PING_ROUND;
		p.halve = 0;
		if (op == OP_FADD || op == OP_CAS) {
			p.atomic = op == OP_FADD ? RB_ATOMIC_FADD : RB_ATOMIC_CSWAP;
			p.result = (volatile uint64_t *)(a.buf + SLOT);
		}
	}
	const int two_loops = op == OP_WRITE || op == OP_SEND;
	pthread_t th;
	if (two_loops && (rc = pthread_create(&th, NULL, serve_main, &sv)))
		die("pthread_create", rc);
	pin(cpu_a);
	long p0 = preemptions();
	int st = rb_run_ping(&p);
	long preempted = preemptions() - p0;
	s->ctl.stop = 1;
	if (two_loops)
		pthread_join(th, NULL);
	else
		sv.status = RB_OK;
#endif
#endif
	// The serve loop ends stopped (the flag) unless it failed first.
	if (sv.status != RB_OK && sv.status != RB_STOPPED) {
		fprintf(stderr, "cping: serve loop ended with status %d (waiting %d, err %d)\n", sv.status, s->ctl.waiting, s->ctl.err);
		return 1;
	}
	if (st != RB_OK) {
		fprintf(stderr, "cping: ping loop ended with status %d (waiting %d, err %d)\n", st, p.ctl.waiting, p.ctl.err);
		return 1;
	}
	if (p.hist.total != own_samples || p.cycle.total != iters - 1) {
		fprintf(stderr, "cping: %lld samples and %lld cycle samples for %ld round trips\n", (long long)p.hist.total,
			(long long)p.cycle.total, iters);
		return 1;
	}
	print_counts("cping-counts", &p.hist);
	print_counts("cping-cycle-counts", &p.cycle);
	printf("cping-elapsed-ns %lld\n", (long long)(p.ctl.t_last - p.ctl.t_first));
	printf("cping-preempted %ld\n", preempted + sv.preempted);
	// Where a few values land with this geometry, for calibrate to check
	// against hdrhistogram-go (the geometry above is a port of its New).
	static const int64_t probes[] = {1, 999, 2047, 2048, 4095, 123456, 9876543, 99999999999LL};
	rb_hist probe;
	rb_hist_init(&probe, 1, (int64_t)100 * 1000000000, 3);
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
		int64_t before = probe.total;
		rb_hist_add(&probe, probes[i]);
		for (int64_t k = 0; k < probe.len && probe.total > before; k++)
			if (probe.counts[k]) {
				printf("cping-probe %lld %lld\n", (long long)probes[i], (long long)k);
				probe.counts[k] = 0;
				break;
			}
	}
	free(probe.counts);
	ibv_destroy_qp(a.qp);
	ibv_dereg_mr(a.mr);
	ibv_destroy_cq(a.cq);
	if (a.rcq)
		ibv_destroy_cq(a.rcq);
	if (is_b && is_a) { // one process: B's side too
		ibv_destroy_qp(b.qp);
		ibv_dereg_mr(b.mr);
		ibv_destroy_cq(b.cq);
		if (b.rcq)
			ibv_destroy_cq(b.rcq);
	}
	free(s->imms);
	if (pd_b != pd) {
		ibv_dealloc_pd(pd_b);
		ibv_close_device(ctx_b);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
