package verbs

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWCStatusString(t *testing.T) {
	for _, tc := range []struct {
		s    WCStatus
		want string
	}{
		{WCSuccess, "success"},
		{WCLocLenErr, "local length error"},
		{WCWRFlushErr, "Work Request Flushed Error"},
		{WCRemAccessErr, "remote access error"},
		{WCRetryExcErr, "transport retry counter exceeded"},
		{WCRNRRetryExcErr, "RNR retry counter exceeded"},
		{WCTMRndvIncomplete, "TM software rendezvous"},
		{WCStatus(24), "unknown"},
		{WCStatus(1 << 31), "unknown"},
	} {
		assert.Equal(t, tc.want, tc.s.String(), "status %d", uint32(tc.s))
	}
}

func TestWCStatusErr(t *testing.T) {
	assert.NoError(t, WCSuccess.Err())
	err := WCRemAccessErr.Err()
	var wce *WCError
	require.ErrorAs(t, err, &wce)
	assert.Equal(t, WCRemAccessErr, wce.Status)

	wc := WC{ID: 7, Status: WCWRFlushErr, QPN: 0x11, VendorErr: 0x244, Opcode: WCRecv}
	assert.Equal(t, "verbs: work completion wr_id=7 qpn=0x11 opcode=RECV: Work Request Flushed Error (status 5, vendor_err 0x244)",
		wc.Err().Error())
	assert.NoError(t, (&WC{}).Err())
}

func TestStringers(t *testing.T) {
	for _, tc := range []struct {
		got  fmt.Stringer
		want string
	}{
		{TransportRC, "RC"}, {TransportUC, "UC"}, {TransportUD, "UD"}, {Transport(9), "9"},
		{OpSend, "SEND"}, {OpSendImm, "SEND_WITH_IMM"}, {OpWrite, "RDMA_WRITE"}, {OpWriteImm, "RDMA_WRITE_WITH_IMM"},
		{OpRead, "RDMA_READ"}, {OpFetchAdd, "ATOMIC_FETCH_AND_ADD"}, {OpCmpSwap, "ATOMIC_CMP_AND_SWP"},
		{WCSend, "SEND"}, {WCRDMAWrite, "RDMA_WRITE"}, {WCRDMARead, "RDMA_READ"}, {WCCompSwap, "COMP_SWAP"},
		{WCFetchAdd, "FETCH_ADD"}, {WCRecv, "RECV"}, {WCRecvRDMAWithImm, "RECV_RDMA_WITH_IMM"}, {WCOpcode(6), "WC_OPCODE(6)"},
		{QPSReset, "RESET"}, {QPSInit, "INIT"}, {QPSRTR, "RTR"}, {QPSRTS, "RTS"}, {QPSSQD, "SQD"}, {QPSSQE, "SQE"}, {QPSErr, "ERR"},
		{PortActive, "ACTIVE"}, {PortDown, "DOWN"},
		{GIDTypeIB, "IB"}, {GIDTypeRoCEv1, "RoCE v1"}, {GIDTypeRoCEv2, "RoCE v2"},
		{AtomicNone, "none"}, {AtomicHCA, "hca"}, {AtomicGlobal, "global"},
		{AccessLocalWrite | AccessRemoteRead, "LOCAL_WRITE|REMOTE_READ"}, {Access(0), "0"}, {Access(1 << 5), "0x20"},
		{FlagSignaled | FlagInline, "SIGNALED|INLINE"}, {WCGRH | WCWithImm, "GRH|WITH_IMM"},
	} {
		assert.Equal(t, tc.want, tc.got.String(), "%T(%#v)", tc.got, tc.got)
	}
}

func TestOpcodeRemoteAccess(t *testing.T) {
	for _, tc := range []struct {
		op   Opcode
		want Access
	}{
		{OpSend, 0},
		{OpSendImm, 0},
		{OpWrite, AccessRemoteWrite},
		{OpWriteImm, AccessRemoteWrite},
		{OpRead, AccessRemoteRead},
		{OpFetchAdd, AccessRemoteAtomic},
		{OpCmpSwap, AccessRemoteAtomic},
	} {
		assert.Equal(t, tc.want, tc.op.RemoteAccess(), tc.op.String())
	}
}

func TestFlagValuesMatchIBV(t *testing.T) {
	// IBV_ACCESS_* and IBV_WC_* values from verbs.h.
	assert.Equal(t, Access(1), AccessLocalWrite)
	assert.Equal(t, Access(2), AccessRemoteWrite)
	assert.Equal(t, Access(4), AccessRemoteRead)
	assert.Equal(t, Access(8), AccessRemoteAtomic)
	assert.Equal(t, WCOpcode(128), WCRecv)
	assert.Equal(t, WCOpcode(129), WCRecvRDMAWithImm)
	assert.Equal(t, WCFlags(2), WCWithImm)
}

func TestParseTransport(t *testing.T) {
	for in, want := range map[string]Transport{"RC": TransportRC, "uc": TransportUC, "Ud": TransportUD} {
		got, err := ParseTransport(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseTransport("XRC")
	assert.ErrorContains(t, err, `unknown transport "XRC"`)
}

func TestErrorMessages(t *testing.T) {
	e := &Error{Op: "ibv_create_qp", Errno: syscall.ENOMEM}
	assert.Equal(t, "verbs: ibv_create_qp: cannot allocate memory (ENOMEM)", e.Error())
	assert.ErrorIs(t, e, syscall.ENOMEM)
	assert.NotErrorIs(t, e, ErrNotSupported)
	for _, n := range []syscall.Errno{syscall.EOPNOTSUPP, syscall.ENOSYS, syscall.EPROTONOSUPPORT} {
		assert.ErrorIs(t, fmt.Errorf("wrapped: %w", &Error{Op: "x", Errno: n}), ErrNotSupported, n.Error())
		assert.ErrorIs(t, &PostError{Op: "x", Errno: n}, ErrNotSupported)
	}
	assert.Equal(t, "verbs: send queue depth 100000 exceeds the device limit 16384 (max_qp_wr)",
		checkMax("send queue depth", 100000, 16384, "max_qp_wr").Error())
	assert.Equal(t, "verbs: CQ depth 0 is below the minimum 1 (NewCQ depth)",
		checkMin("CQ depth", 0, 1, "NewCQ depth").Error())
	assert.NoError(t, checkMax("x", 5, 5, "s"))
	assert.NoError(t, checkMin("x", 5, 5, "s"))
	assert.ErrorIs(t, newError("ibv_x", 0), syscall.EIO, "a zero errno must not read as success")
}

func TestPostErrorPreboxed(t *testing.T) {
	a := postError(opPostSend, syscall.ENOMEM, 0)
	b := postError(opPostSend, syscall.ENOMEM, 0)
	assert.Same(t, a, b, "index-0 ENOMEM must be pre-boxed")
	assert.Equal(t, "verbs: ibv_post_send: cannot allocate memory (ENOMEM) at work request 0", a.Error())
	assert.ErrorIs(t, a, syscall.ENOMEM)
	var pe *PostError
	require.ErrorAs(t, postError(opPostRecv, syscall.EINVAL, 3), &pe)
	assert.Equal(t, PostError{Op: opPostRecv, Errno: syscall.EINVAL, Index: 3}, *pe)
	n := testing.AllocsPerRun(100, func() { _ = postError(opPostSend, syscall.ENOMEM, 0) })
	assert.Zero(t, n)
}

// testAttr is a plausible device (rxe-like limits).
var testAttr = DeviceAttr{
	MaxQPWR: 16384, MaxSGE: 32, MaxCQE: 32767, MaxInline: 256, MaxSRQWR: 1024, MaxSRQSGE: 27,
	MaxQPRdAtom: 128, MaxQPInitRdAtom: 128, PhysPortCnt: 1,
}

func TestQPConfigValidate(t *testing.T) {
	cq := &CQ{}
	ok := QPConfig{Transport: TransportRC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 128, MaxRecvWR: 128}
	with := func(f func(*QPConfig)) QPConfig { c := ok; f(&c); return c }
	for _, tc := range []struct {
		name string
		cfg  QPConfig
		want string // "" = valid
	}{
		{"ok", ok, ""},
		{"ok with SRQ and no recv WRs", with(func(c *QPConfig) { c.SRQ = &SRQ{}; c.MaxRecvWR = 0; c.MaxRecvSGE = 999 }), ""},
		{"send-only", with(func(c *QPConfig) { c.MaxRecvWR = 0 }), ""},
		{"inline at limit", with(func(c *QPConfig) { c.MaxInline = 256 }), ""},
		{"bad transport", with(func(c *QPConfig) { c.Transport = 7 }), "invalid transport 7"},
		{"no send CQ", with(func(c *QPConfig) { c.SendCQ = nil }), "needs both SendCQ and RecvCQ (send false, recv true)"},
		{"send depth too big", with(func(c *QPConfig) { c.MaxSendWR = 100000 }),
			"verbs: send queue depth 100000 exceeds the device limit 16384 (max_qp_wr)"},
		{"send depth zero", with(func(c *QPConfig) { c.MaxSendWR = 0 }), "send queue depth 0 is below the minimum 1"},
		{"recv depth too big", with(func(c *QPConfig) { c.MaxRecvWR = 16385 }), "receive queue depth 16385 exceeds the device limit 16384"},
		{"send SGE", with(func(c *QPConfig) { c.MaxSendSGE = 33 }), "send SGEs per WR 33 exceeds the device limit 32 (max_sge)"},
		{"recv SGE", with(func(c *QPConfig) { c.MaxRecvSGE = 40 }), "receive SGEs per WR 40 exceeds the device limit 32"},
		{"inline", with(func(c *QPConfig) { c.MaxInline = 257 }), "max inline data 257 exceeds the device limit 256 (probed max_inline_data)"},
		{"negative inline", with(func(c *QPConfig) { c.MaxInline = -1 }), "max inline data -1 is below the minimum 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate(testAttr)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestValidateCQAndSRQ(t *testing.T) {
	assert.NoError(t, validateCQDepth(1, testAttr))
	assert.ErrorContains(t, validateCQDepth(0, testAttr), "CQ depth 0 is below the minimum 1")
	assert.ErrorContains(t, validateCQDepth(32768, testAttr), "CQ depth 32768 exceeds the device limit 32767 (max_cqe)")
	assert.NoError(t, validateSRQ(1024, 1, testAttr))
	assert.ErrorContains(t, validateSRQ(1025, 1, testAttr), "SRQ depth 1025 exceeds the device limit 1024 (max_srq_wr)")
	assert.ErrorContains(t, validateSRQ(1, 28, testAttr), "SRQ SGEs per WR 28 exceeds the device limit 27 (max_srq_sge)")
}

func TestValidateSendWR(t *testing.T) {
	caps := QPCaps{MaxSendWR: 64, MaxSendSGE: 2, MaxInline: 64}
	sge := SGE{Addr: 0x1000, Length: 8, LKey: 1}
	send := SendWR{Op: OpSend, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}}
	with := func(f func(*SendWR)) SendWR { w := send; f(&w); return w }
	atomic := with(func(w *SendWR) { w.Op = OpFetchAdd; w.RemoteAddr = 0x2000 })
	for _, tc := range []struct {
		name string
		t    Transport
		wr   SendWR
		want string
	}{
		{"send", TransportRC, send, ""},
		{"fetch add", TransportRC, atomic, ""},
		{"inline at limit", TransportRC, with(func(w *SendWR) { w.Flags = FlagInline; w.SGE[0].Length = 64 }), ""},
		{"UD send", TransportUD, with(func(w *SendWR) { w.UD = UDDest{ah: 1} }), ""},
		{"bad opcode", TransportRC, with(func(w *SendWR) { w.Op = 9 }), "invalid opcode 9"},
		{"too many SGEs", TransportRC, with(func(w *SendWR) { w.NumSGE = 5 }), "SGEs in one work request 5 exceeds the device limit 4 (verbs.MaxWRSGE)"},
		{"more SGEs than QP", TransportRC, with(func(w *SendWR) { w.NumSGE = 3 }), "SGEs in one work request 3 exceeds the device limit 2 (QP max_send_sge)"},
		{"inline too big", TransportRC, with(func(w *SendWR) { w.Flags = FlagInline; w.NumSGE = 2; w.SGE[1].Length = 57 }),
			"inline payload bytes 65 exceeds the device limit 64 (QP max_inline_data)"},
		{"unaligned atomic", TransportRC, with(func(w *SendWR) { *w = atomic; w.RemoteAddr = 0x2004 }), "0x2004 is not 8-byte aligned"},
		{"atomic length", TransportRC, with(func(w *SendWR) { *w = atomic; w.SGE[0].Length = 4 }), "atomic needs exactly one 8-byte SGE"},
		{"atomic on UC", TransportUC, atomic, "ATOMIC_FETCH_AND_ADD is not allowed on a UC QP"},
		{"read on UC", TransportUC, with(func(w *SendWR) { w.Op = OpRead }), "RDMA_READ is not allowed on a UC QP"},
		{"write on UD", TransportUD, with(func(w *SendWR) { w.Op = OpWrite; w.UD = UDDest{ah: 1} }), "RDMA_WRITE is not allowed on a UD QP"},
		{"UD without dest", TransportUD, send, "UD send without a destination"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validateSendWR(&tc.wr, tc.t, &caps)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
	n := testing.AllocsPerRun(100, func() { _ = validateSendWR(&send, TransportRC, &caps) })
	assert.Zero(t, n, "validating a good WR must not allocate")
}

func TestResolveConnect(t *testing.T) {
	eth := PortAttr{ActiveMTU: 1024, MaxMTU: 4096, LinkLayer: LinkLayerEthernet, GIDTableLen: 16}
	remote := Endpoint{QPN: 5, GID: GID{0: 0xfe, 1: 0x80, 15: 1}}
	r, err := resolveConnect(ConnectConfig{Port: 1, Remote: remote}, TransportRC, testAttr, eth)
	require.NoError(t, err)
	assert.Equal(t, 3, r.mtuCode, "active MTU 1024 = IBV_MTU_1024")
	assert.True(t, r.useGRH)
	assert.Equal(t, 128, r.rdAtomic)
	assert.Equal(t, ConnectConfig{Port: 1, Remote: remote, Timeout: 14, RetryCount: 7, RNRRetry: 7, MinRNRTimer: 12, QKey: DefaultQKey}, r.cfg)

	r, err = resolveConnect(ConnectConfig{Port: 1, MTU: 4096, MaxRdAtomic: 4, Remote: remote, Timeout: 20}, TransportRC, testAttr, eth)
	require.NoError(t, err)
	assert.Equal(t, 5, r.mtuCode)
	assert.Equal(t, 4, r.rdAtomic)
	assert.Equal(t, 4, r.destAtomic)
	assert.Equal(t, uint8(20), r.cfg.Timeout)

	for _, tc := range []struct {
		name string
		cfg  ConnectConfig
		t    Transport
		want string
	}{
		{"port 0", ConnectConfig{Port: 0, Remote: remote}, TransportRC, "port number 0 is below the minimum 1"},
		{"port 2", ConnectConfig{Port: 2, Remote: remote}, TransportRC, "port number 2 exceeds the device limit 1 (phys_port_cnt)"},
		{"odd MTU", ConnectConfig{Port: 1, MTU: 1500, Remote: remote}, TransportRC, "MTU 1500 is not one of"},
		{"rd atomic", ConnectConfig{Port: 1, MaxRdAtomic: 200, Remote: remote}, TransportRC, "outstanding RDMA reads/atomics 200 exceeds the device limit 128"},
		{"RoCE without GID", ConnectConfig{Port: 1}, TransportUC, "remote GID is zero"},
		{"GID index", ConnectConfig{Port: 1, GIDIndex: 16, Remote: remote}, TransportRC, "GID index 16 exceeds the device limit 15"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolveConnect(tc.cfg, tc.t, testAttr, eth)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err = resolveConnect(ConnectConfig{Port: 1}, TransportUD, testAttr, eth)
	assert.NoError(t, err, "UD needs no remote")
}

func TestPortConversions(t *testing.T) {
	for code, bytes := range map[int]int{1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096} {
		assert.Equal(t, bytes, mtuBytes(code))
		assert.Equal(t, code, mtuCode(bytes))
	}
	assert.Zero(t, mtuBytes(0))
	assert.Zero(t, mtuCode(1500))
	assert.Equal(t, "25 Gb/s", speedName(32))
	assert.Equal(t, "2.5 Gb/s", speedName(1))
	assert.Equal(t, "code 3", speedName(3))
	assert.Equal(t, 4, widthLanes(2))
	assert.Equal(t, 1, widthLanes(1))
	assert.Zero(t, widthLanes(3))
	assert.Equal(t, "Ethernet", linkLayerName(2))
	assert.Equal(t, "InfiniBand", linkLayerName(1))
}

func mustGID(t *testing.T, s string) GID {
	t.Helper()
	a, err := netip.ParseAddr(s)
	require.NoError(t, err)
	return GID(a.As16())
}

func TestGIDStringAndZero(t *testing.T) {
	g := mustGID(t, "::ffff:10.0.2.15")
	assert.Equal(t, "::ffff:10.0.2.15", g.String())
	assert.Equal(t, "fe80::5054:ff:fe12:3456", mustGID(t, "fe80::5054:ff:fe12:3456").String())
	assert.True(t, GID{}.IsZero())
	assert.False(t, g.IsZero())
}

func TestScoreAndPickGID(t *testing.T) {
	ll := mustGID(t, "fe80::5054:ff:fe12:3456")
	v4 := mustGID(t, "::ffff:10.0.2.15")
	global := mustGID(t, "2001:db8::1")
	for _, tc := range []struct {
		e    GIDEntry
		want int
	}{
		{GIDEntry{GID: ll, Type: GIDTypeRoCEv1}, 1},
		{GIDEntry{GID: ll, Type: GIDTypeRoCEv2}, 2},
		{GIDEntry{GID: v4, Type: GIDTypeRoCEv1}, 111},
		{GIDEntry{GID: v4, Type: GIDTypeRoCEv2}, 112},
		{GIDEntry{GID: global, Type: GIDTypeRoCEv2}, 12},
		{GIDEntry{GID: global, Type: GIDTypeIB}, 10},
	} {
		assert.Equal(t, tc.want, ScoreGID(tc.e), "%s %s", tc.e.GID, tc.e.Type)
	}

	rxe := []GIDEntry{ // what rxe on a qemu NIC typically shows
		{Index: 0, GID: ll, Type: GIDTypeRoCEv1},
		{Index: 1, GID: ll, Type: GIDTypeRoCEv2},
		{Index: 2, GID: v4, Type: GIDTypeRoCEv1},
		{Index: 3, GID: v4, Type: GIDTypeRoCEv2},
	}
	best, err := PickBestGID(rxe, LinkLayerEthernet)
	require.NoError(t, err)
	assert.Equal(t, 3, best.Index)

	best, err = PickBestGID(rxe[:2], LinkLayerEthernet)
	require.NoError(t, err)
	assert.Equal(t, 1, best.Index, "link-local only: RoCE v2 wins")

	tie := []GIDEntry{{Index: 5, GID: global, Type: GIDTypeRoCEv2}, {Index: 4, GID: global, Type: GIDTypeRoCEv2}}
	best, err = PickBestGID(tie, LinkLayerEthernet)
	require.NoError(t, err)
	assert.Equal(t, 4, best.Index, "ties go to the lowest index")

	best, err = PickBestGID([]GIDEntry{{Index: 0, GID: ll}, {Index: 1, GID: global}}, LinkLayerInfiniBand)
	require.NoError(t, err)
	assert.Equal(t, 0, best.Index, "IB uses index 0")

	_, err = PickBestGID([]GIDEntry{{Index: 0}}, LinkLayerEthernet)
	assert.ErrorContains(t, err, "no usable GID among 1 table entries")
}

func TestParseGIDType(t *testing.T) {
	for in, want := range map[string]GIDType{"IB/RoCE v1\n": GIDTypeRoCEv1, "RoCE v2\n": GIDTypeRoCEv2, "IB": GIDTypeIB} {
		got, err := parseGIDType(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := parseGIDType("RoCE v3")
	assert.Error(t, err)
}

func TestProviderName(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "mlx5_0", "device"), 0o755))
	require.NoError(t, os.Symlink("../../../../bus/pci/drivers/mlx5_core", filepath.Join(root, "mlx5_0", "device", "driver")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "rxe0"), 0o755))
	assert.Equal(t, "mlx5", providerName(root, "mlx5_0"))
	assert.Equal(t, "rxe", providerName(root, "rxe0"))
	assert.Equal(t, "siw", providerName(root, "siw12"))
}

func TestLayoutMatchesCShim(t *testing.T) {
	// The C side pins the same numbers with _Static_assert in verbs_cgo.go.
	var s SendWR
	assert.Equal(t, uintptr(128), unsafe.Sizeof(s))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(s.Op))
	assert.Equal(t, uintptr(9), unsafe.Offsetof(s.Flags))
	assert.Equal(t, uintptr(10), unsafe.Offsetof(s.NumSGE))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(s.SGE))
	assert.Equal(t, uintptr(80), unsafe.Offsetof(s.RemoteAddr))
	assert.Equal(t, uintptr(88), unsafe.Offsetof(s.RKey))
	assert.Equal(t, uintptr(92), unsafe.Offsetof(s.Imm))
	assert.Equal(t, uintptr(96), unsafe.Offsetof(s.CompareAdd))
	assert.Equal(t, uintptr(104), unsafe.Offsetof(s.Swap))
	assert.Equal(t, uintptr(112), unsafe.Offsetof(s.UD))
	assert.Equal(t, uintptr(16), unsafe.Sizeof(SGE{}), "ibv_sge is 16 bytes")
	var r RecvWR
	assert.Equal(t, uintptr(80), unsafe.Sizeof(r))
	assert.Equal(t, uintptr(8), unsafe.Offsetof(r.NumSGE))
	assert.Equal(t, uintptr(16), unsafe.Offsetof(r.SGE))
	var wc WC
	assert.Equal(t, uintptr(40), unsafe.Sizeof(wc))
	assert.Equal(t, uintptr(36), unsafe.Offsetof(wc.VendorErr))
}

func TestAccountingAndCloseOrder(t *testing.T) {
	require.Empty(t, Live())
	parent := track(KindPD)
	child := track(KindMR, parent)
	live := Live()
	require.Len(t, live, 2)
	assert.Equal(t, KindPD, live[0].Kind)
	assert.Contains(t, live[0].Created, "verbs_host_test.go:")
	err := childrenError("protection domain", parent)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot close protection domain: 1 objects created from it are still open: mr #")
	assert.Contains(t, err.Error(), "verbs_host_test.go:")
	untrack(child)
	assert.NoError(t, childrenError("protection domain", parent))
	untrack(parent)
	assert.Empty(t, Live())
}

func TestZeroValueObjectsAreClosed(t *testing.T) {
	for _, c := range []interface{ Close() error }{&Device{}, &PD{}, &MR{}, &CQ{}, &Channel{}, &QP{}, &AH{}, &SRQ{}, &Buffer{}} {
		assert.NoError(t, c.Close(), "%T", c)
	}
	assert.ErrorIs(t, (&QP{}).PostSend(make([]SendWR, 1)), ErrClosed)
	assert.ErrorIs(t, (&QP{}).PostRecv(make([]RecvWR, 1)), ErrClosed)
	assert.ErrorIs(t, (&SRQ{}).PostRecv(make([]RecvWR, 1)), ErrClosed)
	_, err := (&CQ{}).Poll(make([]WC, 1))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = (&Device{}).AllocPD()
	assert.ErrorIs(t, err, ErrClosed)
}

func TestErrorTextNamesErrno(t *testing.T) {
	assert.True(t, strings.HasSuffix(newError("ibv_reg_mr", syscall.EFAULT).Error(), "(EFAULT)"))
	assert.True(t, errors.Is(newError("op", syscall.EAGAIN), syscall.EAGAIN))
}

func TestWRBuilders(t *testing.T) {
	sge := SGE{Addr: 0x1000, Length: 64, LKey: 7}
	tests := []struct {
		name string
		got  SendWR
		want SendWR
	}{
		{"write", Write(sge, 0x2000, 9), SendWR{Op: OpWrite, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, RemoteAddr: 0x2000, RKey: 9}},
		{"read signaled", Read(sge, 0x2000, 9).Signaled(), SendWR{Op: OpRead, Flags: FlagSignaled, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, RemoteAddr: 0x2000, RKey: 9}},
		{"send inline signaled", Send(sge).Inline().Signaled(), SendWR{Op: OpSend, Flags: FlagSignaled | FlagInline, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}}},
		{"send imm", Send(sge).WithImm(5), SendWR{Op: OpSendImm, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, Imm: 5}},
		{"write imm", Write(sge, 1, 2).WithImm(5), SendWR{Op: OpWriteImm, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, RemoteAddr: 1, RKey: 2, Imm: 5}},
		{"read ignores imm", Read(sge, 1, 2).WithImm(5), SendWR{Op: OpRead, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, RemoteAddr: 1, RKey: 2}},
		{"ud", Send(sge).To(UDDest{QPN: 3, QKey: 4}), SendWR{Op: OpSend, NumSGE: 1, SGE: [MaxWRSGE]SGE{sge}, UD: UDDest{QPN: 3, QKey: 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, tt.got) })
	}
	assert.Equal(t, 0.0, testing.AllocsPerRun(100, func() { _ = Write(sge, 1, 2).Signaled() }))
}
