package verbs

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPortSpaceFor(t *testing.T) {
	ps, err := PortSpaceFor(TransportRC)
	require.NoError(t, err)
	assert.Equal(t, PortSpaceTCP, ps)
	ps, err = PortSpaceFor(TransportUD)
	require.NoError(t, err)
	assert.Equal(t, PortSpaceUDP, ps)
	_, err = PortSpaceFor(TransportUC)
	require.ErrorIs(t, err, ErrCMUC)
	assert.EqualError(t, err, "verbs: UC cannot be connected through rdma_cm")
	_, err = PortSpaceFor(Transport(7))
	assert.EqualError(t, err, "verbs: rdma_cm: invalid transport 7")
	assert.Equal(t, "TCP", PortSpaceTCP.String())
	assert.Equal(t, "UDP", PortSpaceUDP.String())
	assert.Equal(t, "port space 0x2", PortSpace(2).String())
}

func TestNodeTransportString(t *testing.T) {
	assert.Equal(t, "IB", NodeTransportIB.String())
	assert.Equal(t, "iWARP", NodeTransportIWARP.String())
	assert.Equal(t, "unknown", NodeTransportUnknown.String())
}

// fakeQP is an open-looking QP for the argument checks, which run before
// any library call (no kernel needed).
func fakeQP(t Transport) *QP { return &QP{transport: t, qpn: 0x11, id: 1} }

func TestCMArgumentChecks(t *testing.T) {
	dst := netip.MustParseAddrPort("192.0.2.1:7471")
	soon := time.Now().Add(time.Second)
	for _, tc := range []struct {
		name string
		call func() error
		want string
		is   error
	}{
		{"listen bad port space", func() error { _, err := ListenCM(dst, PortSpace(2)); return err },
			"verbs: rdma_cm listen: invalid port space 0x2 (want 0x106 TCP or 0x111 UDP)", nil},
		{"listen no address", func() error { _, err := ListenCM(netip.AddrPort{}, PortSpaceTCP); return err },
			`verbs: rdma_cm listen: no IP address given ("invalid AddrPort")`, nil},
		{"listen zone", func() error {
			_, err := ListenCM(netip.MustParseAddrPort("[fe80::1%eth0]:1"), PortSpaceTCP)
			return err
		}, "verbs: rdma_cm listen: address [fe80::1%eth0]:1 has a zone: give a global address", nil},
		{"dial port 0", func() error {
			_, err := DialCM(netip.MustParseAddrPort("192.0.2.1:0"), fakeQP(TransportRC), soon)
			return err
		},
			"verbs: rdma_cm connect: port 0 of 192.0.2.1:0: dial a listener's port (1-65535)", nil},
		{"dial unspecified", func() error {
			_, err := DialCM(netip.MustParseAddrPort("0.0.0.0:5"), fakeQP(TransportRC), soon)
			return err
		},
			"verbs: rdma_cm connect: cannot dial the unspecified address 0.0.0.0:5", nil},
		{"dial no QP", func() error { _, err := DialCM(dst, nil, soon); return err },
			"verbs: rdma_cm connect: no QP given", nil},
		{"dial closed QP", func() error { _, err := DialCM(dst, &QP{}, soon); return err },
			"verbs: QP: verbs: object is closed", ErrClosed},
		{"dial UC", func() error { _, err := DialCM(dst, fakeQP(TransportUC), soon); return err },
			"verbs: rdma_cm connect: QP 0x11: verbs: UC cannot be connected through rdma_cm", ErrCMUC},
		{"accept UD QP on a TCP listener", func() error {
			l := &CMListener{ps: PortSpaceTCP}
			_, err := l.Accept(fakeQP(TransportUD), soon)
			return err
		}, "verbs: rdma_cm accept: a UD QP needs the UDP port space, the listener has TCP", nil},
		{"accept UC", func() error {
			l := &CMListener{ps: PortSpaceTCP}
			_, err := l.Accept(fakeQP(TransportUC), soon)
			return err
		}, "verbs: rdma_cm accept: QP 0x11: verbs: UC cannot be connected through rdma_cm", ErrCMUC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.Error(t, err)
			assert.EqualError(t, err, tc.want)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Empty(t, Live(), "nothing may be created before the checks pass")
		})
	}
}

func TestCMErrorText(t *testing.T) {
	dst := netip.MustParseAddrPort("192.0.2.1:7471")
	for _, tc := range []struct {
		name string
		err  *CMError
		want string
		is   []error
		not  []error
	}{
		{"rejected, nobody listens", cmEventError("connect", dst, cmEvRejected, 8),
			"verbs: rdma_cm connect to 192.0.2.1:7471: RDMA_CM_EVENT_REJECTED (status 8: IB CM reason: invalid service ID: nobody listens on that port)",
			[]error{ErrCMRejected}, []error{ErrCMUnreachable, ErrCMTimedOut}},
		{"rejected by the application", cmEventError("connect", dst, cmEvRejected, 28),
			"verbs: rdma_cm connect to 192.0.2.1:7471: RDMA_CM_EVENT_REJECTED (status 28: IB CM reason: rejected by the peer's application)",
			[]error{ErrCMRejected}, nil},
		{"address error, timed out", cmEventError("resolve address", dst, cmEvAddrError, -int(syscall.ETIMEDOUT)),
			"verbs: rdma_cm resolve address to 192.0.2.1:7471: RDMA_CM_EVENT_ADDR_ERROR (status -110: connection timed out (ETIMEDOUT))",
			[]error{ErrCMTimedOut}, []error{ErrCMRejected, os.ErrDeadlineExceeded}},
		{"unreachable", cmEventError("connect", dst, cmEvUnreachable, -int(syscall.EINVAL)),
			"verbs: rdma_cm connect to 192.0.2.1:7471: RDMA_CM_EVENT_UNREACHABLE (status -22: invalid argument (EINVAL))",
			[]error{ErrCMUnreachable}, []error{ErrCMRejected}},
		{"route error", cmEventError("resolve route", dst, cmEvRouteError, -int(syscall.ENETUNREACH)),
			"verbs: rdma_cm resolve route to 192.0.2.1:7471: RDMA_CM_EVENT_ROUTE_ERROR (status -101: network is unreachable (ENETUNREACH))",
			[]error{ErrCMUnreachable}, nil},
		{"unexpected event", &CMError{Op: "connect", Addr: dst, Event: cmEventName(cmEvDeviceRemoval), Detail: "expected RDMA_CM_EVENT_CONNECT_RESPONSE"},
			"verbs: rdma_cm connect to 192.0.2.1:7471: RDMA_CM_EVENT_DEVICE_REMOVAL: expected RDMA_CM_EVENT_CONNECT_RESPONSE",
			nil, []error{ErrCMRejected, ErrCMUnreachable, ErrCMTimedOut}},
		{"failed call", cmCallError("listen", dst, "rdma_bind_addr", syscall.EADDRNOTAVAIL),
			"verbs: rdma_cm listen on 192.0.2.1:7471: rdma_bind_addr: cannot assign requested address (EADDRNOTAVAIL)",
			[]error{ErrCMUnreachable, syscall.EADDRNOTAVAIL}, nil},
		{"iWARP: rdma_connect refused", cmCallError("connect", dst, "rdma_connect", syscall.ECONNREFUSED),
			"verbs: rdma_cm connect to 192.0.2.1:7471: rdma_connect: connection refused (ECONNREFUSED): nobody listens on that port (iWARP: the TCP connect was refused)",
			[]error{ErrCMRejected, syscall.ECONNREFUSED}, []error{ErrCMUnreachable}},
		{"refused elsewhere", cmCallError("resolve address", dst, "rdma_resolve_addr", syscall.ECONNREFUSED),
			"verbs: rdma_cm resolve address to 192.0.2.1:7471: rdma_resolve_addr: connection refused (ECONNREFUSED)",
			[]error{ErrCMUnreachable}, []error{ErrCMRejected}},
		{"our deadline", cmTimeout("accept", dst, "RDMA_CM_EVENT_CONNECT_REQUEST"),
			"verbs: rdma_cm accept on 192.0.2.1:7471: verbs: rdma_cm: timed out: deadline passed waiting for RDMA_CM_EVENT_CONNECT_REQUEST",
			[]error{ErrCMTimedOut, os.ErrDeadlineExceeded}, nil},
		{"wrong device", &CMError{Op: "resolve address", Addr: dst, Kind: ErrCMWrongDevice, Detail: "rdma_cm chose device mlx5_0"},
			"verbs: rdma_cm resolve address to 192.0.2.1:7471: verbs: rdma_cm: address is on another device than the QP: rdma_cm chose device mlx5_0",
			[]error{ErrCMWrongDevice}, nil},
		{"unknown event", cmEventError("connect", dst, 99, 0),
			"verbs: rdma_cm connect to 192.0.2.1:7471: RDMA_CM_EVENT 99", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.EqualError(t, tc.err, tc.want)
			var ce *CMError
			require.True(t, errors.As(error(tc.err), &ce))
			for _, s := range tc.is {
				assert.ErrorIs(t, tc.err, s)
			}
			for _, s := range tc.not {
				assert.NotErrorIs(t, tc.err, s)
			}
		})
	}
}

func TestRCHello(t *testing.T) {
	b := rcHello(0xabcdef)
	require.Len(t, b, rcHelloLen)
	q, ok := parseRCHello(b)
	require.True(t, ok)
	assert.Equal(t, uint32(0xabcdef), q)
	padded := append(append([]byte{}, b...), make([]byte, 48)...) // IB/RoCE pad to 56 bytes
	q, ok = parseRCHello(padded)
	require.True(t, ok)
	assert.Equal(t, uint32(0xabcdef), q)
	for _, bad := range [][]byte{nil, b[:rcHelloLen-1], append([]byte("rbUD"), b[4:]...), rcHello(0), rcHello(0x1000000)} {
		_, ok := parseRCHello(bad)
		assert.False(t, ok, "%x", bad)
	}
}

func TestRequesterQPN(t *testing.T) {
	ud := udHello(0x77, CMQKey, 0, GID{})
	for _, tc := range []struct {
		name   string
		ud     bool
		reqQPN uint32
		pdata  []byte
		want   uint32
		why    string
	}{
		{"iWARP RC: the hello's QPN", false, 0, rcHello(0x12), 0x12, ""},
		{"RoCE RC: hello and request agree", false, 0x12, append(rcHello(0x12), make([]byte, 48)...), 0x12, ""},
		{"RoCE RC: hello contradicts the request", false, 0x13, rcHello(0x12), 0, "names QPN 0x12 in its private data but carries QPN 0x13"},
		{"RoCE RC without a hello: the request's QPN", false, 0x13, make([]byte, 56), 0x13, ""},
		{"iWARP RC without a hello", false, 0, nil, 0, "carries no QPN"},
		{"malformed RC hello", false, 0, []byte("rbRC\x00"), 0, "malformed (5 bytes, want 8"},
		{"UD hello", true, 0, ud, 0x77, ""},
		{"UD without a hello", true, 0, nil, 0, `no "rbUD" private data (0 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, why := requesterQPN(tc.ud, tc.reqQPN, tc.pdata)
			if tc.why != "" {
				assert.Contains(t, why, tc.why)
				assert.Zero(t, q)
				return
			}
			assert.Empty(t, why)
			assert.Equal(t, tc.want, q)
		})
	}
}

func TestUDHello(t *testing.T) {
	gid := GID{0: 0xfe, 15: 1}
	b := udHello(0x1234, CMQKey, 7, gid)
	require.Len(t, b, udHelloLen)
	qpn, qkey, lid, g, ok := parseUDHello(b)
	require.True(t, ok)
	assert.Equal(t, uint32(0x1234), qpn)
	assert.Equal(t, uint32(CMQKey), qkey)
	assert.Equal(t, uint16(7), lid)
	assert.Equal(t, gid, g)
	for _, bad := range [][]byte{nil, b[:udHelloLen-1], append([]byte("xxxx"), b[4:]...)} {
		_, _, _, _, ok := parseUDHello(bad)
		assert.False(t, ok, "%x", bad)
	}
}

func TestMsUntil(t *testing.T) {
	assert.Equal(t, 1, msUntil(time.Now().Add(-time.Hour)), "a passed deadline still gives the library 1 ms")
	ms := msUntil(time.Now().Add(2 * time.Second))
	assert.InDelta(t, 2000, ms, 50)
}

func TestIPv4OfGIDs(t *testing.T) {
	v4 := func(s string) GID { return GID(netip.MustParseAddr("::ffff:" + s).As16()) }
	ll := GID(netip.MustParseAddr("fe80::1").As16())
	a, ok := ipv4OfGIDs([]GIDEntry{{0, ll, GIDTypeRoCEv2}, {1, v4("192.0.2.1"), GIDTypeRoCEv1}, {2, v4("192.0.2.2"), GIDTypeRoCEv2}})
	require.True(t, ok)
	assert.Equal(t, "192.0.2.2", a.String(), "a RoCEv2 entry wins")
	a, ok = ipv4OfGIDs([]GIDEntry{{0, ll, GIDTypeRoCEv2}, {1, v4("192.0.2.1"), GIDTypeRoCEv1}})
	require.True(t, ok)
	assert.Equal(t, "192.0.2.1", a.String())
	_, ok = ipv4OfGIDs([]GIDEntry{{0, ll, GIDTypeRoCEv2}})
	assert.False(t, ok)
}

func TestIWARPIPv4(t *testing.T) {
	mac := net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	var g0 GID
	copy(g0[:], mac)
	gids := []GIDEntry{{0, g0, GIDTypeIB}}
	pfx := func(s string) netip.Prefix { return netip.MustParsePrefix(s) }
	lo := netIface{Name: "lo", Addrs: []netip.Prefix{pfx("127.0.0.1/8")}}
	other := netIface{Name: "eth1", MAC: net.HardwareAddr{0x52, 0x54, 0, 0, 0, 1}, Addrs: []netip.Prefix{pfx("198.51.100.1/24")}}
	for _, tc := range []struct {
		name    string
		gids    []GIDEntry
		ifs     []netIface
		want    string
		wantErr []string
	}{
		{"the netdev's first IPv4", gids, []netIface{lo, other, {Name: "veth0", MAC: mac, Addrs: []netip.Prefix{pfx("fe80::1/64"), pfx("192.0.2.1/24"), pfx("192.0.2.9/24")}}}, "192.0.2.1", nil},
		{"netdev without IPv4", gids, []netIface{lo, {Name: "veth0", MAC: mac, Addrs: []netip.Prefix{pfx("fe80::1/64")}}}, "", []string{"siw0 port 1", "netdev veth0", "52:54:00:12:34:56", "no IPv4 address"}},
		{"no interface with the MAC", gids, []netIface{lo, other}, "", []string{"siw0 port 1", "no network interface has MAC 52:54:00:12:34:56"}},
		{"no GID 0", []GIDEntry{{1, g0, GIDTypeIB}}, []netIface{lo}, "", []string{"siw0 port 1", "no GID 0"}},
		{"zero MAC", []GIDEntry{{0, GID{15: 1}, GIDTypeIB}}, []netIface{lo}, "", []string{"siw0 port 1", "holds no MAC"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := iwarpIPv4("siw0", 1, tc.gids, tc.ifs)
			if tc.wantErr != nil {
				require.Error(t, err)
				for _, w := range tc.wantErr {
					assert.Contains(t, err.Error(), w)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, a.String())
		})
	}
}

func TestNetInterfacesListsLoopback(t *testing.T) {
	ifs, err := netInterfaces()
	require.NoError(t, err)
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
		if i.Name == "lo" {
			assert.Contains(t, i.Addrs, netip.MustParsePrefix("127.0.0.1/8"))
		}
	}
	assert.NotEmpty(t, names)
}
