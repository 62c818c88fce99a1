// Package verbs is rdmabench's thin cgo layer over libibverbs and librdmacm
// (rdma-core).
//
// It is the only package of the module that uses cgo. The real implementation
// is built when GOOS=linux and cgo is enabled; otherwise every constructor
// returns ErrNotSupported while types, constants, String methods and the pure
// validation functions stay available (and are unit-tested on any host).
//
// Object lifetime: every object (Device, PD, MR, CQ, Channel, QP, AH, SRQ,
// Buffer) registers itself in a process-wide table when created and removes
// itself when closed; Live lists what is still open so tests can fail on
// leaks. Close is idempotent on every type. Close children before parents:
// QPs and SRQs, then CQs, then Channels, then MRs and AHs, then PDs, then the
// Device; Device.Close refuses (returns an error naming the live children)
// while objects created from it are still open, and Buffer.Close refuses while
// MRs registered on it are open.
//
// Connection manager: QPs are connected by hand (QP.Connect, with
// endpoints exchanged out of band) or through rdma_cm (ListenCM,
// CMListener.Accept, DialCM) in librdmacm's "no id->qp" mode: the QP
// stays ours and rdma_cm only resolves the address and route and
// exchanges the connection messages; RC over the TCP port space, UD over
// the UDP one (SIDR), UC not at all. Each CMListener and CMConn owns an
// rdma_cm id and an event channel, both in the Live table (KindCMID,
// KindCMChannel); a CMConn's id uses its QP, so the QP refuses to close
// first. Every CM wait is a poll() on the channel's non-blocking fd with
// a deadline, and every error event is a *CMError naming the step and the
// address.
//
// Concurrency: objects are not safe for concurrent use by several goroutines
// unless stated otherwise. In particular each QP and SRQ owns a C scratch area
// used by PostSend/PostRecv, so one goroutine at a time may post to a QP.
//
// Hot path: the measured loops run in C (loop.c; see NewPing, NewServe,
// NewStream and the "Timed loops" notes in loop.go): one cgo call per run,
// nothing allocated and no system call of ours per operation, samples
// recorded into an HDR counts array. QP.PostSend, QP.PostRecv,
// SRQ.PostRecv and CQ.Poll, for everything else, cross into C exactly
// once per call (a whole batch is handed to ibv_post_send as one chain)
// and do not allocate on success.
package verbs
