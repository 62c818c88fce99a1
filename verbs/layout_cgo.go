//go:build linux && cgo

package verbs

// Compile-time checks that the Go side of the cgo boundary agrees with the
// C headers: the structs shared with C (rb.h) and the constants whose
// values are libibverbs' own (or rb.h's). Each line reads
//
//	_ = [1]struct{}{}[a-b]
//
// which builds only when a == b: a difference is an index out of range (or a
// negative index, or an unsigned overflow), so a mismatch fails the build.

/*
#include <stddef.h>
#include <infiniband/verbs.h>

#include "rb.h"
*/
import "C"

import "unsafe"

// Shared structs: rb_send_wr, rb_recv_wr and rb_wc (rb.h) versus SendWR,
// RecvWR and WC (types.go), field by field.
var (
	_ = [1]struct{}{}[unsafe.Sizeof(SendWR{})-C.sizeof_rb_send_wr]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.ID)-unsafe.Offsetof(C.rb_send_wr{}.id)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.Op)-unsafe.Offsetof(C.rb_send_wr{}.op)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.Flags)-unsafe.Offsetof(C.rb_send_wr{}.flags)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.NumSGE)-unsafe.Offsetof(C.rb_send_wr{}.num_sge)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.SGE)-unsafe.Offsetof(C.rb_send_wr{}.sge)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.RemoteAddr)-unsafe.Offsetof(C.rb_send_wr{}.remote_addr)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.RKey)-unsafe.Offsetof(C.rb_send_wr{}.rkey)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.Imm)-unsafe.Offsetof(C.rb_send_wr{}.imm)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.CompareAdd)-unsafe.Offsetof(C.rb_send_wr{}.compare_add)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.Swap)-unsafe.Offsetof(C.rb_send_wr{}.swap)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.UD)+unsafe.Offsetof(UDDest{}.ah)-unsafe.Offsetof(C.rb_send_wr{}.ah)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.UD)+unsafe.Offsetof(UDDest{}.QPN)-unsafe.Offsetof(C.rb_send_wr{}.qpn)]
	_ = [1]struct{}{}[unsafe.Offsetof(SendWR{}.UD)+unsafe.Offsetof(UDDest{}.QKey)-unsafe.Offsetof(C.rb_send_wr{}.qkey)]

	_ = [1]struct{}{}[unsafe.Sizeof(RecvWR{})-C.sizeof_rb_recv_wr]
	_ = [1]struct{}{}[unsafe.Offsetof(RecvWR{}.ID)-unsafe.Offsetof(C.rb_recv_wr{}.id)]
	_ = [1]struct{}{}[unsafe.Offsetof(RecvWR{}.NumSGE)-unsafe.Offsetof(C.rb_recv_wr{}.num_sge)]
	_ = [1]struct{}{}[unsafe.Offsetof(RecvWR{}.SGE)-unsafe.Offsetof(C.rb_recv_wr{}.sge)]

	// SGE is struct ibv_sge, copied as is into the ibv_*_wr chains.
	_ = [1]struct{}{}[unsafe.Sizeof(SGE{})-C.sizeof_struct_ibv_sge]
	_ = [1]struct{}{}[unsafe.Offsetof(SGE{}.Addr)-unsafe.Offsetof(C.struct_ibv_sge{}.addr)]
	_ = [1]struct{}{}[unsafe.Offsetof(SGE{}.Length)-unsafe.Offsetof(C.struct_ibv_sge{}.length)]
	_ = [1]struct{}{}[unsafe.Offsetof(SGE{}.LKey)-unsafe.Offsetof(C.struct_ibv_sge{}.lkey)]
	_ = [1]struct{}{}[len(SendWR{}.SGE)-len(C.rb_send_wr{}.sge)]
	_ = [1]struct{}{}[len(RecvWR{}.SGE)-len(C.rb_recv_wr{}.sge)]

	_ = [1]struct{}{}[unsafe.Sizeof(WC{})-C.sizeof_rb_wc]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.ID)-unsafe.Offsetof(C.rb_wc{}.id)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.Status)-unsafe.Offsetof(C.rb_wc{}.status)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.Opcode)-unsafe.Offsetof(C.rb_wc{}.opcode)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.ByteLen)-unsafe.Offsetof(C.rb_wc{}.byte_len)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.Imm)-unsafe.Offsetof(C.rb_wc{}.imm)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.Flags)-unsafe.Offsetof(C.rb_wc{}.flags)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.QPN)-unsafe.Offsetof(C.rb_wc{}.qpn)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.SrcQP)-unsafe.Offsetof(C.rb_wc{}.src_qp)]
	_ = [1]struct{}{}[unsafe.Offsetof(WC{}.VendorErr)-unsafe.Offsetof(C.rb_wc{}.vendor_err)]
)

// Send opcodes and flags: this package's values, rb.h's RB_OP_* and RB_FLAG_*.
var (
	_ = [1]struct{}{}[OpSend-C.RB_OP_SEND]
	_ = [1]struct{}{}[OpSendImm-C.RB_OP_SEND_IMM]
	_ = [1]struct{}{}[OpWrite-C.RB_OP_WRITE]
	_ = [1]struct{}{}[OpWriteImm-C.RB_OP_WRITE_IMM]
	_ = [1]struct{}{}[OpRead-C.RB_OP_READ]
	_ = [1]struct{}{}[OpFetchAdd-C.RB_OP_FETCH_ADD]
	_ = [1]struct{}{}[OpCmpSwap-C.RB_OP_CMP_SWAP]

	_ = [1]struct{}{}[FlagSignaled-C.RB_FLAG_SIGNALED]
	_ = [1]struct{}{}[FlagInline-C.RB_FLAG_INLINE]
	_ = [1]struct{}{}[FlagSolicited-C.RB_FLAG_SOLICITED]
	_ = [1]struct{}{}[FlagFence-C.RB_FLAG_FENCE]
)

// Access flags (enum ibv_access_flags).
var (
	_ = [1]struct{}{}[AccessLocalWrite-C.IBV_ACCESS_LOCAL_WRITE]
	_ = [1]struct{}{}[AccessRemoteWrite-C.IBV_ACCESS_REMOTE_WRITE]
	_ = [1]struct{}{}[AccessRemoteRead-C.IBV_ACCESS_REMOTE_READ]
	_ = [1]struct{}{}[AccessRemoteAtomic-C.IBV_ACCESS_REMOTE_ATOMIC]
)

// Work completion opcodes and flags (enum ibv_wc_opcode, enum ibv_wc_flags).
var (
	_ = [1]struct{}{}[WCSend-C.IBV_WC_SEND]
	_ = [1]struct{}{}[WCRDMAWrite-C.IBV_WC_RDMA_WRITE]
	_ = [1]struct{}{}[WCRDMARead-C.IBV_WC_RDMA_READ]
	_ = [1]struct{}{}[WCCompSwap-C.IBV_WC_COMP_SWAP]
	_ = [1]struct{}{}[WCFetchAdd-C.IBV_WC_FETCH_ADD]
	_ = [1]struct{}{}[WCRecv-C.IBV_WC_RECV]
	_ = [1]struct{}{}[WCRecvRDMAWithImm-C.IBV_WC_RECV_RDMA_WITH_IMM]

	_ = [1]struct{}{}[WCGRH-C.IBV_WC_GRH]
	_ = [1]struct{}{}[WCWithImm-C.IBV_WC_WITH_IMM]
)

// Work completion statuses (enum ibv_wc_status).
var (
	_ = [1]struct{}{}[WCSuccess-C.IBV_WC_SUCCESS]
	_ = [1]struct{}{}[WCLocLenErr-C.IBV_WC_LOC_LEN_ERR]
	_ = [1]struct{}{}[WCLocQPOpErr-C.IBV_WC_LOC_QP_OP_ERR]
	_ = [1]struct{}{}[WCLocEECOpErr-C.IBV_WC_LOC_EEC_OP_ERR]
	_ = [1]struct{}{}[WCLocProtErr-C.IBV_WC_LOC_PROT_ERR]
	_ = [1]struct{}{}[WCWRFlushErr-C.IBV_WC_WR_FLUSH_ERR]
	_ = [1]struct{}{}[WCMWBindErr-C.IBV_WC_MW_BIND_ERR]
	_ = [1]struct{}{}[WCBadRespErr-C.IBV_WC_BAD_RESP_ERR]
	_ = [1]struct{}{}[WCLocAccessErr-C.IBV_WC_LOC_ACCESS_ERR]
	_ = [1]struct{}{}[WCRemInvReqErr-C.IBV_WC_REM_INV_REQ_ERR]
	_ = [1]struct{}{}[WCRemAccessErr-C.IBV_WC_REM_ACCESS_ERR]
	_ = [1]struct{}{}[WCRemOpErr-C.IBV_WC_REM_OP_ERR]
	_ = [1]struct{}{}[WCRetryExcErr-C.IBV_WC_RETRY_EXC_ERR]
	_ = [1]struct{}{}[WCRNRRetryExcErr-C.IBV_WC_RNR_RETRY_EXC_ERR]
	_ = [1]struct{}{}[WCLocRDDViolErr-C.IBV_WC_LOC_RDD_VIOL_ERR]
	_ = [1]struct{}{}[WCRemInvRDReqErr-C.IBV_WC_REM_INV_RD_REQ_ERR]
	_ = [1]struct{}{}[WCRemAbortErr-C.IBV_WC_REM_ABORT_ERR]
	_ = [1]struct{}{}[WCInvEECNErr-C.IBV_WC_INV_EECN_ERR]
	_ = [1]struct{}{}[WCInvEECStateErr-C.IBV_WC_INV_EEC_STATE_ERR]
	_ = [1]struct{}{}[WCFatalErr-C.IBV_WC_FATAL_ERR]
	_ = [1]struct{}{}[WCRespTimeoutErr-C.IBV_WC_RESP_TIMEOUT_ERR]
	_ = [1]struct{}{}[WCGeneralErr-C.IBV_WC_GENERAL_ERR]
	_ = [1]struct{}{}[WCTMErr-C.IBV_WC_TM_ERR]
	_ = [1]struct{}{}[WCTMRndvIncomplete-C.IBV_WC_TM_RNDV_INCOMPLETE]
)

// QP states (enum ibv_qp_state).
var (
	_ = [1]struct{}{}[QPSReset-C.IBV_QPS_RESET]
	_ = [1]struct{}{}[QPSInit-C.IBV_QPS_INIT]
	_ = [1]struct{}{}[QPSRTR-C.IBV_QPS_RTR]
	_ = [1]struct{}{}[QPSRTS-C.IBV_QPS_RTS]
	_ = [1]struct{}{}[QPSSQD-C.IBV_QPS_SQD]
	_ = [1]struct{}{}[QPSSQE-C.IBV_QPS_SQE]
	_ = [1]struct{}{}[QPSErr-C.IBV_QPS_ERR]
	_ = [1]struct{}{}[QPSUnknown-C.IBV_QPS_UNKNOWN]
)

// MTU codes (enum ibv_mtu): mtuBytes and mtuCode compute 128<<code for the
// codes 1..5.
var (
	_ = [1]struct{}{}[C.IBV_MTU_256-1]
	_ = [1]struct{}{}[128<<C.IBV_MTU_256-256]
	_ = [1]struct{}{}[128<<C.IBV_MTU_512-512]
	_ = [1]struct{}{}[128<<C.IBV_MTU_1024-1024]
	_ = [1]struct{}{}[128<<C.IBV_MTU_2048-2048]
	_ = [1]struct{}{}[128<<C.IBV_MTU_4096-4096]
	_ = [1]struct{}{}[C.IBV_MTU_4096-5]
)

// Port states, GID types, atomic capabilities and link layers (enum
// ibv_port_state, enum ibv_gid_type, enum ibv_atomic_cap, IBV_LINK_LAYER_*).
var (
	_ = [1]struct{}{}[PortNOP-C.IBV_PORT_NOP]
	_ = [1]struct{}{}[PortDown-C.IBV_PORT_DOWN]
	_ = [1]struct{}{}[PortInit-C.IBV_PORT_INIT]
	_ = [1]struct{}{}[PortArmed-C.IBV_PORT_ARMED]
	_ = [1]struct{}{}[PortActive-C.IBV_PORT_ACTIVE]
	_ = [1]struct{}{}[PortActiveDefer-C.IBV_PORT_ACTIVE_DEFER]

	_ = [1]struct{}{}[GIDTypeIB-C.IBV_GID_TYPE_IB]
	_ = [1]struct{}{}[GIDTypeRoCEv1-C.IBV_GID_TYPE_ROCE_V1]
	_ = [1]struct{}{}[GIDTypeRoCEv2-C.IBV_GID_TYPE_ROCE_V2]

	_ = [1]struct{}{}[AtomicNone-C.IBV_ATOMIC_NONE]
	_ = [1]struct{}{}[AtomicHCA-C.IBV_ATOMIC_HCA]
	_ = [1]struct{}{}[AtomicGlobal-C.IBV_ATOMIC_GLOB]

	_ = [1]struct{}{}[linkLayerInfiniBandCode-C.IBV_LINK_LAYER_INFINIBAND]
	_ = [1]struct{}{}[linkLayerEthernetCode-C.IBV_LINK_LAYER_ETHERNET]
)
