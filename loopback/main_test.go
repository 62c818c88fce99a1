package loopback

import (
	"os"
	"testing"
)

// TestMain lets the test binary be the guest agent of the VM tests: in the
// guest it runs as "loopback.test rdmabench-guest-agent JOB" and
// MaybeGuest takes over.
func TestMain(m *testing.M) {
	MaybeGuest()
	os.Exit(m.Run())
}
