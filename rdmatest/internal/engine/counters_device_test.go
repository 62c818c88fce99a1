package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/internal/counters"
	"github.com/rdmabench/rdmabench/verbs"
)

// TestReadCountersDevice reads the real counters of the test device
// around some traffic.
func TestReadCountersDevice(t *testing.T) {
	d := Device(t)
	before, err := counters.Read(d.Name(), d.PortNum)
	require.NoError(t, err)
	require.NotEmpty(t, before)
	s := Spec{Op: verbs.OpWrite, Size: 64, QD: 16}
	runStream(t, d, s, 200)
	after, err := counters.Read(d.Name(), d.PortNum)
	require.NoError(t, err)
	delta, err := counters.Delta(before, after)
	require.NoError(t, err)
	t.Logf("counter deltas over 200 RDMA WRITEs: %v", delta)
	assert.NotEmpty(t, delta, "200 RDMA WRITEs moved no counter at all")
}
