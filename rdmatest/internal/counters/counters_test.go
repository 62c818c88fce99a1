package counters

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSysfs points SysfsRoot at a temporary tree holding files (path
// relative to the root → content) and restores it when t ends.
func fakeSysfs(t *testing.T, files map[string]string) {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	saved := SysfsRoot
	SysfsRoot = root
	t.Cleanup(func() { SysfsRoot = saved })
}

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Values
		err   string
	}{
		{
			name: "both directories",
			files: map[string]string{
				"mlx0/ports/1/counters/port_xmit_packets":          "100\n",
				"mlx0/ports/1/counters/local_ack_timeout_err":      "0\n",
				"mlx0/ports/1/hw_counters/out_of_sequence":         "3\n",
				"mlx0/ports/1/hw_counters/port_xmit_packets":       "7\n",
				"mlx0/ports/1/hw_counters/lifespan":                "10\n",
				"mlx0/ports/2/counters/port_xmit_packets":          "999\n",
				"mlx0/ports/1/counters/subdir/ignored_because_dir": "1\n",
			},
			want: Values{"port_xmit_packets": 100, "local_ack_timeout_err": 0, "out_of_sequence": 3, "hw_port_xmit_packets": 7, "lifespan": 10},
		},
		{
			name:  "hw_counters only (rxe)",
			files: map[string]string{"mlx0/ports/1/hw_counters/rcvd_seq_err": "5"},
			want:  Values{"rcvd_seq_err": 5},
		},
		{
			name:  "no counter directory",
			files: map[string]string{"mlx0/ports/1/state": "4: ACTIVE"},
			err:   "has neither counters nor hw_counters",
		},
		{
			name:  "not a number",
			files: map[string]string{"mlx0/ports/1/counters/port_rcv_errors": "N/A\n"},
			err:   `port_rcv_errors holds "N/A", not a number`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeSysfs(t, tc.files)
			got, err := Read("mlx0", 1)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDelta(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after Values
		want          Values
		err           string
	}{
		{
			name:   "growth only, zeros dropped",
			before: Values{"a": 1, "b": 5, "c": 0},
			after:  Values{"a": 4, "b": 5, "c": 0, "new": 2},
			want:   Values{"a": 3, "new": 2},
		},
		{
			name:   "backwards and missing",
			before: Values{"a": 10, "b": 1, "gone": 3},
			after:  Values{"a": 4, "b": 2},
			want:   Values{"b": 1},
			err:    "a went backwards from 10 to 4; gone disappeared (was 3)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Delta(tc.before, tc.after)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestReport(t *testing.T) {
	d := Values{"rcvd_seq_err": 2, "retry_exceeded_err": 1, "port_xmit_packets": 1000, "duplicate_request": 4}
	r := testing.Benchmark(func(b *testing.B) {
		for b.Loop() {
		}
		Report(b, d)
	})
	assert.Equal(t, map[string]float64{"rcvd_seq_err/run": 2, "retry_exceeded_err/run": 1, "duplicate_request/run": 4}, r.Extra)
}

// TestWatched holds the reporting choice to the counters rxe, mlx5 and
// the IB port counters name.
func TestWatched(t *testing.T) {
	watched := []string{
		// rxe (rxe_hw_counters.c)
		"duplicate_request", "out_of_seq_request", "rcvd_rnr_err", "send_rnr_err", "rcvd_seq_err",
		"retry_exceeded_err", "retry_rnr_exceeded_err", "completer_retry_err", "send_err", "link_downed",
		// mlx5
		"out_of_buffer", "out_of_sequence", "rnr_nak_retry_err", "packet_seq_err", "implied_nak_seq_err",
		"local_ack_timeout_err", "req_cqe_error", "resp_remote_access_errors", "roce_adp_retrans",
		"req_transport_retries_exceeded",
		// counters/
		"symbol_error", "port_rcv_errors", "port_xmit_discards", "VL15_dropped", "hw_port_rcv_errors",
	}
	quiet := []string{
		"sent_pkts", "rcvd_pkts", "ack_deferred", "rdma_sends", "rdma_recvs", "rx_write_requests",
		"np_cnp_sent", "lifespan", "port_xmit_data", "port_rcv_packets", "unicast_xmit_packets",
	}
	for _, n := range watched {
		assert.True(t, Watched(n), "%s is not watched", n)
	}
	for _, n := range quiet {
		assert.False(t, Watched(n), "%s is watched", n)
	}
}
