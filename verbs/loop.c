//go:build linux && cgo

// loop.c: rdmabench's timed loops. See loop.h for the structures and the
// package documentation (loop.go) for what each loop times.
#include "loop.h"

#include <errno.h>
#include <poll.h>
#include <time.h>

// How many empty polls or spins between two reads of the clock for a
// deadline: reading CLOCK_MONOTONIC costs more than a poll.
#define RB_CLOCK_EVERY 1024
// Completions taken per poll.
#define RB_POLL_BATCH 32
// Stream work request IDs: QP index in bits 40..62, the QP's sequence
// number below, bit 63 for the completion marker.
#define RB_SEQ_BITS 40
#define RB_SEQ_MASK ((UINT64_C(1) << RB_SEQ_BITS) - 1)
#define RB_MARKER (UINT64_C(1) << 63)
// Compare-and-swap streams move a counter through k·RB_CSWAP_STEP
// (verbs.CmpSwapStep).
#define RB_CSWAP_STEP UINT64_C(0x9E3779B97F4A7C15)
// RB_HOT marks what the timed loops call on every turn or round trip
// (the clock, the histogram, a poll, filing completions): inlined into
// them in this file. Under qemu TCG these calls and returns showed in
// the READ and atomic round trips, about 1 point of their latency
// (issue #43, docs/notes/perf-2026-12-07-hot-loop.md); on a CPU they cost
// little either way. rb_clock_ns and rb_hist_add stay callable from
// outside.
#define RB_HOT inline __attribute__((always_inline))

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

// The loops' clock (clock.go): CLOCK_MONOTONIC, or the CPU's counter
// (rdtsc on x86-64, cntvct_el0 on arm64) turned into ns by a frequency
// calibrated against CLOCK_MONOTONIC_RAW: ns = base_ns + (ticks −
// base_ticks)·mult / 2^32.
enum {
	RB_CLOCK_MONOTONIC = 0,
	RB_CLOCK_COUNTER = 1,
};
typedef struct {
	int32_t kind, pad;
	uint64_t mult;       // ns per tick, 32.32 fixed point
	uint64_t base_ticks; // the counter at base_ns
	int64_t base_ns;     // CLOCK_MONOTONIC at base_ticks
} rb_clock;

static rb_clock rb_clk; // RB_CLOCK_MONOTONIC until rb_clock_use_counter

static int64_t rb_clock_gettime(clockid_t id) {
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// rb_clock_has_counter tells whether this build can read the CPU's
// counter (x86-64, arm64).
static int rb_clock_has_counter(void) {
#if defined(__x86_64__) || defined(__aarch64__)
	return 1;
#else
	return 0;
#endif
}

// rb_clock_ticks reads the CPU's counter, unserialized as perftest's
// get_cycles: rdtsc, or cntvct_el0 (0 where there is none).
static inline uint64_t rb_clock_ticks(void) {
#if defined(__x86_64__)
	return __rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

// rb_clock_ns is the loops' one clock read: the counter and a multiply,
// or clock_gettime.
RB_HOT int64_t rb_clock_ns(void) {
	if (rb_clk.kind == RB_CLOCK_COUNTER) {
		int64_t d = (int64_t)(rb_clock_ticks() - rb_clk.base_ticks);
		return rb_clk.base_ns + (int64_t)(((__int128)d * (__int128)rb_clk.mult) >> 32);
	}
	return rb_clock_gettime(CLOCK_MONOTONIC);
}

void rb_clock_read_pair(rb_clock_pair *p) {
	p->width_ns = INT64_MAX;
	for (int i = 0; i < 7; i++) {
		int64_t r0 = rb_clock_gettime(CLOCK_MONOTONIC_RAW);
		uint64_t t = rb_clock_ticks();
		int64_t r1 = rb_clock_gettime(CLOCK_MONOTONIC_RAW);
		if (r1 - r0 < p->width_ns) {
			p->ticks = t;
			p->raw_ns = r0 + (r1 - r0) / 2;
			p->width_ns = r1 - r0;
		}
	}
}

// rb_clock_spin_until_raw busy-waits (a calibration's span: sleeping
// could let the CPU change its state) until CLOCK_MONOTONIC_RAW passes
// raw_ns.
static void rb_clock_spin_until_raw(int64_t raw_ns) {
	while (rb_clock_gettime(CLOCK_MONOTONIC_RAW) < raw_ns)
		;
}

// rb_clock_use_monotonic makes the loops read CLOCK_MONOTONIC (and
// returns 0: cgo's prologue of a void(void) function trips -Wextra).
int rb_clock_use_monotonic(void) {
	rb_clk.kind = RB_CLOCK_MONOTONIC;
	return 0;
}

// rb_clock_use_counter calibrates the counter against
// CLOCK_MONOTONIC_RAW over a busy wait of span_ns and makes the loops
// read it; it returns the ticks per second, or 0 (the clock unchanged)
// where there is no counter or its rate is not a clock's (below 1 MHz,
// above 100 GHz).
double rb_clock_use_counter(int64_t span_ns) {
	if (!rb_clock_has_counter())
		return 0;
	rb_clock_pair a, b;
	rb_clock_read_pair(&a);
	rb_clock_spin_until_raw(a.raw_ns + span_ns);
	rb_clock_read_pair(&b);
	double ns = (double)(b.raw_ns - a.raw_ns);
	double hz = ns > 0 ? (double)(b.ticks - a.ticks) / ns * 1e9 : 0;
	if (hz < 1e6 || hz > 1e11)
		return 0;
	rb_clk.mult = (uint64_t)(1e9 / hz * 4294967296.0 + 0.5);
	rb_clk.base_ticks = rb_clock_ticks();
	rb_clk.base_ns = rb_clock_gettime(CLOCK_MONOTONIC);
	rb_clk.kind = RB_CLOCK_COUNTER;
	return hz;
}

// rb_hist_add records v with hdrhistogram-go's bucket arithmetic
// (getBucketIndex, getSubBucketIdx, countsIndex).
RB_HOT void rb_hist_add(rb_hist *h, int64_t v) {
	if (v < h->lowest)
		v = h->lowest;
	if (v > h->highest) {
		h->overflow++;
		v = h->highest;
	}
	int64_t pow2ceil = 64 - __builtin_clzll((uint64_t)(v | h->sub_bucket_mask));
	int64_t bucket = pow2ceil - h->unit_magnitude - (h->half_count_magnitude + 1);
	int64_t sub = v >> (bucket + h->unit_magnitude);
	int64_t idx = ((bucket + 1) << h->half_count_magnitude) + sub - h->half_count;
	if (idx < 0 || idx >= h->len) { // cannot happen for a clamped value
		h->overflow++;
		return;
	}
	h->counts[idx]++;
	h->total++;
}

static int rb_fail(rb_ctl *c, int status) {
	c->status = status;
	return status;
}

static void rb_set_bad(rb_ctl *c, const struct ibv_wc *wc) {
	c->bad.id = wc->wr_id;
	c->bad.status = wc->status;
	c->bad.opcode = wc->opcode;
	c->bad.byte_len = wc->byte_len;
	c->bad.flags = wc->wc_flags;
	c->bad.qpn = wc->qp_num;
	c->bad.src_qp = wc->src_qp;
	c->bad.vendor_err = wc->vendor_err;
	c->bad.imm = (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;
}

static int rb_stalled(rb_ctl *c, int what, int64_t outstanding) {
	c->waiting = what;
	c->outstanding = outstanding;
	return rb_fail(c, RB_STALLED);
}

// rb_poll_cq polls up to n completions; a failed one ends the loop. Returns
// the count, or -1 with the status set.
static RB_HOT int rb_poll_cq(rb_ctl *c, struct ibv_cq *cq, struct ibv_wc *wc, int n) {
	int got = ibv_poll_cq(cq, n, wc);
	if (got < 0) {
		rb_fail(c, RB_POLL);
		return -1;
	}
	for (int i = 0; i < got; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			rb_set_bad(c, &wc[i]);
			rb_fail(c, RB_WC);
			return -1;
		}
	}
	return got;
}

// rb_wait_cq_for returns at least one completion, waiting at most limit
// ns from since (busy polling, or on the completion channel ch when set);
// the stop flag ends the wait too. since 0 is stamped at the first
// deadline check instead (RB_CLOCK_EVERY polls in: no clock read when the
// completion is there sooner). Returns the count, or -1 with the status
// set (what and outstanding describe the wait for a stall).
static int rb_wait_cq_for(rb_ctl *c, struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc, int n,
			  int64_t since, int64_t limit, int what, int64_t outstanding) {
	for (unsigned spins = 1;; spins++) {
		int got = rb_poll_cq(c, cq, wc, n);
		if (got != 0)
			return got;
		if (c->stop) {
			rb_fail(c, RB_STOPPED);
			return -1;
		}
		if (ch) {
			if (ibv_req_notify_cq(cq, 0) != 0) {
				c->err = errno;
				rb_fail(c, RB_EVENT);
				return -1;
			}
			if ((got = rb_poll_cq(c, cq, wc, n)) != 0)
				return got;
			int64_t now = rb_clock_ns();
			if (since == 0)
				since = now;
			int64_t left = since + limit - now;
			if (left <= 0) {
				rb_stalled(c, what, outstanding);
				return -1;
			}
			struct pollfd pfd = {.fd = ch->fd, .events = POLLIN};
			int64_t ms = left / 1000000 + 1; // at most 100 ms a poll: the stop flag is seen
			if (poll(&pfd, 1, ms > 100 ? 100 : (int)ms) > 0) {
				struct ibv_cq *ecq;
				void *ctx;
				if (ibv_get_cq_event(ch, &ecq, &ctx) == 0)
					ibv_ack_cq_events(ecq, 1);
			}
			continue;
		}
		if (spins % RB_CLOCK_EVERY == 0) {
			int64_t now = rb_clock_ns();
			if (since == 0)
				since = now;
			else if (now - since > limit) {
				rb_stalled(c, what, outstanding);
				return -1;
			}
		}
	}
}

// rb_wait_cq is rb_wait_cq_for with the loop's own deadline.
static int rb_wait_cq(rb_ctl *c, struct ibv_cq *cq, struct ibv_comp_channel *ch, struct ibv_wc *wc, int n,
		      int64_t since, int what, int64_t outstanding) {
	return rb_wait_cq_for(c, cq, ch, wc, n, since, c->timeout_ns, what, outstanding);
}

// rb_rq_post posts the first k WRs of r as one chain.
static int rb_rq_post(rb_ctl *c, rb_rq *r, int k) {
	struct ibv_recv_wr *bad = NULL;
	r->wr[k - 1].next = NULL;
	int rc = r->srq ? ibv_post_srq_recv(r->srq, &r->wr[0], &bad) : ibv_post_recv(r->qp, &r->wr[0], &bad);
	if (k < RB_RBATCH)
		r->wr[k - 1].next = &r->wr[k];
	if (rc != 0) {
		c->err = rc < 0 ? -rc : rc;
		c->err_index = bad ? (int)(bad - r->wr) : 0;
		return rb_fail(c, RB_POST_RECV);
	}
	return 0;
}

// rb_rq_init points r at qp (or srq) with every receive landing in one SGE
// and carrying id as its wr_id.
void rb_rq_init(rb_rq *r, struct ibv_qp *qp, struct ibv_srq *srq, uint64_t addr, uint32_t length, uint32_t lkey, uint64_t id) {
	memset(r, 0, sizeof(*r));
	r->qp = srq ? NULL : qp;
	r->srq = srq;
	r->sge.addr = addr;
	r->sge.length = length;
	r->sge.lkey = lkey;
	for (int i = 0; i < RB_RBATCH; i++)
		r->wr[i].wr_id = id;
}

// rb_rq_fill chains r's WRs and posts n receives.
int rb_rq_fill(rb_ctl *c, rb_rq *r, int n) {
	for (int i = 0; i < RB_RBATCH; i++) {
		r->wr[i].sg_list = &r->sge;
		r->wr[i].num_sge = r->sge.length ? 1 : 0;
		r->wr[i].next = i + 1 < RB_RBATCH ? &r->wr[i + 1] : NULL;
	}
	r->pending = 0;
	while (n > 0) {
		int k = n < RB_RBATCH ? n : RB_RBATCH;
		if (rb_rq_post(c, r, k) != 0)
			return c->status;
		n -= k;
	}
	return 0;
}

static int rb_rq_flush(rb_ctl *c, rb_rq *r) {
	int k = r->pending;
	if (k == 0)
		return 0;
	r->pending = 0;
	return rb_rq_post(c, r, k);
}

static inline int rb_rq_consumed(rb_ctl *c, rb_rq *r) {
	if (++r->pending == RB_RBATCH)
		return rb_rq_flush(c, r);
	return 0;
}

static int rb_post(rb_ctl *c, struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr *first) {
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, wr, &bad);
	if (rc != 0) {
		c->err = rc < 0 ? -rc : rc;
		c->err_index = bad ? (int)(bad - first) : 0;
		return rb_fail(c, RB_POST_SEND);
	}
	return 0;
}

// rb_take takes the send completions in wc (IDs are send sequence
// numbers) into *covered and hands receive completions to rq (or fails on
// them without one). Returns the receives seen, or -1.
static RB_HOT int rb_take(rb_ctl *c, struct ibv_wc *wc, int got, uint64_t *covered, rb_rq *rq, int nrq) {
	int recvs = 0;
	for (int i = 0; i < got; i++) {
		if (wc[i].opcode & IBV_WC_RECV) {
			if (rq == NULL || wc[i].wr_id >= (uint64_t)nrq) {
				rb_set_bad(c, &wc[i]);
				rb_fail(c, RB_UNEXPECTED);
				return -1;
			}
			if (rb_rq_consumed(c, &rq[wc[i].wr_id]) != 0)
				return -1;
			recvs++;
		} else {
			*covered = wc[i].wr_id + 1;
		}
	}
	return recvs;
}

// rb_run_ping: see rdmatest's package documentation for what a sample is.
int rb_run_ping(rb_ping *p) {
	rb_ctl *c = &p->ctl;
	struct ibv_wc wc[RB_POLL_BATCH];
	int half = p->send_depth / 2 > 0 ? p->send_depth / 2 : 1;
	// p->posted, p->covered (the send queue's accounting) and p->v (the
	// WRITE ping's last value) carry over from Warm to Run.
	int what = p->mode == RB_PING_WRITE ? RB_WAIT_ECHO_BYTE : p->mode == RB_PING_RECV ? RB_WAIT_ANSWER : RB_WAIT_COMPLETION;

	if (p->mode == RB_PING_ROUND)
		p->wr.send_flags |= IBV_SEND_SIGNALED; // each round trip waits for its own completion
	if (p->atomic != RB_ATOMIC_NONE && !p->have_base) {
		// Read the counter with an operation that leaves it as it is
		// (add 0; compare-and-swap 0 for 0), untimed: the start value.
		p->wr.wr.atomic.compare_add = 0;
		p->wr.wr.atomic.swap = 0;
		p->wr.send_flags |= IBV_SEND_SIGNALED;
		p->wr.wr_id = p->posted++;
		if (rb_post(c, p->qp, &p->wr, &p->wr) != 0)
			return c->status;
		if (rb_wait_cq(c, p->cq, p->ch, wc, 1, rb_clock_ns(), what, 1) < 0)
			return c->status;
		p->covered = p->posted;
		p->base = *p->result;
		p->have_base = 1;
		if (p->atomic == RB_ATOMIC_FADD)
			p->wr.wr.atomic.compare_add = 1;
	}
	uint64_t base = p->base + p->done_before;
	int64_t t_prev = 0; // the previous iteration's post (the cycle sample's start)
	// An iteration's samples are added to the histograms after the next
	// post, while that message is in flight, not between seeing an
	// answer and the next post (where perftest does nothing but stamp
	// its clock); -1: none pending.
	int64_t pend = -1, pend_cycle = -1;
	for (int64_t i = -p->warmup; i < p->iters; i++) {
		uint64_t k = (uint64_t)(i + p->warmup); // operations of this run before this one
		if (c->stop)
			return rb_fail(c, RB_STOPPED);
		if (p->mode != RB_PING_ROUND) {
			// Room in the send queue: sends are signaled once every
			// half depth, so this waits only when a whole half is
			// unacknowledged.
			while (p->posted - p->covered >= (uint64_t)p->send_depth - 1) {
				int got = rb_wait_cq(c, p->cq, p->ch, wc, RB_POLL_BATCH, 0, RB_WAIT_SEND,
						     (int64_t)(p->posted - p->covered));
				if (got < 0 || rb_take(c, wc, got, &p->covered, p->rq, 1) < 0)
					return c->status;
			}
			if (p->signal_all || (p->posted + 1) % half == 0)
				p->wr.send_flags |= IBV_SEND_SIGNALED;
			else
				p->wr.send_flags &= ~IBV_SEND_SIGNALED;
		}
		if (p->atomic == RB_ATOMIC_CSWAP) {
			p->wr.wr.atomic.compare_add = base + k;
			p->wr.wr.atomic.swap = base + k + 1;
		}
		if (p->mode == RB_PING_WRITE) {
			p->v = p->v % 255 + 1; // 1..255: never the initial 0
			*p->out_last = p->v;
		}
		p->wr.wr_id = p->posted;
		int64_t t0 = rb_clock_ns();
		if (rb_post(c, p->qp, &p->wr, &p->wr) != 0)
			return c->status;
		p->posted++;
		if (i == 0)
			c->t_first = t0;
		if (pend >= 0) {
			rb_hist_add(&p->hist, pend);
			pend = -1;
		}
		if (pend_cycle >= 0) {
			rb_hist_add(&p->cycle, pend_cycle);
			pend_cycle = -1;
		}
		int64_t t1 = 0; // the answer seen
		switch (p->mode) {
		case RB_PING_WRITE:
			// perftest's order (signal_all): its own completion first,
			// while the answer is on its way, then the answer.
			while (p->signal_all && p->covered < p->posted) {
				int got = rb_wait_cq(c, p->cq, p->ch, wc, RB_POLL_BATCH, 0, RB_WAIT_SEND,
						     (int64_t)(p->posted - p->covered));
				if (got < 0 || rb_take(c, wc, got, &p->covered, p->rq, 1) < 0)
					return c->status;
			}
			for (unsigned spins = 1; *p->in_last != p->v; spins++) {
				if (c->stop)
					return rb_fail(c, RB_STOPPED);
				if (spins % RB_CLOCK_EVERY == 0 && rb_clock_ns() - t0 > c->timeout_ns)
					return rb_stalled(c, what, (int64_t)(p->posted - p->covered));
			}
			break;
		case RB_PING_RECV:
			// With signal_all, the WR's own completion too, whichever
			// comes first (one CQ): perftest polls it right after the
			// post, before it waits for the answer.
			for (int answered = 0; !answered || (p->signal_all && p->covered < p->posted);) {
				int got = answered ? rb_wait_cq(c, p->cq, p->ch, wc, RB_POLL_BATCH, 0, RB_WAIT_SEND,
								(int64_t)(p->posted - p->covered))
						   : rb_wait_cq(c, p->cq, p->ch, wc, RB_POLL_BATCH, t0, what,
								(int64_t)(p->posted - p->covered));
				int recvs = got < 0 ? -1 : rb_take(c, wc, got, &p->covered, p->rq, 1);
				if (recvs < 0)
					return c->status;
				if (!answered && recvs > 0) {
					answered = 1;
					t1 = rb_clock_ns();
				}
			}
			break;
		default:
			while (p->covered < p->posted) {
				int got = rb_wait_cq(c, p->cq, p->ch, wc, RB_POLL_BATCH, t0, what, (int64_t)(p->posted - p->covered));
				if (got < 0 || rb_take(c, wc, got, &p->covered, NULL, 0) < 0)
					return c->status;
			}
		}
		if (t1 == 0)
			t1 = rb_clock_ns();
		p->done_before++;
		if (i >= 0) {
			pend = p->halve ? (t1 - t0) / 2 : t1 - t0;
			// perftest's sample: from the previous post to this one,
			// the whole previous iteration (iters - 1 of them a run).
			if (i >= 1)
				pend_cycle = p->halve ? (t0 - t_prev) / 2 : t0 - t_prev;
			c->ops++;
			c->t_last = t1;
		}
		t_prev = t0;
		// With signal_all (perftest's latency work: tx_depth 1, so
		// cq_mod 1) this WR's own completion was awaited above, in
		// perftest's order: right after the post, before the answer.
		// Reposting receives is kept out of our samples: it is done
		// here, between two round trips, once half a batch is consumed
		// (every message with signal_all, as perftest does), so the
		// in-sample flush of rb_rq_consumed (a full batch) never fires
		// while one answer arrives per round trip.
		if (p->rq != NULL && p->rq->pending >= (p->signal_all ? 1 : RB_RBATCH / 2) && rb_rq_flush(c, p->rq) != 0)
			return c->status;
		if (p->atomic != RB_ATOMIC_NONE && *p->result != base + k) {
			c->want = base + k;
			c->got = *p->result;
			c->at = k;
			return rb_fail(c, RB_CHECK);
		}
		if (p->gap_ns > 0)
			for (int64_t until = t1 + p->gap_ns; rb_clock_ns() < until;)
				if (c->stop)
					return rb_fail(c, RB_STOPPED);
	}
	if (pend >= 0)
		rb_hist_add(&p->hist, pend);
	if (pend_cycle >= 0)
		rb_hist_add(&p->cycle, pend_cycle);
	return RB_OK;
}

// rb_idle tells whether a passive loop has waited longer than its limit;
// it reads the clock once every RB_CLOCK_EVERY empty turns.
static int rb_idle(rb_serve *s, unsigned *turns, int64_t *since) {
	if (s->idle_ns <= 0 || ++*turns % RB_CLOCK_EVERY != 0)
		return 0;
	int64_t now = rb_clock_ns();
	if (*since == 0)
		*since = now;
	return now - *since > s->idle_ns;
}

// rb_serve_recv files one receive completion of a passive loop: it must
// come from one of the loop's receive queues (wr_id: the queue, when
// there are several) and, where answers are owed, fit in the queue of
// immediates still to answer. Anything else (a receive where the loop
// posted none, as in the WRITE modes) ends the loop as unexpected.
// Returns 0, or -1 with the status set.
static int rb_serve_recv(rb_serve *s, struct ibv_wc *wc) {
	rb_ctl *c = &s->ctl;
	uint64_t q = s->nrq == 1 ? 0 : wc->wr_id;
	int echo = s->mode == RB_SERVE_RECV_ECHO;
	if (q >= (uint64_t)s->nrq || (echo && c->recvs - c->ops >= s->imm_cap)) {
		rb_set_bad(c, wc);
		return rb_fail(c, RB_UNEXPECTED), -1;
	}
	if (rb_rq_consumed(c, &s->rq[q]) != 0)
		return -1;
	if (echo)
		s->imms[c->recvs % s->imm_cap] = (wc->wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc->imm_data) : 0;
	c->recvs++;
	return 0;
}

// rb_serve_answer posts one answer, after waiting for room; receives that
// arrive meanwhile join the queue of immediates (n of them, from head).
// rb_serve_take files the completions of a passive loop's CQ: receives
// (answered later, by the loop's next turn) and its own sends (covered).
static int rb_serve_take(rb_serve *s, uint64_t *covered, struct ibv_wc *wc, int got) {
	for (int i = 0; i < got; i++) {
		if (wc[i].opcode & IBV_WC_RECV) {
			if (rb_serve_recv(s, &wc[i]) != 0)
				return -1;
		} else {
			*covered = wc[i].wr_id + 1;
		}
	}
	return 0;
}

static int rb_serve_answer(rb_serve *s, uint64_t *posted, uint64_t *covered, struct ibv_wc *wc) {
	rb_ctl *c = &s->ctl;
	int half = s->send_depth / 2 > 0 ? s->send_depth / 2 : 1;
	while (*posted - *covered >= (uint64_t)s->send_depth - 1) {
		int got = rb_wait_cq(c, s->cq, NULL, wc, RB_POLL_BATCH, 0, RB_WAIT_SEND, (int64_t)(*posted - *covered));
		if (got < 0 || rb_serve_take(s, covered, wc, got) != 0)
			return -1;
	}
	if (s->signal_all || (*posted + 1) % half == 0)
		s->wr.send_flags |= IBV_SEND_SIGNALED;
	else
		s->wr.send_flags &= ~IBV_SEND_SIGNALED;
	s->wr.wr_id = *posted;
	if (rb_post(c, s->qp, &s->wr, &s->wr) != 0)
		return -1;
	(*posted)++;
	if (s->signal_all) {
		// perftest's work: this answer's completion is awaited before
		// the next request is looked at.
		while (*covered < *posted) {
			int got = rb_wait_cq(c, s->cq, NULL, wc, RB_POLL_BATCH, 0, RB_WAIT_SEND, (int64_t)(*posted - *covered));
			if (got < 0 || rb_serve_take(s, covered, wc, got) != 0)
				return -1;
		}
		return 0;
	}
	// The WRITE modes poll their CQ only here: once half the send queue
	// is unacknowledged, after the answer is out (while the requester
	// waits for it), so that the wait above, inside a round trip, does
	// not come to poll. (The receive modes' loop polls on every turn.)
	if (s->mode != RB_SERVE_RECV_ECHO && *posted - *covered >= (uint64_t)half) {
		int got = rb_poll_cq(c, s->cq, wc, RB_POLL_BATCH);
		if (got < 0 || rb_serve_take(s, covered, wc, got) != 0)
			return -1;
	}
	return 0;
}

// rb_run_serve runs the passive side until the stop flag is set.
int rb_run_serve(rb_serve *s) {
	rb_ctl *c = &s->ctl;
	struct ibv_wc wc[RB_POLL_BATCH];
	uint64_t posted = 0, covered = 0;
	uint8_t seen = 0;
	unsigned turns = 0;
	int64_t since = 0;
	while (!c->stop) {
		if (s->mode == RB_SERVE_WRITE_ECHO) {
			uint8_t v = *s->in_last;
			if (v == seen) {
				if (rb_idle(s, &turns, &since))
					return rb_fail(c, RB_IDLE);
				continue;
			}
			seen = v;
			since = 0;
			*s->out_last = v;
			if (rb_serve_answer(s, &posted, &covered, wc) != 0)
				return c->status;
			c->ops++;
			continue;
		}
		if (s->mode == RB_SERVE_WRITE_RPC) {
			// HERD's server: sweep the request slots' last bytes.
			int seen = 0;
			for (int k = 0; k < s->window; k++) {
				size_t off = (size_t)k * (size_t)s->stride;
				uint8_t gen = s->req[off + s->size - 1];
				if (gen == 0)
					continue;
				memcpy(s->resp + off, (const uint8_t *)s->req + off, s->size);
				s->req[off + s->size - 1] = 0;
				s->sge.addr = s->resp_addr + off;
				s->wr.imm_data = htonl((uint32_t)k | (uint32_t)gen << 16);
				if (rb_serve_answer(s, &posted, &covered, wc) != 0)
					return c->status;
				c->ops++;
				seen = 1;
			}
			if (seen)
				since = 0;
			else if (rb_idle(s, &turns, &since))
				return rb_fail(c, RB_IDLE);
			continue;
		}
		int got = rb_poll_cq(c, s->cq, wc, RB_POLL_BATCH);
		if (got < 0)
			return c->status;
		if (got == 0) {
			for (int i = 0; i < s->nrq; i++)
				if (rb_rq_flush(c, &s->rq[i]) != 0)
					return c->status;
			if (rb_idle(s, &turns, &since))
				return rb_fail(c, RB_IDLE);
			continue;
		}
		since = 0;
		int64_t recvs = 0;
		// The receiver interval's start (sink): the poll return that
		// takes recvs past the mark, as perftest's server stamps its
		// first poll that returned receives.
		int64_t mark = s->mode == RB_SERVE_SINK ? c->recv_mark : -1;
		int64_t t_poll = mark >= 0 && c->recvs <= mark ? rb_clock_ns() : 0;
		for (int i = 0; i < got; i++) {
			if (!(wc[i].opcode & IBV_WC_RECV)) {
				covered = wc[i].wr_id + 1;
				continue;
			}
			if (rb_serve_recv(s, &wc[i]) != 0)
				return c->status;
			recvs++;
		}
		if (recvs > 0 && s->mode == RB_SERVE_SINK) {
			c->t_recv_last = rb_clock_ns();
			if (t_poll != 0 && c->recvs > mark)
				c->t_recv_first = t_poll;
		}
		while (s->mode == RB_SERVE_RECV_ECHO && c->ops < c->recvs) {
			s->wr.imm_data = htonl(s->imms[c->ops % s->imm_cap]);
			if (rb_serve_answer(s, &posted, &covered, wc) != 0)
				return c->status;
			c->ops++;
		}
		// signal_all: receives reposted per message, as perftest does.
		for (int i = 0; s->signal_all && i < s->nrq; i++)
			if (rb_rq_flush(c, &s->rq[i]) != 0)
				return c->status;
	}
	return RB_OK;
}

// rb_stream_reap processes completions: all there are (wait =
// RB_WAIT_NONE) or at least one (wait: what for, within the deadline).
static int rb_stream_reap(rb_stream *s, int wait, int64_t outstanding) {
	rb_ctl *c = &s->ctl;
	struct ibv_wc wc[RB_POLL_BATCH];
	int got = wait != RB_WAIT_NONE ? rb_wait_cq(c, s->cq, s->ch, wc, RB_POLL_BATCH, 0, wait, outstanding)
		       : rb_poll_cq(c, s->cq, wc, RB_POLL_BATCH);
	if (got < 0)
		return -1;
	if (got == 0) {
		for (int i = 0; i < s->nrq; i++)
			if (rb_rq_flush(c, &s->rq[i]) != 0)
				return -1;
		return 0;
	}
	int64_t now = rb_clock_ns();
	for (int k = 0; k < got; k++) {
		uint64_t id = wc[k].wr_id;
		if (wc[k].opcode & IBV_WC_RECV) {
			if (id >= (uint64_t)s->nrq) {
				rb_set_bad(c, &wc[k]);
				rb_fail(c, RB_UNEXPECTED);
				return -1;
			}
			if (rb_rq_consumed(c, &s->rq[id]) != 0)
				return -1;
			c->recvs++;
			continue;
		}
		uint64_t qi = (id & ~RB_MARKER) >> RB_SEQ_BITS;
		if (qi >= (uint64_t)s->nqp) {
			rb_set_bad(c, &wc[k]);
			rb_fail(c, RB_UNEXPECTED);
			return -1;
		}
		rb_sq *q = &s->sq[qi];
		uint64_t seq = id & RB_SEQ_MASK;
		q->done = seq + 1;
		if (!(id & RB_MARKER))
			rb_hist_add(&s->hist, now - q->posted_at[seq & q->mask]);
	}
	c->t_last = now;
	return got;
}

static int64_t rb_stream_outstanding(rb_stream *s) {
	int64_t n = 0;
	for (int i = 0; i < s->nqp; i++)
		n += (int64_t)(s->sq[i].posted - s->sq[i].done);
	return n;
}

// rb_stream_post posts k WRs of QP qi's batch after waiting for room.
static int rb_stream_post(rb_stream *s, int qi, int k) {
	rb_ctl *c = &s->ctl;
	rb_sq *q = &s->sq[qi];
	int64_t due = 0;
	if (s->interval_ns > 0) {
		// Open loop: wait for the batch's first message's due time,
		// reaping meanwhile; its samples count from their due times, so
		// time spent behind schedule (a full queue) is charged.
		due = s->t_start + c->ops * s->interval_ns;
		while (rb_clock_ns() < due) {
			if (c->stop)
				return rb_fail(c, RB_STOPPED), -1;
			if (rb_stream_reap(s, RB_WAIT_NONE, 0) < 0)
				return -1;
		}
	}
	while (q->posted - q->done + (uint64_t)k > (uint64_t)s->qd)
		if (rb_stream_reap(s, RB_WAIT_SEND, rb_stream_outstanding(s)) < 0)
			return -1;
	int64_t now = rb_clock_ns();
	uint64_t sig = (uint64_t)s->signal, counters = (uint64_t)s->counters, stride = (uint64_t)s->stride;
	for (int j = 0; j < k; j++) {
		uint64_t seq = q->posted + (uint64_t)j;
		struct ibv_send_wr *wr = &q->wrs[j];
		wr->wr_id = (uint64_t)qi << RB_SEQ_BITS | seq;
		wr->next = j + 1 < k ? &q->wrs[j + 1] : NULL;
		if (counters > 1)
			wr->wr.atomic.remote_addr = q->base + seq % counters * stride;
		if (s->cswap) {
			// Counter seq % counters has seen k = seq / counters swaps:
			// expect f(k), swap in f(k+1), f(k) = k·RB_CSWAP_STEP mod
			// 2^64 (a bijection): once a swap fails, no later compare
			// matches again, so the final value shows it.
			uint64_t k = seq / counters;
			wr->wr.atomic.compare_add = k * RB_CSWAP_STEP;
			wr->wr.atomic.swap = (k + 1) * RB_CSWAP_STEP;
		}
		if ((seq + 1) % sig == 0) {
			wr->send_flags |= IBV_SEND_SIGNALED;
			q->posted_at[seq & q->mask] = s->interval_ns > 0 ? due + j * s->interval_ns : now;
			q->last_signal = seq + 1;
		} else {
			wr->send_flags &= ~IBV_SEND_SIGNALED;
		}
	}
	if (c->t_first == 0)
		c->t_first = s->interval_ns > 0 ? due : now;
	if (rb_post(c, q->qp, &q->wrs[0], &q->wrs[0]) != 0)
		return -1;
	q->posted += (uint64_t)k;
	c->ops += k;
	return rb_stream_reap(s, RB_WAIT_NONE, 0) < 0 ? -1 : 0;
}

// rb_run_stream: see scenario.Stream (rdmatest/internal/engine Stream) for what is timed.
int rb_run_stream(rb_stream *s) {
	rb_ctl *c = &s->ctl;
	if (s->gate && !s->opens_gate) {
		int64_t t0 = rb_clock_ns();
		for (unsigned spins = 1; *s->gate == 0; spins++) {
			if (c->stop)
				return rb_fail(c, RB_STOPPED);
			if (spins % RB_CLOCK_EVERY == 0 && rb_clock_ns() - t0 > c->timeout_ns)
				return rb_stalled(c, RB_WAIT_GATE, 0);
		}
	}
	if (s->gate && s->opens_gate)
		*s->gate = 1;
	s->t_start = rb_clock_ns();
	int qi = 0;
	for (int64_t left = s->n; left > 0;) {
		if (c->stop)
			return rb_fail(c, RB_STOPPED);
		int k = left < s->batch ? (int)left : s->batch;
		if (rb_stream_post(s, qi, k) != 0)
			return c->status;
		left -= k;
		qi = (qi + 1) % s->nqp;
	}
	// Every QP's last WR must be signaled, so that its completion covers
	// all before it: post a marker where it is not.
	for (int i = 0; i < s->nqp; i++) {
		rb_sq *q = &s->sq[i];
		if (q->last_signal == q->posted)
			continue;
		while (q->posted - q->done + 1 > (uint64_t)s->send_depth)
			if (rb_stream_reap(s, RB_WAIT_SEND, rb_stream_outstanding(s)) < 0)
				return c->status;
		q->marker.wr_id = RB_MARKER | (uint64_t)i << RB_SEQ_BITS | q->posted;
		q->marker.next = NULL;
		if (rb_post(c, q->qp, &q->marker, &q->marker) != 0)
			return c->status;
		q->posted++;
		q->last_signal = q->posted;
	}
	for (int64_t out; (out = rb_stream_outstanding(s)) > 0;)
		if (rb_stream_reap(s, RB_WAIT_SEND, out) < 0)
			return c->status;
	// A bidir stream's side keeps its receives stocked until the other
	// side's messages have all arrived.
	while (c->recvs < s->expect_recvs)
		if (rb_stream_reap(s, RB_WAIT_RECVS, 0) < 0)
			return c->status;
	return RB_OK;
}

// rb_stream_settle takes the receives that arrive after a stream's run
// (a bidir side's: the other side's last messages on UC or UD, where
// its run does not wait for them), reposting as it goes, until want
// have arrived or none for quiet_ns; bounded by the stop flag and the
// deadline. Untimed: the run's result was taken before.
int rb_stream_settle(rb_stream *s, int64_t want, int64_t quiet_ns) {
	rb_ctl *c = &s->ctl;
	int64_t t0 = rb_clock_ns(), since = t0, seen = c->recvs;
	while (c->recvs < want) {
		if (c->stop)
			return rb_fail(c, RB_STOPPED);
		if (rb_stream_reap(s, RB_WAIT_NONE, 0) < 0)
			return c->status;
		int64_t now = rb_clock_ns();
		if (c->recvs != seen) {
			seen = c->recvs;
			since = now;
		} else if (now - since >= quiet_ns || now - t0 > c->timeout_ns) {
			break;
		}
	}
	return RB_OK;
}

// rb_rpc_take_wcs files the completions in wc: responses (receives) join
// the pending ring with the time their poll returned, request sends move
// covered. Returns 0, or -1 with the status set.
static int rb_rpc_take_wcs(rb_rpc *r, struct ibv_wc *wc, int got) {
	rb_ctl *c = &r->ctl;
	int64_t now = rb_clock_ns();
	for (int i = 0; i < got; i++) {
		if (!(wc[i].opcode & IBV_WC_RECV)) {
			r->covered = wc[i].wr_id + 1;
			continue;
		}
		if (r->pend_n >= r->window) { // more responses than requests
			rb_set_bad(c, &wc[i]);
			return rb_fail(c, RB_UNEXPECTED), -1;
		}
		int slot = (r->pend_head + r->pend_n) % r->window;
		r->pend_tag[slot] = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
		r->pend_at[slot] = now;
		r->pend_n++;
		if (rb_rq_consumed(c, r->rq) != 0)
			return -1;
	}
	return 0;
}

// rb_rpc_send posts the next request of slot k, after making room.
static int rb_rpc_send(rb_rpc *r, int k) {
	rb_ctl *c = &r->ctl;
	struct ibv_wc wc[RB_POLL_BATCH];
	int half = r->send_depth / 2 > 0 ? r->send_depth / 2 : 1;
	while (r->posted - r->covered >= (uint64_t)r->send_depth - 1) {
		int got = rb_wait_cq(c, r->req_cq, NULL, wc, RB_POLL_BATCH, 0, RB_WAIT_SEND,
				     (int64_t)(r->posted - r->covered));
		if (got < 0 || rb_rpc_take_wcs(r, wc, got) < 0)
			return -1;
	}
	uint8_t gen = r->gen[k] == 255 ? 1 : r->gen[k] + 1; // 1 … 255, then 1 again
	r->gen[k] = gen;
	size_t off = (size_t)k * (size_t)r->stride;
	r->sge.addr = r->out_addr + off;
	if (r->write) {
		r->wr.wr.rdma.remote_addr = r->remote_base + off;
		r->out[off + r->size - 1] = gen;
	} else {
		r->wr.imm_data = htonl((uint32_t)k | (uint32_t)gen << 16);
	}
	if ((r->posted + 1) % half == 0)
		r->wr.send_flags |= IBV_SEND_SIGNALED;
	else
		r->wr.send_flags &= ~IBV_SEND_SIGNALED;
	r->wr.wr_id = r->posted;
	r->sent_at[k] = rb_clock_ns();
	if (rb_post(c, r->qp, &r->wr, &r->wr) != 0)
		return -1;
	r->posted++;
	return 0;
}

// rb_rpc_take waits for the next response and checks that its tag is the
// one of an outstanding request. Returns its slot (its round trip in
// *rtt, the time its poll returned in *at_out), or -1 with the status set.
static int rb_rpc_take(rb_rpc *r, int64_t *rtt, int64_t *at_out) {
	rb_ctl *c = &r->ctl;
	struct ibv_wc wc[RB_POLL_BATCH];
	while (r->pend_n == 0) {
		int got = rb_wait_cq(c, r->resp_cq, NULL, wc, RB_POLL_BATCH, 0, RB_WAIT_ANSWER, r->window);
		if (got < 0 || rb_rpc_take_wcs(r, wc, got) < 0)
			return -1;
	}
	uint32_t tag = r->pend_tag[r->pend_head];
	int64_t at = r->pend_at[r->pend_head];
	r->pend_head = (r->pend_head + 1) % r->window;
	r->pend_n--;
	uint32_t k = tag & 0xffff;
	if (k >= (uint32_t)r->window || r->gen[k] == 0 || tag >> 16 != r->gen[k]) {
		c->want = k < (uint32_t)r->window ? (uint64_t)k | (uint64_t)r->gen[k] << 16 : 0;
		c->got = tag;
		c->at = (uint64_t)c->ops;
		return rb_fail(c, RB_CHECK), -1;
	}
	*rtt = at - r->sent_at[k];
	*at_out = at;
	return (int)k;
}

// rb_rpc_drain takes the window's outstanding responses, sending
// nothing more: afterwards no request is outstanding.
static int rb_rpc_drain(rb_rpc *r) {
	int64_t rtt, at;
	for (int i = 0; i < r->window; i++) {
		int k = rb_rpc_take(r, &rtt, &at);
		if (k < 0)
			return r->ctl.status;
		r->gen[k] = 0;
	}
	return rb_rq_flush(&r->ctl, r->rq) != 0 ? r->ctl.status : RB_OK;
}

// rb_run_rpc runs one phase: fill the window, complete n RPCs and take
// the window's responses, all unrecorded (warm-up: nothing is left
// outstanding); fill the window and complete n RPCs, recording each
// round trip, so that every sample is of a request posted in this phase;
// or take the window's last responses.
int rb_run_rpc(rb_rpc *r) {
	rb_ctl *c = &r->ctl;
	int64_t rtt, at;
	switch (r->phase) {
	case RB_RPC_FILL:
		for (int k = 0; k < r->window; k++)
			if (rb_rpc_send(r, k) != 0)
				return c->status;
		for (int64_t i = 0; i < r->n; i++) {
			int k = rb_rpc_take(r, &rtt, &at);
			if (k < 0 || rb_rpc_send(r, k) != 0)
				return c->status;
		}
		return rb_rpc_drain(r);
	case RB_RPC_MEASURE:
		c->t_first = rb_clock_ns();
		for (int k = 0; k < r->window; k++)
			if (rb_rpc_send(r, k) != 0)
				return c->status;
		for (int64_t i = 0; i < r->n; i++) {
			if (c->stop)
				return rb_fail(c, RB_STOPPED);
			int k = rb_rpc_take(r, &rtt, &at);
			if (k < 0)
				return c->status;
			rb_hist_add(&r->hist, rtt);
			c->ops++;
			c->t_last = at; // the rate's end: the poll that returned the last response
			if (rb_rpc_send(r, k) != 0)
				return c->status;
		}
		return RB_OK;
	default:
		return rb_rpc_drain(r);
	}
}

// Program loops (issue #28): a side's steps, interpreted.
//
// Send WR IDs of a program: the QP index in bits 40..62, the QP's
// sequence number below, and bit 63 for a WR signaled by SignalEvery,
// whose completion only frees the send queue (an Await does not count
// it).
#define RB_PROG_BG (UINT64_C(1) << 63)

// rb_prog_take files the completions in wc: receives (their queue by
// wr_id, reposted in batches; the last one's imm and byte_len kept) and
// sends (the QP's accounting; Signaled ones counted for Await). Returns
// 0, or -1 with the status set.
static int rb_prog_take(rb_prog *p, struct ibv_wc *wc, int got) {
	rb_ctl *c = &p->ctl;
	for (int i = 0; i < got; i++) {
		uint64_t id = wc[i].wr_id;
		if (wc[i].opcode & IBV_WC_RECV) {
			uint64_t q = p->nrq == 1 ? 0 : id;
			if (p->rq == NULL || q >= (uint64_t)p->nrq) {
				rb_set_bad(c, &wc[i]);
				return rb_fail(c, RB_UNEXPECTED), -1;
			}
			if (rb_rq_consumed(c, &p->rq[q]) != 0)
				return -1;
			p->got_recv++;
			c->recvs++;
			p->last_imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
			p->last_len = wc[i].byte_len;
			continue;
		}
		uint64_t qi = (id & ~RB_PROG_BG) >> RB_SEQ_BITS;
		if (qi >= (uint64_t)p->nqp) {
			rb_set_bad(c, &wc[i]);
			return rb_fail(c, RB_UNEXPECTED), -1;
		}
		p->qps[qi].covered = (id & RB_SEQ_MASK) + 1; // completions come in order on a QP
		if (!(id & RB_PROG_BG))
			p->got_send++;
	}
	return 0;
}

static int64_t rb_prog_outstanding(rb_prog *p) {
	int64_t n = 0;
	for (int i = 0; i < p->nqp; i++)
		n += (int64_t)(p->qps[i].posted - p->qps[i].covered);
	return n;
}

// rb_prog_wait takes at least one completion within limit ns.
static int rb_prog_wait(rb_prog *p, int64_t limit, int what) {
	struct ibv_wc wc[RB_POLL_BATCH];
	int got = rb_wait_cq_for(&p->ctl, p->cq, NULL, wc, RB_POLL_BATCH, 0, limit, what, rb_prog_outstanding(p));
	return got < 0 ? -1 : rb_prog_take(p, wc, got);
}

// rb_prog_post posts a post step's chain after waiting for room in its
// QP's send queue (the program was checked: a signaled WR is always
// outstanding when the queue is full).
static int rb_prog_post(rb_prog *p, rb_step *st) {
	rb_ctl *c = &p->ctl;
	rb_pq *q = &p->qps[st->qp];
	while (q->posted - q->covered + (uint64_t)st->n > (uint64_t)p->send_depth)
		if (rb_prog_wait(p, c->timeout_ns, RB_WAIT_SEND) != 0)
			return -1;
	struct ibv_send_wr *w = &p->wrs[st->first];
	for (int j = 0; j < st->n; j++)
		w[j].wr_id = (uint64_t)st->qp << RB_SEQ_BITS | (q->posted + (uint64_t)j);
	if (st->every > 0) {
		// Signaled in iterations every−1, 2·every−1, …: due counts down
		// (set to every−1 when the loop is built, and kept across Warm and
		// Run like p->iter).
		struct ibv_send_wr *last = &w[st->n - 1];
		if (st->due == 0) {
			st->due = st->every - 1;
			last->send_flags |= IBV_SEND_SIGNALED;
			last->wr_id |= RB_PROG_BG;
		} else {
			st->due--;
			last->send_flags &= ~IBV_SEND_SIGNALED;
		}
	}
	if (rb_post(c, q->qp, w, w) != 0)
		return -1;
	q->posted += (uint64_t)st->n;
	p->consumed += st->consumes;
	return 0;
}

// rb_prog_word reads the width-byte word at off.
static inline uint64_t rb_prog_word(rb_prog *p, const rb_step *st) {
	volatile uint8_t *m = p->mem + st->off;
	switch (st->width) {
	case 8:
		return *(volatile uint64_t *)m;
	case 4:
		return *(volatile uint32_t *)m;
	default:
		return *m;
	}
}

// rb_prog_spun is a spin's check between two looks at memory: the stop
// flag, and once every RB_CLOCK_EVERY spins the deadline (limit ns from
// the first such check). Returns 0 to go on, or -1 with the status set.
static int rb_prog_spun(rb_prog *p, unsigned spins, int64_t *since, int64_t limit) {
	rb_ctl *c = &p->ctl;
	if (c->stop)
		return rb_fail(c, RB_STOPPED), -1;
	if (spins % RB_CLOCK_EVERY == 0) {
		int64_t now = rb_clock_ns();
		if (*since == 0)
			*since = now;
		else if (now - *since > limit)
			return rb_stalled(c, RB_WAIT_SPIN, rb_prog_outstanding(p)), -1;
	}
	return 0;
}

// rb_prog_spin spins until the step's condition holds, within limit ns
// (one loop per kind: nothing but the look at memory per spin).
static int rb_prog_spin(rb_prog *p, const rb_step *st, int64_t limit) {
	volatile uint8_t *b = p->mem + st->off;
	int64_t since = 0;
	unsigned spins = 1;
	switch (st->kind) {
	case RB_STEP_SPIN_GEN:
		for (; *b != p->gen; spins++)
			if (rb_prog_spun(p, spins, &since, limit) != 0)
				return -1;
		return 0;
	case RB_STEP_SPIN_CHANGE: {
		uint8_t v;
		for (; (v = *b) == p->gen; spins++)
			if (rb_prog_spun(p, spins, &since, limit) != 0)
				return -1;
		p->gen = v;
		return 0;
	}
	default:
		for (; rb_prog_word(p, st) != st->value; spins++)
			if (rb_prog_spun(p, spins, &since, limit) != 0)
				return -1;
		return 0;
	}
}

static int rb_prog_step(rb_prog *p, rb_step *st, int64_t k, int64_t limit, int64_t *t0);

// rb_prog_iter runs the steps once; k is the iteration's index in this
// call (negative: warm-up, not recorded).
static int rb_prog_iter(rb_prog *p, int64_t k) {
	rb_ctl *c = &p->ctl;
	int64_t t0 = 0;
	int waited = 0; // the passive side's first wait of an iteration may last up to idle_ns
	if (p->whole)
		t0 = rb_clock_ns();
	for (int i = 0; i < p->nstep; i++) {
		rb_step *st = &p->steps[i];
		p->step = i;
		int64_t limit = c->timeout_ns;
		int idle = 0; // this wait is the passive side's first of the iteration
		switch (st->kind) {
		case RB_STEP_AWAIT:
		case RB_STEP_SPIN_GEN:
		case RB_STEP_SPIN_CHANGE:
		case RB_STEP_SPIN_EQUAL:
			if (p->passive && !waited) {
				limit = p->idle_ns;
				idle = 1;
			}
			waited = 1;
		}
		if (rb_prog_step(p, st, k, limit, &t0) != 0) {
			if (idle && c->status == RB_STALLED)
				c->status = RB_IDLE;
			return -1;
		}
	}
	if (p->whole && k >= 0) {
		int64_t t1 = rb_clock_ns();
		rb_hist_add(&p->hist, t1 - t0);
		if (c->t_first == 0)
			c->t_first = t0;
		c->t_last = t1;
	}
	p->step = -1;
	p->iter++;
	return 0;
}

// rb_prog_step runs one step (k: the iteration, negative in the warm-up;
// limit: a wait's deadline; *t0: the sample's start).
static int rb_prog_step(rb_prog *p, rb_step *st, int64_t k, int64_t limit, int64_t *t0) {
	rb_ctl *c = &p->ctl;
	switch (st->kind) {
	case RB_STEP_POST:
		if (rb_prog_post(p, st) != 0)
			return -1;
		break;
	case RB_STEP_AWAIT:
		while (p->got_recv < st->recvs || p->got_send < st->sends)
			if (rb_prog_wait(p, limit, RB_WAIT_AWAIT) != 0)
				return -1;
		p->got_recv -= st->recvs;
		p->got_send -= st->sends;
		break;
	case RB_STEP_NEXT_GEN:
		p->gen = p->gen % 255 + 1; // 1..255: never memory's initial 0
		break;
	case RB_STEP_PUT_GEN:
		p->mem[st->off] = p->gen;
		break;
	case RB_STEP_SPIN_GEN:
	case RB_STEP_SPIN_CHANGE:
	case RB_STEP_SPIN_EQUAL:
		if (rb_prog_spin(p, st, limit) != 0)
			return -1;
		break;
	case RB_STEP_REPOST:
		for (int q = 0; q < p->nrq; q++)
			if (rb_rq_flush(c, &p->rq[q]) != 0)
				return -1;
		break;
	case RB_STEP_COPY_IMM:
		*(volatile uint32_t *)(p->mem + st->off) = p->last_imm;
		break;
	case RB_STEP_COPY_LEN:
		*(volatile uint32_t *)(p->mem + st->off) = p->last_len;
		break;
	case RB_STEP_EXPECT: {
		uint64_t got = rb_prog_word(p, st);
		if (got != st->value) {
			c->want = st->value;
			c->got = got;
			c->at = (uint64_t)p->iter;
			return rb_fail(c, RB_CHECK), -1;
		}
		break;
	}
	case RB_STEP_SAMPLE_START:
		*t0 = rb_clock_ns();
		break;
	case RB_STEP_SAMPLE_END: {
		int64_t t1 = rb_clock_ns();
		if (k >= 0) {
			rb_hist_add(&p->hist, st->halve ? (t1 - *t0) / 2 : t1 - *t0);
			if (c->t_first == 0)
				c->t_first = *t0;
			c->t_last = t1;
		}
		break;
	}
	default: // the program was checked: cannot happen
		return rb_fail(c, RB_UNEXPECTED), -1;
	}
	return 0;
}

// rb_run_prog runs warmup unrecorded iterations, then iters recorded ones
// (the requester), or iterations until the stop flag (passive: stopped
// between or inside iterations, it ends RB_OK; its first wait of an
// iteration that lasts idle_ns ends it RB_IDLE).
int rb_run_prog(rb_prog *p) {
	rb_ctl *c = &p->ctl;
	if (p->passive) {
		while (!c->stop) {
			if (rb_prog_iter(p, 0) != 0) {
				if (c->status == RB_STOPPED) {
					c->status = RB_OK;
					break;
				}
				return c->status;
			}
			c->ops++;
		}
		return RB_OK;
	}
	for (int64_t k = -p->warmup; k < p->iters; k++) {
		if (c->stop)
			return rb_fail(c, RB_STOPPED);
		if (rb_prog_iter(p, k) != 0)
			return c->status;
		if (k >= 0)
			c->ops++;
	}
	return RB_OK;
}
