//go:build !(linux && cgo)

package verbs

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCMStubsReturnNotSupported(t *testing.T) {
	l, err := ListenCM(netip.MustParseAddrPort("192.0.2.1:0"), PortSpaceTCP)
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.Nil(t, l)
	c, err := DialCM(netip.MustParseAddrPort("192.0.2.1:7471"), fakeQP(TransportRC), time.Now().Add(time.Second))
	assert.ErrorIs(t, err, ErrNotSupported)
	assert.Nil(t, c)
	assert.Empty(t, Live())
}
