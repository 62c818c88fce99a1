//go:build linux && cgo

package verbs

/*
#cgo LDFLAGS: -libverbs
#cgo noescape rb_post_send
#cgo nocallback rb_post_send
#cgo noescape rb_post_recv
#cgo nocallback rb_post_recv
#cgo noescape rb_poll_cq
#cgo nocallback rb_poll_cq
#cgo noescape rb_get_cq_event
#cgo nocallback rb_get_cq_event
#cgo noescape rb_query_port
#cgo nocallback rb_query_port
#cgo noescape rb_query_gid
#cgo nocallback rb_query_gid
#cgo noescape rb_query_gid_table
#cgo nocallback rb_query_gid_table

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rb.h"

// rb_post_send builds a chain of n WRs in slots and posts it with one
// ibv_post_send. Returns its errno (0 on success) and the bad WR's index.
static int rb_post_send(struct ibv_qp *qp, rb_send_slot *slots, const rb_send_wr *w, int n, int *bad_index) {
	for (int i = 0; i < n; i++, w++) {
		rb_fill_send_wr(&slots[i].wr, slots[i].sge, w);
		slots[i].wr.next = (i + 1 < n) ? &slots[i + 1].wr : NULL;
	}
	struct ibv_send_wr *bad = NULL;
	int rc = ibv_post_send(qp, &slots[0].wr, &bad);
	if (rc != 0)
		*bad_index = bad ? (int)((rb_send_slot *)(void *)bad - slots) : 0;
	return rc;
}

// rb_post_recv posts n receive WRs as one chain to qp, or to srq when qp is NULL.
static int rb_post_recv(struct ibv_qp *qp, struct ibv_srq *srq, rb_recv_slot *slots, const rb_recv_wr *w, int n, int *bad_index) {
	for (int i = 0; i < n; i++, w++) {
		struct ibv_recv_wr *wr = &slots[i].wr;
		memcpy(slots[i].sge, w->sge, sizeof(struct ibv_sge) * w->num_sge);
		wr->wr_id = w->id;
		wr->next = (i + 1 < n) ? &slots[i + 1].wr : NULL;
		wr->sg_list = slots[i].sge;
		wr->num_sge = w->num_sge;
	}
	struct ibv_recv_wr *bad = NULL;
	int rc = qp ? ibv_post_recv(qp, &slots[0].wr, &bad) : ibv_post_srq_recv(srq, &slots[0].wr, &bad);
	if (rc != 0)
		*bad_index = bad ? (int)((rb_recv_slot *)(void *)bad - slots) : 0;
	return rc;
}

// rb_poll_cq polls up to n completions into out (flattened, imm in host
// order). Returns the count, or a negative value if the first poll failed.
static int rb_poll_cq(struct ibv_cq *cq, rb_wc *out, int n) {
	struct ibv_wc wc[32];
	int total = 0;
	while (total < n) {
		int want = n - total < 32 ? n - total : 32;
		int got = ibv_poll_cq(cq, want, wc);
		if (got < 0)
			return total > 0 ? total : got;
		for (int i = 0; i < got; i++) {
			rb_wc *o = &out[total + i];
			o->id = wc[i].wr_id;
			o->status = wc[i].status;
			o->opcode = wc[i].opcode;
			o->byte_len = wc[i].byte_len;
			o->imm = (wc[i].wc_flags & IBV_WC_WITH_IMM) ? ntohl(wc[i].imm_data) : 0;
			o->flags = wc[i].wc_flags;
			o->qpn = wc[i].qp_num;
			o->src_qp = wc[i].src_qp;
			o->vendor_err = wc[i].vendor_err;
		}
		total += got;
		if (got < want)
			break;
	}
	return total;
}

// rb_get_cq_event returns the CQ of the next event (acknowledged) or 0 with *err set.
static uintptr_t rb_get_cq_event(struct ibv_comp_channel *ch, int *err) {
	struct ibv_cq *cq;
	void *ctx;
	if (ibv_get_cq_event(ch, &cq, &ctx) != 0) {
		*err = errno;
		return 0;
	}
	ibv_ack_cq_events(cq, 1);
	return (uintptr_t)cq;
}

// ibv_query_port is a macro; wrap it.
static int rb_query_port(struct ibv_context *ctx, int port, struct ibv_port_attr *attr) {
	return ibv_query_port(ctx, (uint8_t)port, attr);
}

// rb_query_gid reads one GID and its type. Returns 0, ENODATA for an empty
// slot, or another errno. *have_type is 0 when only ibv_query_gid worked.
static int rb_query_gid(struct ibv_context *ctx, int port, int index, uint8_t *gid, int *type, int *have_type) {
	struct ibv_gid_entry e;
	int rc = ibv_query_gid_ex(ctx, port, index, &e, 0);
	if (rc == 0) {
		memcpy(gid, e.gid.raw, 16);
		*type = e.gid_type;
		*have_type = 1;
		return 0;
	}
	if (rc == ENODATA)
		return rc;
	union ibv_gid g;
	if (ibv_query_gid(ctx, port, index, &g) != 0)
		return errno ? errno : EIO;
	memcpy(gid, g.raw, 16);
	*have_type = 0;
	return 0;
}

// rb_query_gid_table reads a port's valid GID entries with one
// ibv_query_gid_table call (one ioctl for the whole device, where a loop
// of ibv_query_gid_ex costs one per index: rxe's table has 1024). It
// writes up to max entries' GIDs (16 bytes each), indexes and types and
// returns how many, or -errno (EOPNOTSUPP on a kernel without the
// ioctl: the caller falls back to the loop). The scratch array holds
// every port's entries: the call fails when max_entries is too small.
static int rb_query_gid_table(struct ibv_context *ctx, int port, uint8_t *gids, int *idx, int *types, int max) {
	struct ibv_device_attr da;
	if (ibv_query_device(ctx, &da) != 0)
		return -(errno ? errno : EIO);
	size_t total = 0;
	for (int p = 1; p <= da.phys_port_cnt; p++) {
		struct ibv_port_attr pa;
		if (ibv_query_port(ctx, (uint8_t)p, &pa) != 0)
			return -(errno ? errno : EIO);
		total += pa.gid_tbl_len;
	}
	if (total == 0)
		return 0;
	struct ibv_gid_entry *e = calloc(total, sizeof(*e));
	if (!e)
		return -ENOMEM;
	ssize_t n = ibv_query_gid_table(ctx, e, total, 0);
	if (n < 0) {
		free(e);
		return (int)n;
	}
	int out = 0;
	for (ssize_t i = 0; i < n; i++) {
		if ((int)e[i].port_num != port)
			continue;
		if (out == max) {
			free(e);
			return -E2BIG;
		}
		memcpy(gids + 16 * out, e[i].gid.raw, 16);
		idx[out] = (int)e[i].gid_index;
		types[out] = (int)e[i].gid_type;
		out++;
	}
	free(e);
	return out;
}

// rb_probe_max_inline creates throw-away RC QPs asking for 4096, 2048, ...
// bytes of inline data and returns the cap read back from the first that
// succeeds (0 if none), or -errno if the PD/CQ could not be created.
static int rb_probe_max_inline(struct ibv_context *ctx) {
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		return -(errno ? errno : EIO);
	struct ibv_cq *cq = ibv_create_cq(ctx, 1, NULL, NULL, 0);
	if (!cq) {
		int e = errno ? errno : EIO;
		ibv_dealloc_pd(pd);
		return -e;
	}
	int result = 0;
	for (int want = 4096; want >= 1; want /= 2) {
		struct ibv_qp_init_attr ia;
		memset(&ia, 0, sizeof ia);
		ia.send_cq = cq;
		ia.recv_cq = cq;
		ia.qp_type = IBV_QPT_RC;
		ia.cap.max_send_wr = 1;
		ia.cap.max_recv_wr = 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ia.cap.max_inline_data = want;
		struct ibv_qp *qp = ibv_create_qp(pd, &ia);
		if (qp) {
			result = ia.cap.max_inline_data;
			ibv_destroy_qp(qp);
			break;
		}
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	return result;
}

static int rb_modify_init(struct ibv_qp *qp, int ud, int port, unsigned int access, uint32_t qkey) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (ud) {
		a.qkey = qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static void rb_fill_ah(struct ibv_ah_attr *ah, int port, uint16_t lid, int grh, int sgid_index, const uint8_t *dgid) {
	ah->dlid = lid;
	ah->sl = 0;
	ah->src_path_bits = 0;
	ah->port_num = port;
	ah->is_global = grh ? 1 : 0;
	if (grh) {
		memcpy(ah->grh.dgid.raw, dgid, 16);
		ah->grh.sgid_index = sgid_index;
		ah->grh.hop_limit = 64;
		ah->grh.traffic_class = 0;
		ah->grh.flow_label = 0;
	}
}

// rb_modify_rtr: kind 0 = RC, 1 = UC, 2 = UD.
static int rb_modify_rtr(struct ibv_qp *qp, int kind, int port, int mtu, uint32_t dest_qpn, uint32_t rq_psn,
		int dest_rd_atomic, int min_rnr_timer, uint16_t dlid, int grh, int sgid_index, const uint8_t *dgid) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	int mask = IBV_QP_STATE;
	if (kind != 2) {
		a.path_mtu = mtu;
		a.dest_qp_num = dest_qpn;
		a.rq_psn = rq_psn;
		rb_fill_ah(&a.ah_attr, port, dlid, grh, sgid_index, dgid);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (kind == 0) {
		a.max_dest_rd_atomic = dest_rd_atomic;
		a.min_rnr_timer = min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int rb_modify_rts(struct ibv_qp *qp, int kind, uint32_t sq_psn, int timeout, int retry, int rnr_retry, int rd_atomic) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (kind == 0) {
		a.timeout = timeout;
		a.retry_cnt = retry;
		a.rnr_retry = rnr_retry;
		a.max_rd_atomic = rd_atomic;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(qp, &a, mask);
}

static int rb_modify_state(struct ibv_qp *qp, int state) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = state;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static int rb_query_state(struct ibv_qp *qp, int *state) {
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	*state = a.qp_state;
	return rc;
}

static struct ibv_ah *rb_create_ah(struct ibv_pd *pd, int port, uint16_t lid, int grh, int sgid_index, const uint8_t *dgid) {
	struct ibv_ah_attr ah;
	memset(&ah, 0, sizeof ah);
	rb_fill_ah(&ah, port, lid, grh, sgid_index, dgid);
	return ibv_create_ah(pd, &ah);
}

static struct ibv_qp *rb_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq, struct ibv_srq *srq,
		int kind, int sig_all, struct ibv_qp_cap *cap) {
	static const enum ibv_qp_type types[] = {IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD};
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.srq = srq;
	ia.qp_type = types[kind];
	ia.sq_sig_all = sig_all;
	ia.cap = *cap;
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);
	if (qp)
		*cap = ia.cap;
	return qp;
}

static struct ibv_srq *rb_create_srq(struct ibv_pd *pd, int max_wr, int max_sge) {
	struct ibv_srq_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.attr.max_wr = max_wr;
	ia.attr.max_sge = max_sge;
	return ibv_create_srq(pd, &ia);
}
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

type (
	cDevice  struct{ ctx *C.struct_ibv_context }
	cPD      struct{ pd *C.struct_ibv_pd }
	cMR      struct{ mr *C.struct_ibv_mr }
	cChannel struct{ ch *C.struct_ibv_comp_channel }
	cCQ      struct{ cq *C.struct_ibv_cq }
	cAH      struct{ ah *C.struct_ibv_ah }
	cQP      struct {
		qp   *C.struct_ibv_qp
		send *C.rb_send_slot // MaxSendWR slots
		recv *C.rb_recv_slot // MaxRecvWR slots (nil with an SRQ)
	}
	cSRQ struct {
		srq  *C.struct_ibv_srq
		recv *C.rb_recv_slot // maxWR slots
	}
)

// errnoOf converts a returned error code to an Errno; some providers return
// -errno instead of errno.
func errnoOf(rc C.int) syscall.Errno {
	if rc < 0 {
		return syscall.Errno(-rc)
	}
	return syscall.Errno(rc)
}

// rcErr converts a "returns errno" style result.
func rcErr(op string, rc C.int) error {
	if rc == 0 {
		return nil
	}
	return newError(op, errnoOf(rc))
}

// errnoErr converts the errno of a call that returned NULL or -1.
func errnoErr(op string, err error) error {
	n, _ := err.(syscall.Errno)
	return newError(op, n)
}

// be64 converts a __be64 read as a native integer to host order.
func be64(v C.__be64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(v))
	return binary.BigEndian.Uint64(b[:])
}

// Devices lists the RDMA devices libibverbs sees (an empty list, not an
// error, when there are none).
func Devices() ([]DeviceInfo, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		if n2, ok := err.(syscall.Errno); ok && n2 == syscall.ENOSYS {
			return nil, nil // no RDMA support in the kernel: no devices
		}
		return nil, errnoErr("ibv_get_device_list", err)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	out := make([]DeviceInfo, 0, len(devs))
	for _, d := range devs {
		out = append(out, DeviceInfo{Name: C.GoString(C.ibv_get_device_name(d)), NodeGUID: be64(C.ibv_get_device_guid(d))})
	}
	return out, nil
}

func openDevice(name string) (cDevice, DeviceAttr, error) {
	var n C.int
	list, err := C.ibv_get_device_list(&n)
	if list == nil {
		return cDevice{}, DeviceAttr{}, errnoErr("ibv_get_device_list", err)
	}
	defer C.ibv_free_device_list(list)
	var ctx *C.struct_ibv_context
	for _, d := range unsafe.Slice(list, int(n)) {
		if C.GoString(C.ibv_get_device_name(d)) == name {
			ctx, err = C.ibv_open_device(d)
			if ctx == nil {
				return cDevice{}, DeviceAttr{}, fmt.Errorf("verbs: opening %q: %w", name, errnoErr("ibv_open_device", err))
			}
			break
		}
	}
	if ctx == nil {
		return cDevice{}, DeviceAttr{}, fmt.Errorf("verbs: device %q disappeared", name)
	}
	c := cDevice{ctx: ctx}
	attr, err := c.queryDevice()
	if err != nil {
		C.ibv_close_device(ctx)
		return cDevice{}, DeviceAttr{}, fmt.Errorf("verbs: opening %q: %w", name, err)
	}
	attr.NodeTransport = NodeTransport(ctx.device.transport_type)
	return c, attr, nil
}

func (c *cDevice) queryDevice() (DeviceAttr, error) {
	var a C.struct_ibv_device_attr
	if err := rcErr("ibv_query_device", C.ibv_query_device(c.ctx, &a)); err != nil {
		return DeviceAttr{}, err
	}
	return DeviceAttr{
		FWVersion:       C.GoString(&a.fw_ver[0]),
		NodeGUID:        be64(a.node_guid),
		SysImageGUID:    be64(a.sys_image_guid),
		VendorID:        uint32(a.vendor_id),
		VendorPartID:    uint32(a.vendor_part_id),
		HWVer:           uint32(a.hw_ver),
		MaxQP:           int(a.max_qp),
		MaxQPWR:         int(a.max_qp_wr),
		MaxSGE:          int(a.max_sge),
		MaxCQ:           int(a.max_cq),
		MaxCQE:          int(a.max_cqe),
		MaxMR:           int(a.max_mr),
		MaxPD:           int(a.max_pd),
		MaxAH:           int(a.max_ah),
		MaxSRQ:          int(a.max_srq),
		MaxSRQWR:        int(a.max_srq_wr),
		MaxSRQSGE:       int(a.max_srq_sge),
		MaxQPRdAtom:     int(a.max_qp_rd_atom),
		MaxQPInitRdAtom: int(a.max_qp_init_rd_atom),
		MaxMRSize:       uint64(a.max_mr_size),
		AtomicCap:       AtomicCap(a.atomic_cap),
		PhysPortCnt:     int(a.phys_port_cnt),
	}, nil
}

// probeMaxInline runs rb_probe_max_inline (see Device.MaxInline).
func (c *cDevice) probeMaxInline() (int, error) {
	n := C.rb_probe_max_inline(c.ctx)
	if n < 0 {
		return 0, fmt.Errorf("probing max inline data: %w", rcErr("ibv_alloc_pd/ibv_create_cq", n))
	}
	return int(n), nil
}

func (c *cDevice) close() error {
	if rc, err := C.ibv_close_device(c.ctx); rc != 0 {
		return errnoErr("ibv_close_device", err)
	}
	c.ctx = nil
	return nil
}

func (c *cDevice) queryPort(port int) (PortAttr, error) {
	var a C.struct_ibv_port_attr
	if err := rcErr("ibv_query_port", C.rb_query_port(c.ctx, C.int(port), &a)); err != nil {
		return PortAttr{}, err
	}
	return PortAttr{
		Num:         port,
		State:       PortState(a.state),
		MaxMTU:      mtuBytes(int(a.max_mtu)),
		ActiveMTU:   mtuBytes(int(a.active_mtu)),
		LID:         uint16(a.lid),
		LinkLayer:   linkLayerName(int(a.link_layer)),
		ActiveSpeed: speedName(int(a.active_speed)),
		ActiveWidth: widthLanes(int(a.active_width)),
		GIDTableLen: int(a.gid_tbl_len),
		MaxMsgSize:  uint32(a.max_msg_sz),
	}, nil
}

// queryGIDs reads the port's non-zero GID entries: with one call where
// the kernel can, else index by index (queryGIDLoop), where a type
// ibv_query_gid_ex cannot give is read from sysfs
// ports/<p>/gid_attrs/types/<i>.
func (c *cDevice) queryGIDs(dev string, port, tableLen int) ([]GIDEntry, error) {
	if out, ok := c.queryGIDTable(port, tableLen); ok {
		return out, nil
	}
	return c.queryGIDLoop(dev, port, tableLen)
}

// queryGIDLoop reads the table index by index (ibv_query_gid_ex, or
// ibv_query_gid and sysfs for the type).
func (c *cDevice) queryGIDLoop(dev string, port, tableLen int) ([]GIDEntry, error) {
	var out []GIDEntry
	for i := 0; i < tableLen; i++ {
		var g GID
		var typ, haveType C.int
		rc := C.rb_query_gid(c.ctx, C.int(port), C.int(i), (*C.uint8_t)(unsafe.Pointer(&g[0])), &typ, &haveType)
		if rc == C.ENODATA {
			continue
		}
		if err := rcErr("ibv_query_gid", rc); err != nil {
			return nil, fmt.Errorf("%s port %d GID index %d: %w", dev, port, i, err)
		}
		if g.IsZero() {
			continue
		}
		e := GIDEntry{Index: i, GID: g, Type: GIDType(typ)}
		if haveType == 0 {
			p := filepath.Join(sysfsInfiniband, dev, "ports", strconv.Itoa(port), "gid_attrs", "types", strconv.Itoa(i))
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("verbs: GID type: %w", err)
			}
			if e.Type, err = parseGIDType(string(data)); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// queryGIDTable reads the port's non-zero GIDs with one
// ibv_query_gid_table; ok is false when the kernel or library cannot,
// and queryGIDs then reads index by index.
func (c *cDevice) queryGIDTable(port, tableLen int) (out []GIDEntry, ok bool) {
	if tableLen <= 0 {
		return nil, true
	}
	gids := make([]GID, tableLen)
	idx := make([]C.int, tableLen)
	types := make([]C.int, tableLen)
	n := C.rb_query_gid_table(c.ctx, C.int(port), (*C.uint8_t)(unsafe.Pointer(&gids[0][0])), &idx[0], &types[0], C.int(tableLen))
	if n < 0 {
		return nil, false
	}
	for i := 0; i < int(n); i++ {
		if gids[i].IsZero() {
			continue
		}
		out = append(out, GIDEntry{Index: int(idx[i]), GID: gids[i], Type: GIDType(types[i])})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Index < out[b].Index })
	return out, true
}

func (c *cDevice) allocPD() (cPD, error) {
	pd, err := C.ibv_alloc_pd(c.ctx)
	if pd == nil {
		return cPD{}, errnoErr("ibv_alloc_pd", err)
	}
	return cPD{pd: pd}, nil
}

func (c *cDevice) createChannel() (cChannel, error) {
	ch, err := C.ibv_create_comp_channel(c.ctx)
	if ch == nil {
		return cChannel{}, errnoErr("ibv_create_comp_channel", err)
	}
	if err := unix.SetNonblock(int(ch.fd), true); err != nil {
		C.ibv_destroy_comp_channel(ch)
		return cChannel{}, fmt.Errorf("verbs: completion channel fd: %w", err)
	}
	return cChannel{ch: ch}, nil
}

func (c *cDevice) createCQ(depth int, ch *cChannel) (cCQ, uintptr, error) {
	var cch *C.struct_ibv_comp_channel
	if ch != nil {
		cch = ch.ch
	}
	cq, err := C.ibv_create_cq(c.ctx, C.int(depth), nil, cch, 0)
	if cq == nil {
		return cCQ{}, 0, errnoErr("ibv_create_cq", err)
	}
	return cCQ{cq: cq}, uintptr(unsafe.Pointer(cq)), nil
}

func (c *cChannel) close() error {
	if err := rcErr("ibv_destroy_comp_channel", C.ibv_destroy_comp_channel(c.ch)); err != nil {
		return err
	}
	c.ch = nil
	return nil
}

// wait polls the non-blocking channel fd until an event arrives or the deadline passes.
func (c *cChannel) wait(deadline time.Time) (uintptr, error) {
	for {
		var errno C.int
		if cq := C.rb_get_cq_event(c.ch, &errno); cq != 0 {
			return uintptr(cq), nil
		}
		if n := syscall.Errno(errno); n != syscall.EAGAIN && n != syscall.EINTR {
			return 0, newError("ibv_get_cq_event", n)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, fmt.Errorf("verbs: waiting for a completion event: %w", os.ErrDeadlineExceeded)
		}
		ms := int(left.Milliseconds()) + 1
		fds := []unix.PollFd{{Fd: int32(c.ch.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, ms); err != nil && err != unix.EINTR {
			return 0, fmt.Errorf("verbs: poll on completion channel: %w", err)
		}
	}
}

func (c *cCQ) close() error {
	if err := rcErr("ibv_destroy_cq", C.ibv_destroy_cq(c.cq)); err != nil {
		return err
	}
	c.cq = nil
	return nil
}

var errPollCQ = &Error{Op: "ibv_poll_cq", Errno: syscall.EIO}

func (c *cCQ) poll(wcs []WC) (int, error) {
	n := C.rb_poll_cq(c.cq, (*C.rb_wc)(unsafe.Pointer(&wcs[0])), C.int(len(wcs)))
	if n < 0 {
		return 0, errPollCQ // ibv_poll_cq gives no errno, only a negative count
	}
	return int(n), nil
}

func (c *cCQ) notify(solicitedOnly bool) error {
	s := C.int(0)
	if solicitedOnly {
		s = 1
	}
	return rcErr("ibv_req_notify_cq", C.ibv_req_notify_cq(c.cq, s))
}

func (c *cPD) close() error {
	if err := rcErr("ibv_dealloc_pd", C.ibv_dealloc_pd(c.pd)); err != nil {
		return err
	}
	c.pd = nil
	return nil
}

func (c *cPD) regMR(mem []byte, access Access) (cMR, uint32, uint32, error) {
	mr, err := C.ibv_reg_mr(c.pd, unsafe.Pointer(&mem[0]), C.size_t(len(mem)), C.int(access))
	if mr == nil {
		return cMR{}, 0, 0, errnoErr("ibv_reg_mr", err)
	}
	return cMR{mr: mr}, uint32(mr.lkey), uint32(mr.rkey), nil
}

func (c *cMR) close() error {
	if err := rcErr("ibv_dereg_mr", C.ibv_dereg_mr(c.mr)); err != nil {
		return err
	}
	c.mr = nil
	return nil
}

func (c *cPD) createQP(cfg QPConfig) (cQP, QPCaps, uint32, error) {
	var srq *C.struct_ibv_srq
	recvWR, recvSGE := cfg.MaxRecvWR, cfg.MaxRecvSGE
	if cfg.SRQ != nil {
		srq, recvWR, recvSGE = cfg.SRQ.c.srq, 0, 0
	}
	cp := C.struct_ibv_qp_cap{
		max_send_wr:     C.uint32_t(cfg.MaxSendWR),
		max_recv_wr:     C.uint32_t(recvWR),
		max_send_sge:    C.uint32_t(cfg.MaxSendSGE),
		max_recv_sge:    C.uint32_t(recvSGE),
		max_inline_data: C.uint32_t(cfg.MaxInline),
	}
	sig := C.int(0)
	if cfg.SignalAll {
		sig = 1
	}
	qp, err := C.rb_create_qp(c.pd, cfg.SendCQ.c.cq, cfg.RecvCQ.c.cq, srq, C.int(cfg.Transport), sig, &cp)
	if qp == nil {
		return cQP{}, QPCaps{}, 0, errnoErr("ibv_create_qp", err)
	}
	caps := QPCaps{
		MaxSendWR: int(cp.max_send_wr), MaxRecvWR: int(cp.max_recv_wr),
		MaxSendSGE: int(cp.max_send_sge), MaxRecvSGE: int(cp.max_recv_sge), MaxInline: int(cp.max_inline_data),
	}
	q := cQP{qp: qp, send: (*C.rb_send_slot)(C.calloc(C.size_t(max(caps.MaxSendWR, 1)), C.sizeof_rb_send_slot))}
	if srq == nil {
		q.recv = (*C.rb_recv_slot)(C.calloc(C.size_t(max(caps.MaxRecvWR, 1)), C.sizeof_rb_recv_slot))
	}
	if q.send == nil || (srq == nil && q.recv == nil) {
		_ = q.close()
		return cQP{}, QPCaps{}, 0, newError("calloc", syscall.ENOMEM)
	}
	return q, caps, uint32(qp.qp_num), nil
}

func (c *cQP) close() error {
	if c.qp != nil {
		if err := rcErr("ibv_destroy_qp", C.ibv_destroy_qp(c.qp)); err != nil {
			return err
		}
		c.qp = nil
	}
	C.free(unsafe.Pointer(c.send))
	C.free(unsafe.Pointer(c.recv))
	c.send, c.recv = nil, nil
	return nil
}

func (c *cQP) state() (QPState, error) {
	var s C.int
	if err := rcErr("ibv_query_qp", C.rb_query_state(c.qp, &s)); err != nil {
		return QPSUnknown, err
	}
	return QPState(s), nil
}

func boolInt(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

func (c *cQP) connect(t Transport, r connectParams) error {
	cfg := r.cfg
	kind := C.int(t)
	if err := rcErr("ibv_modify_qp(INIT)", C.rb_modify_init(c.qp, boolInt(t == TransportUD), C.int(cfg.Port),
		C.uint(r.accessFlags), C.uint32_t(cfg.QKey))); err != nil {
		return err
	}
	dgid := cfg.Remote.GID
	if err := rcErr("ibv_modify_qp(RTR)", C.rb_modify_rtr(c.qp, kind, C.int(cfg.Port), C.int(r.mtuCode),
		C.uint32_t(cfg.Remote.QPN), C.uint32_t(cfg.Remote.PSN), C.int(r.destAtomic), C.int(cfg.MinRNRTimer),
		C.uint16_t(cfg.Remote.LID), boolInt(r.useGRH), C.int(cfg.GIDIndex), (*C.uint8_t)(unsafe.Pointer(&dgid[0])))); err != nil {
		return err
	}
	return rcErr("ibv_modify_qp(RTS)", C.rb_modify_rts(c.qp, kind, C.uint32_t(cfg.LocalPSN), C.int(cfg.Timeout),
		C.int(cfg.RetryCount), C.int(cfg.RNRRetry), C.int(r.rdAtomic)))
}

func (c *cQP) toError() error {
	return rcErr("ibv_modify_qp(ERR)", C.rb_modify_state(c.qp, C.IBV_QPS_ERR))
}

func (c *cQP) postSend(wrs []SendWR) error {
	var bad C.int
	rc := C.rb_post_send(c.qp, c.send, (*C.rb_send_wr)(unsafe.Pointer(&wrs[0])), C.int(len(wrs)), &bad)
	if rc != 0 {
		return postError(opPostSend, errnoOf(rc), int(bad))
	}
	return nil
}

func (c *cQP) postRecv(wrs []RecvWR) error {
	if c.recv == nil {
		return fmt.Errorf("verbs: PostRecv on a QP that uses an SRQ (post to the SRQ)")
	}
	var bad C.int
	rc := C.rb_post_recv(c.qp, nil, c.recv, (*C.rb_recv_wr)(unsafe.Pointer(&wrs[0])), C.int(len(wrs)), &bad)
	if rc != 0 {
		return postError(opPostRecv, errnoOf(rc), int(bad))
	}
	return nil
}

func (c *cPD) createAH(cfg AHConfig, useGRH bool) (cAH, uintptr, error) {
	g := cfg.GID
	ah, err := C.rb_create_ah(c.pd, C.int(cfg.Port), C.uint16_t(cfg.LID), boolInt(useGRH), C.int(cfg.GIDIndex),
		(*C.uint8_t)(unsafe.Pointer(&g[0])))
	if ah == nil {
		return cAH{}, 0, errnoErr("ibv_create_ah", err)
	}
	return cAH{ah: ah}, uintptr(unsafe.Pointer(ah)), nil
}

func (c *cAH) close() error {
	if err := rcErr("ibv_destroy_ah", C.ibv_destroy_ah(c.ah)); err != nil {
		return err
	}
	c.ah = nil
	return nil
}

func (c *cPD) createSRQ(maxWR, maxSGE int) (cSRQ, error) {
	srq, err := C.rb_create_srq(c.pd, C.int(maxWR), C.int(maxSGE))
	if srq == nil {
		return cSRQ{}, errnoErr("ibv_create_srq", err)
	}
	s := cSRQ{srq: srq, recv: (*C.rb_recv_slot)(C.calloc(C.size_t(maxWR), C.sizeof_rb_recv_slot))}
	if s.recv == nil {
		_ = s.close()
		return cSRQ{}, newError("calloc", syscall.ENOMEM)
	}
	return s, nil
}

func (c *cSRQ) close() error {
	if c.srq != nil {
		if err := rcErr("ibv_destroy_srq", C.ibv_destroy_srq(c.srq)); err != nil {
			return err
		}
		c.srq = nil
	}
	C.free(unsafe.Pointer(c.recv))
	c.recv = nil
	return nil
}

func (c *cSRQ) postRecv(wrs []RecvWR) error {
	var bad C.int
	rc := C.rb_post_recv(nil, c.srq, c.recv, (*C.rb_recv_wr)(unsafe.Pointer(&wrs[0])), C.int(len(wrs)), &bad)
	if rc != 0 {
		return postError(opPostSRQRecv, errnoOf(rc), int(bad))
	}
	return nil
}

// cWCStatusStr returns libibverbs' own ibv_wc_status_str text (for tests
// that check the Go table against the library).
func cWCStatusStr(s WCStatus) string {
	return C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(s)))
}
