// rb.h: the flat work requests and completions shared between Go and C
// (SendWR, RecvWR, WC). layout_cgo.go asserts at compile time that the Go
// structs (types.go) have these sizes and offsets and that the Go opcode,
// flag and enum constants equal the C ones; rb_fill_send_wr turns one flat
// WR into libibverbs' form, for the post shims (verbs_cgo.go) and the C
// loops (loop.c) alike.
#ifndef RB_H
#define RB_H

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
	uint64_t id;
	uint8_t op, flags, num_sge, pad[5];
	struct ibv_sge sge[4];
	uint64_t remote_addr;
	uint32_t rkey, imm;
	uint64_t compare_add, swap;
	uintptr_t ah;
	uint32_t qpn, qkey;
} rb_send_wr;
_Static_assert(offsetof(rb_send_wr, sge) == 16, "sge");
_Static_assert(offsetof(rb_send_wr, remote_addr) == 80, "remote_addr");
_Static_assert(offsetof(rb_send_wr, compare_add) == 96, "compare_add");
_Static_assert(offsetof(rb_send_wr, ah) == 112, "ah");
_Static_assert(sizeof(rb_send_wr) == 128, "rb_send_wr");

typedef struct {
	uint64_t id;
	uint8_t num_sge, pad[7];
	struct ibv_sge sge[4];
} rb_recv_wr;
_Static_assert(sizeof(rb_recv_wr) == 80, "rb_recv_wr");

typedef struct {
	uint64_t id;
	uint32_t status, opcode, byte_len, imm, flags, qpn, src_qp, vendor_err;
} rb_wc;
_Static_assert(sizeof(rb_wc) == 40, "rb_wc");

// rb_send_wr.op: the Go Opcode values (OpSend, ...).
enum {
	RB_OP_SEND = 0,
	RB_OP_SEND_IMM,
	RB_OP_WRITE,
	RB_OP_WRITE_IMM,
	RB_OP_READ,
	RB_OP_FETCH_ADD,
	RB_OP_CMP_SWAP,
};

// rb_send_wr.flags: the Go SendFlags bits (FlagSignaled, ...).
enum {
	RB_FLAG_SIGNALED = 1 << 0,
	RB_FLAG_INLINE = 1 << 1,
	RB_FLAG_SOLICITED = 1 << 2,
	RB_FLAG_FENCE = 1 << 3,
};

// Per-QP scratch slots: the ibv_*_wr chain and its SGEs are built here.
typedef struct { struct ibv_send_wr wr; struct ibv_sge sge[4]; } rb_send_slot;
typedef struct { struct ibv_recv_wr wr; struct ibv_sge sge[4]; } rb_recv_slot;

// rb_fill_send_wr builds wr (with its SGEs in sge) from the flat w; wr->next
// is left NULL.
static inline void rb_fill_send_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, const rb_send_wr *w) {
	static const enum ibv_wr_opcode opcodes[] = {
		[RB_OP_SEND] = IBV_WR_SEND,
		[RB_OP_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
		[RB_OP_WRITE] = IBV_WR_RDMA_WRITE,
		[RB_OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
		[RB_OP_READ] = IBV_WR_RDMA_READ,
		[RB_OP_FETCH_ADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
		[RB_OP_CMP_SWAP] = IBV_WR_ATOMIC_CMP_AND_SWP,
	};
	memset(wr, 0, sizeof(*wr));
	memcpy(sge, w->sge, sizeof(struct ibv_sge) * w->num_sge);
	wr->wr_id = w->id;
	wr->sg_list = sge;
	wr->num_sge = w->num_sge;
	wr->opcode = opcodes[w->op];
	unsigned int f = 0;
	if (w->flags & RB_FLAG_SIGNALED) f |= IBV_SEND_SIGNALED;
	if (w->flags & RB_FLAG_INLINE) f |= IBV_SEND_INLINE;
	if (w->flags & RB_FLAG_SOLICITED) f |= IBV_SEND_SOLICITED;
	if (w->flags & RB_FLAG_FENCE) f |= IBV_SEND_FENCE;
	wr->send_flags = f;
	wr->imm_data = htonl(w->imm);
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wr->wr.rdma.remote_addr = w->remote_addr;
		wr->wr.rdma.rkey = w->rkey;
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		wr->wr.atomic.remote_addr = w->remote_addr;
		wr->wr.atomic.rkey = w->rkey;
		wr->wr.atomic.compare_add = w->compare_add;
		wr->wr.atomic.swap = w->swap;
		break;
	default:
		wr->wr.ud.ah = (struct ibv_ah *)w->ah;
		wr->wr.ud.remote_qpn = w->qpn;
		wr->wr.ud.remote_qkey = w->qkey;
	}
}

#endif
