package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeScript writes an executable shell script into dir.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// A fake test binary and fake perftest programs stand in for the real
// ones: the server writes a real perftest report, the client fails with
// perftest's "Couldn't connect" until the server has started (a marker
// file), as perftest does when the server is not listening yet.
func TestScenarioEndToEnd(t *testing.T) {
	dir := t.TempDir()
	report, err := os.ReadFile("testdata/perftest-6.06/send_bw.server")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.txt"), report, 0o644))
	writeScript(t, dir, "ib_send_bw", `
dir=$(dirname "$0")
for a in "$@"; do [ "$a" = 127.0.0.1 ] && client=1; done
if [ -z "$client" ]; then sleep 0.3; touch "$dir/listening"; sleep 0.3; cat "$dir/report.txt"; exit 0; fi
if [ ! -e "$dir/listening" ]; then echo "Couldn't connect to 127.0.0.1:18515"; exit 1; fi
echo "client side"
`)
	bench := writeScript(t, dir, "bench.test", `
cat <<'OUT'
rdma-device: rxe0
BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=true-2  5000  1000 ns/op  40.00 MB/s
BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false-2  5000  1000 ns/op  20.00 MB/s  2.000 duplicate_request/run
BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false-2  5000  1000 ns/op  22.00 MB/s
PASS
OUT
`)
	c := config{dev: "rxe0", bench: bench, benchDir: dir, keep: filepath.Join(dir, "keep"), iters: 5000, runs: 2,
		timeout: 20 * time.Second, perftestD: dir}
	require.NoError(t, os.MkdirAll(c.keep, 0o755))
	sc, err := find("send_bw")
	require.NoError(t, err)
	rows, err := runScenario(context.Background(), c, sc[0], io.Discard)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.InDelta(t, 16.79*1.048576, rows[0].perftest, 1e-9, "server row, MiB/s labelled [MB/sec], shown in MB/s")
	assert.InDelta(t, 21.0, rows[0].rdmabench, 1e-9, "median of the bidir=false runs, MB/s as printed")
	assert.Equal(t, "duplicate_request 2", rows[0].counters)
	assert.Equal(t, Column{"BW average", "MB/sec"}, rows[0].col)
	assert.FileExists(t, filepath.Join(c.keep, "ib_send_bw.1.client"))
}

func TestPerftestFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "ib_write_lat", `
for a in "$@"; do [ "$a" = 127.0.0.1 ] && client=1; done
if [ -z "$client" ]; then sleep 30; exit 0; fi
echo " Unable to init the socket connection"; exit 1
`)
	c := config{dev: "rxe0", keep: dir, iters: 100, runs: 1, timeout: 5 * time.Second, perftestD: dir}
	sc, err := find("write_lat")
	require.NoError(t, err)
	start := time.Now()
	_, err = runScenario(context.Background(), c, sc[0], io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ib_write_lat client")
	assert.Contains(t, err.Error(), "ib_write_lat.1.client")
	assert.Less(t, time.Since(start), 4*time.Second, "the waiting server is killed when the client fails")
}
