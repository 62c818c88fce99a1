package facts_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
)

// stubCounters returns a ReadCounters that hands out snaps in turn.
func stubCounters(t *testing.T, snaps ...facts.Counters) func(string, int) (facts.Counters, error) {
	return func(dev string, port int) (facts.Counters, error) {
		assert.Equal(t, "mlx5_0", dev)
		assert.Equal(t, 1, port)
		require.NotEmpty(t, snaps, "more snapshots than stubbed")
		c := snaps[0]
		snaps = snaps[1:]
		return c, nil
	}
}

func TestCountersDelta(t *testing.T) {
	before := facts.Counters{"symbol_error": 3, "port_xmit_data": 100, "VL15_dropped": 0, "link_downed": 1, "out_of_sequence": 7}
	after := facts.Counters{"symbol_error": 15, "port_xmit_data": 900, "VL15_dropped": 2, "link_downed": 1, "out_of_sequence": 7, "np_cnp_sent": 4}
	src := source("testdata/mlx5")
	src.ReadCounters = stubCounters(t, before, after)

	b, err := facts.Snapshot(src, "mlx5_0", 1)
	require.NoError(t, err)
	a, err := facts.Snapshot(src, "mlx5_0", 1)
	require.NoError(t, err)
	d, err := facts.Delta(b, a)
	require.NoError(t, err)
	assert.Equal(t, facts.Counters{"symbol_error": 12, "port_xmit_data": 800, "VL15_dropped": 2, "np_cnp_sent": 4}, d)
	assert.Equal(t, []string{
		"fabric.node.node7.counter.np_cnp_sent: 4",
		"fabric.node.node7.counter.port_xmit_data: 800",
		"fabric.node.node7.counter.symbol_error: 12",
		"fabric.node.node7.counter.vl15_dropped: 2",
	}, facts.CounterLines("Node7", d))
}

func TestDeltaErrors(t *testing.T) {
	tests := []struct {
		name          string
		before, after facts.Counters
		want          []string
		still         facts.Counters
	}{
		{"reset", facts.Counters{"port_rcv_errors": 40, "symbol_error": 1}, facts.Counters{"port_rcv_errors": 2, "symbol_error": 3},
			[]string{"port_rcv_errors went backwards from 40 to 2"}, facts.Counters{"symbol_error": 2}},
		{"disappeared", facts.Counters{"rnr_nak_retry_err": 5}, facts.Counters{},
			[]string{"rnr_nak_retry_err disappeared"}, facts.Counters{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := facts.Delta(tt.before, tt.after)
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Equal(t, tt.still, d, "the other counters' deltas are still returned")
		})
	}
}

func TestCounterLines(t *testing.T) {
	assert.Empty(t, facts.CounterLines("n", facts.Counters{"symbol_error": 0}))
	assert.Equal(t, []string{"fabric.node.n.counter.vl15_dropped: 3"},
		facts.CounterLines("N", facts.Counters{"VL15_dropped": 1, "vl15_dropped": 2}), "names that meet in lower case add up")
	assert.Equal(t, []string{"fabric.node.n.counter.a_b_c: 1"},
		facts.CounterLines("n", facts.Counters{"a b:c": 1}), "no space or colon in a key")
}

func TestSnapshotErrors(t *testing.T) {
	_, err := facts.Snapshot(source("testdata/mlx5"), "mlx5_0", 1)
	require.Error(t, err, "the fake mlx5 tree has no counters")
	assert.Contains(t, err.Error(), "neither counters nor hw_counters")

	_, err = facts.Snapshot(facts.Source{}, "no_such_dev0", 1)
	require.Error(t, err, "the real /sys has no device no_such_dev0")
	assert.Contains(t, err.Error(), "no_such_dev0")

	src := source("testdata/mlx5")
	src.ReadCounters = func(string, int) (facts.Counters, error) { return nil, errors.New("boom") }
	_, err = facts.Snapshot(src, "mlx5_0", 1)
	assert.EqualError(t, err, "facts: counters of mlx5_0 port 1: boom")
}

// TestSnapshotFakeTree: Snapshot reads the counters under the Source's
// sysfs root, not the machine's.
func TestSnapshotFakeTree(t *testing.T) {
	c, err := facts.Snapshot(source("testdata/rxe"), "rxe0", 1)
	require.NoError(t, err)
	assert.Equal(t, facts.Counters{"rcvd_pkts": 1042, "rcvd_seq_err": 3}, c)
}
