package loopback

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLinkAddHint(t *testing.T) {
	tests := []struct {
		link string
		err  error
		want string
	}{
		{LinkRxe, syscall.ENOENT, " (is the crc32 crypto transform available? try: modprobe crc32_generic)"},
		{LinkRxe, fmt.Errorf("netlink: %w", syscall.ENOENT), " (is the crc32 crypto transform available? try: modprobe crc32_generic)"},
		{LinkRxe, syscall.EEXIST, ""},
		{LinkSiw, syscall.EEXIST, " (a siw device already runs on veth0: rdma link show)"},
		{LinkSiw, syscall.ENOENT, ""},
		{LinkSiw, syscall.EPERM, ""},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, linkAddHint(tt.link, "veth0", tt.err), "%s %v", tt.link, tt.err)
	}
}
