package engine

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/flags"
)

// TestOpenDevBadFlags: bad device selections are refused with the value
// and what exists, before any resource beyond the device context.
func TestOpenDevBadFlags(t *testing.T) {
	d := Device(t) // the policy: skip without a device, fail when required
	name, tableLen, ports := d.Name(), d.PortAttr.GIDTableLen, d.Attr().PhysPortCnt
	beyond := ports + 1 // the first port number the device does not have
	for _, tc := range []struct {
		name string
		set  func(o *flags.Options)
		want []string
	}{
		{"unknown device", func(o *flags.Options) { o.Device = "mlx9" }, []string{`"mlx9" not found`, name}},
		{"port beyond the device's", func(o *flags.Options) { o.Port = beyond }, []string{fmt.Sprintf("port %d ", beyond), fmt.Sprintf("ports 1..%d", ports)}},
		{"GID index beyond the table", func(o *flags.Options) { o.GIDIndex = 100000 }, []string{"GID index 100000", "gid_tbl_len-1"}},
		{"GID index not populated", func(o *flags.Options) { o.GIDIndex = tableLen - 1 }, []string{"GID index", "is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := d.Opts // the flags' settings, as Device opened d with them
			o.Device = name
			tc.set(&o)
			got, err := OpenDevWith(o)
			if err == nil {
				got.Close()
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// TestControlPathMetrics: the control path reports its per-operation
// latency and rate, and no preempted/run (no loop thread runs it, so
// nothing was counted), while a run over a C loop reports it.
func TestControlPathMetrics(t *testing.T) {
	d := Device(t)
	res := testing.Benchmark(func(b *testing.B) {
		ControlPath(b, d, Control{Op: OpCreateCQ, Depth: 64})
	})
	require.Positive(t, res.N)
	for _, u := range []string{"p50-ns", "max-ns", "ops/s", "cpu-ns/op"} {
		assert.Positive(t, res.Extra[u], u)
	}
	assert.NotContains(t, res.Extra, "preempted/run")

	a, bs := commitSpecs()
	own, failed := progRun(t, d, a, bs, d.Opts.Timeout)
	require.Empty(t, failed)
	assert.Contains(t, own.Extra, "preempted/run", "a pinned timed loop counts its preemptions")
}
