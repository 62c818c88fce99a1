//go:build linux

package loopback

import (
	"net"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// inNetns runs f on a thread in a network namespace of its own (root
// only), so that the test touches none of the host's interfaces; the
// thread ends with f.
func inNetns(t *testing.T, f func()) {
	t.Helper()
	done := make(chan bool)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- false
			return
		}
		probe := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "probe0"}, PeerName: "probe1"}
		if err := netlink.LinkAdd(probe); err != nil {
			done <- false // no veth in this kernel
			return
		}
		netlink.LinkDel(probe)
		defer func() { done <- true }()
		f()
	}()
	if !<-done {
		t.Skip("needs root, network namespaces and veth")
	}
}

// TestEnsureVeth: the native rxe's veth pair is made with its address,
// up, replaces a leftover of the same name, and is removed by Close.
func TestEnsureVeth(t *testing.T) {
	inNetns(t, func() {
		// A leftover from a run that died.
		require.NoError(t, netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: HostVethName}, PeerName: HostVethPeer}))
		v, err := EnsureVeth(HostVethName, HostVethPeer, HostVethAddr)
		require.NoError(t, err)
		l, err := netlink.LinkByName(HostVethName)
		require.NoError(t, err)
		assert.NotZero(t, l.Attrs().Flags&net.FlagUp, "up")
		addrs, err := netlink.AddrList(l, netlink.FAMILY_V4)
		require.NoError(t, err)
		require.Len(t, addrs, 1)
		assert.Equal(t, HostVethAddr, addrs[0].IPNet.String())
		require.NoError(t, v.Close())
		require.NoError(t, v.Close(), "twice is harmless")
		_, err = netlink.LinkByName(HostVethName)
		assert.Error(t, err, "deleted")
		_, err = netlink.LinkByName(HostVethPeer)
		assert.Error(t, err, "its peer too")

		// An interface of that name that is not a veth is left alone.
		_, err = EnsureVeth("lo", HostVethPeer, HostVethAddr)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "lo exists and is not a veth")
		_, err = netlink.LinkByName("lo")
		assert.NoError(t, err)
	})
}
