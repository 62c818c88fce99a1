package verbs

import (
	"errors"
	"fmt"
	"syscall"
)

// Sentinel errors. Test them with errors.Is.
var (
	// ErrNotSupported is returned by every constructor when the package is
	// built without cgo or for a non-Linux OS, and matches an *Error whose
	// errno says the operation is not supported.
	ErrNotSupported = errors.New("verbs: not supported")
	// ErrNoDevice means libibverbs reports no RDMA device at all.
	ErrNoDevice = errors.New("verbs: no RDMA device")
	// ErrClosed is returned when an object is used after Close.
	ErrClosed = errors.New("verbs: object is closed")
)

// Error is a failed libibverbs (or system) call.
type Error struct {
	Op    string        // the C function, e.g. "ibv_create_qp"
	Errno syscall.Errno // the errno it reported
}

// Error returns e.g. "verbs: ibv_create_qp: cannot allocate memory (ENOMEM)".
func (e *Error) Error() string {
	return fmt.Sprintf("verbs: %s: %s (%s)", e.Op, e.Errno.Error(), errnoName(e.Errno))
}

// Unwrap returns the errno so errors.Is(err, syscall.ENOMEM) works.
func (e *Error) Unwrap() error { return e.Errno }

// Is reports ErrNotSupported for EOPNOTSUPP, ENOSYS and EPROTONOSUPPORT.
func (e *Error) Is(target error) bool {
	return target == ErrNotSupported && isNotSupportedErrno(e.Errno)
}

func isNotSupportedErrno(n syscall.Errno) bool {
	return n == syscall.EOPNOTSUPP || n == syscall.ENOSYS || n == syscall.EPROTONOSUPPORT
}

// newError builds an *Error; a zero errno (a library that failed without
// setting errno) is reported as EIO so the error is never "success".
func newError(op string, n syscall.Errno) error {
	if n == 0 {
		n = syscall.EIO
	}
	return &Error{Op: op, Errno: n}
}

// errnoNames maps the errnos libibverbs commonly reports to their symbolic names.
var errnoNames = map[syscall.Errno]string{
	syscall.EPERM: "EPERM", syscall.ENOENT: "ENOENT", syscall.EINTR: "EINTR", syscall.EIO: "EIO",
	syscall.ENXIO: "ENXIO", syscall.EBADF: "EBADF", syscall.EAGAIN: "EAGAIN", syscall.ENOMEM: "ENOMEM",
	syscall.EACCES: "EACCES", syscall.EFAULT: "EFAULT", syscall.EBUSY: "EBUSY", syscall.EEXIST: "EEXIST",
	syscall.ENODEV: "ENODEV", syscall.EINVAL: "EINVAL", syscall.ENOSPC: "ENOSPC", syscall.ENOSYS: "ENOSYS",
	syscall.EOPNOTSUPP: "EOPNOTSUPP", syscall.EPROTONOSUPPORT: "EPROTONOSUPPORT", syscall.ETIMEDOUT: "ETIMEDOUT",
	syscall.ECONNREFUSED: "ECONNREFUSED", syscall.ERANGE: "ERANGE", syscall.E2BIG: "E2BIG",
	syscall.ENETUNREACH: "ENETUNREACH", syscall.EHOSTUNREACH: "EHOSTUNREACH", syscall.EADDRNOTAVAIL: "EADDRNOTAVAIL",
	syscall.EADDRINUSE: "EADDRINUSE", syscall.ECONNRESET: "ECONNRESET",
}

func errnoName(n syscall.Errno) string {
	if s, ok := errnoNames[n]; ok {
		return s
	}
	return fmt.Sprintf("errno %d", int(n))
}

// LimitError reports a value rejected by validation before any library call.
type LimitError struct {
	What   string // what was checked, e.g. "send queue depth"
	Value  int64  // the requested value
	Limit  int64  // the bound it violated
	Source string // where the limit comes from, e.g. "max_qp_wr"
	// Min is true when Limit is a lower bound (Value < Limit is the error);
	// otherwise Limit is an upper bound (Value > Limit is the error).
	Min bool
}

// Error returns e.g. "verbs: send queue depth 100000 exceeds the device limit
// 16384 (max_qp_wr)" or "verbs: CQ depth 0 is below the minimum 1 (...)".
func (e *LimitError) Error() string {
	if e.Min {
		return fmt.Sprintf("verbs: %s %d is below the minimum %d (%s)", e.What, e.Value, e.Limit, e.Source)
	}
	return fmt.Sprintf("verbs: %s %d exceeds the device limit %d (%s)", e.What, e.Value, e.Limit, e.Source)
}

// checkMax returns a *LimitError when v > limit.
func checkMax(what string, v, limit int64, source string) error {
	if v > limit {
		return &LimitError{What: what, Value: v, Limit: limit, Source: source}
	}
	return nil
}

// checkMin returns a *LimitError when v < limit.
func checkMin(what string, v, limit int64, source string) error {
	if v < limit {
		return &LimitError{What: what, Value: v, Limit: limit, Source: source, Min: true}
	}
	return nil
}

// PostError is a failed ibv_post_send / ibv_post_recv / ibv_post_srq_recv.
// Index is the position in the caller's slice of the work request the
// provider rejected (bad_wr); requests before it were posted, requests from
// it on were not. ENOMEM means the queue is full.
//
// For Index 0 with ENOMEM or EINVAL the returned pointer is a shared,
// pre-allocated value (so a full queue costs no allocation): do not modify it.
type PostError struct {
	Op    string
	Errno syscall.Errno
	Index int
}

// Error returns e.g. "verbs: ibv_post_send: cannot allocate memory (ENOMEM) at work request 3".
func (e *PostError) Error() string {
	return fmt.Sprintf("verbs: %s: %s (%s) at work request %d", e.Op, e.Errno.Error(), errnoName(e.Errno), e.Index)
}

// Unwrap returns the errno.
func (e *PostError) Unwrap() error { return e.Errno }

// Is reports ErrNotSupported for EOPNOTSUPP, ENOSYS and EPROTONOSUPPORT.
func (e *PostError) Is(target error) bool {
	return target == ErrNotSupported && isNotSupportedErrno(e.Errno)
}

// Pre-boxed post errors for the common index-0 cases (see PostError).
var preboxedPost = map[string][2]*PostError{}

func init() {
	for _, op := range []string{opPostSend, opPostRecv, opPostSRQRecv} {
		preboxedPost[op] = [2]*PostError{
			{Op: op, Errno: syscall.ENOMEM},
			{Op: op, Errno: syscall.EINVAL},
		}
	}
}

const (
	opPostSend    = "ibv_post_send"
	opPostRecv    = "ibv_post_recv"
	opPostSRQRecv = "ibv_post_srq_recv"
)

// postError returns the error for a failed post; see PostError.
func postError(op string, n syscall.Errno, index int) error {
	if n == 0 {
		n = syscall.EIO
	}
	if index == 0 {
		switch n {
		case syscall.ENOMEM:
			return preboxedPost[op][0]
		case syscall.EINVAL:
			return preboxedPost[op][1]
		}
	}
	return &PostError{Op: op, Errno: n, Index: index}
}

// WCStatus is a work completion status (enum ibv_wc_status).
type WCStatus uint32

// Work completion statuses (values of enum ibv_wc_status).
const (
	WCSuccess WCStatus = iota
	WCLocLenErr
	WCLocQPOpErr
	WCLocEECOpErr
	WCLocProtErr
	WCWRFlushErr
	WCMWBindErr
	WCBadRespErr
	WCLocAccessErr
	WCRemInvReqErr
	WCRemAccessErr
	WCRemOpErr
	WCRetryExcErr
	WCRNRRetryExcErr
	WCLocRDDViolErr
	WCRemInvRDReqErr
	WCRemAbortErr
	WCInvEECNErr
	WCInvEECStateErr
	WCFatalErr
	WCRespTimeoutErr
	WCGeneralErr
	WCTMErr
	WCTMRndvIncomplete
)

// wcStatusNames is rdma-core's ibv_wc_status_str table (libibverbs/verbs.c).
var wcStatusNames = [...]string{
	WCSuccess:          "success",
	WCLocLenErr:        "local length error",
	WCLocQPOpErr:       "local QP operation error",
	WCLocEECOpErr:      "local EE context operation error",
	WCLocProtErr:       "local protection error",
	WCWRFlushErr:       "Work Request Flushed Error",
	WCMWBindErr:        "memory management operation error",
	WCBadRespErr:       "bad response error",
	WCLocAccessErr:     "local access error",
	WCRemInvReqErr:     "remote invalid request error",
	WCRemAccessErr:     "remote access error",
	WCRemOpErr:         "remote operation error",
	WCRetryExcErr:      "transport retry counter exceeded",
	WCRNRRetryExcErr:   "RNR retry counter exceeded",
	WCLocRDDViolErr:    "local RDD violation error",
	WCRemInvRDReqErr:   "remote invalid RD request",
	WCRemAbortErr:      "aborted error",
	WCInvEECNErr:       "invalid EE context number",
	WCInvEECStateErr:   "invalid EE context state",
	WCFatalErr:         "fatal error",
	WCRespTimeoutErr:   "response timeout error",
	WCGeneralErr:       "general error",
	WCTMErr:            "TM error",
	WCTMRndvIncomplete: "TM software rendezvous",
}

// String returns the same text as ibv_wc_status_str ("unknown" out of range).
func (s WCStatus) String() string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return "unknown"
}

// WCError is a work completion that finished with a non-success status.
type WCError struct {
	Status    WCStatus
	WRID      uint64
	VendorErr uint32
	QPN       uint32
	Opcode    WCOpcode
}

// Error returns e.g. "verbs: work completion wr_id=7 qpn=0x11 opcode=RDMA_WRITE: remote access error (status 10, vendor_err 0x0)".
func (e *WCError) Error() string {
	return fmt.Sprintf("verbs: work completion wr_id=%d qpn=%#x opcode=%s: %s (status %d, vendor_err %#x)",
		e.WRID, e.QPN, e.Opcode, e.Status, uint32(e.Status), e.VendorErr)
}

// Err returns nil for WCSuccess and a *WCError carrying only the status otherwise.
// Use (*WC).Err to get an error with the WR ID, QPN and opcode filled in.
func (s WCStatus) Err() error {
	if s == WCSuccess {
		return nil
	}
	return &WCError{Status: s}
}
