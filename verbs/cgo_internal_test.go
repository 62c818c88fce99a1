//go:build linux && cgo

package verbs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestWCStatusMatchesLibibverbs compares the Go table with the installed
// library's ibv_wc_status_str (no device needed).
func TestWCStatusMatchesLibibverbs(t *testing.T) {
	for s := WCSuccess; s <= WCTMRndvIncomplete+1; s++ {
		assert.Equal(t, cWCStatusStr(s), s.String(), "status %d", uint32(s))
	}
}

// TestDevicesWithoutRDMA checks that a kernel without RDMA yields an empty
// list (or devices, inside the VM), never an error.
func TestDevicesWithoutRDMA(t *testing.T) {
	_, err := Devices()
	assert.NoError(t, err)
}
