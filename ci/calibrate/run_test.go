package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// fakePair writes into dir a fake ib_send_bw and a fake test binary
// that stand in for the real ones, and returns the test binary's path.
// The perftest server writes a real perftest report; the client fails
// with perftest's "Couldn't connect" until the server has started (a
// marker file), as perftest does when the server is not listening yet.
// Both append to dir/order ("perftest" from each server, "bench ARGS"
// from each benchmark run); the test binary then runs benchBody with $n
// set to its run number (1, 2, ...).
func fakePair(t *testing.T, dir, benchBody string) string {
	t.Helper()
	report, err := os.ReadFile("testdata/perftest-6.06/send_bw.server")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.txt"), report, 0o644))
	writeScript(t, dir, "ib_send_bw", `
dir=$(dirname "$0")
for a in "$@"; do [ "$a" = 127.0.0.1 ] && client=1; done
if [ -z "$client" ]; then echo perftest >>"$dir/order"; sleep 0.3; touch "$dir/listening"; sleep 0.3; cat "$dir/report.txt"; exit 0; fi
if [ ! -e "$dir/listening" ]; then echo "Couldn't connect to 127.0.0.1:18515"; exit 1; fi
echo "client side"
`)
	return writeScript(t, dir, "bench.test", `
dir=$(dirname "$0")
echo "bench $*" >>"$dir/order"
n=$(($(cat "$dir/count" 2>/dev/null || echo 0) + 1)); echo $n >"$dir/count"
`+benchBody)
}

// sendBWOutput is a benchmark output whose matching result (bidir=false)
// has MB/s $mbs and, when given, $dup duplicate_request/run; a result
// of another value of the bidir axis comes first and must be ignored.
const sendBWOutput = `
echo "rdma-device: rxe0"
echo "BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=true-2  5000  1000 ns/op  40.00 MB/s"
echo "BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false-2  5000  1000 ns/op  $mbs MB/s $dup"
echo PASS
`

// orderOf returns the first word of each line of dir/order.
func orderOf(t *testing.T, dir string) (order, benchArgs []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "order"))
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		word, args, _ := strings.Cut(l, " ")
		order = append(order, word)
		if word == "bench" {
			benchArgs = append(benchArgs, args)
		}
	}
	return order, benchArgs
}

func TestScenarioEndToEnd(t *testing.T) {
	dir := t.TempDir()
	bench := fakePair(t, dir, `
case $n in
1) mbs=20.00 dup="2.000 duplicate_request/run" ;;
2) mbs=22.00 ;;
*) mbs=30.00 dup="1.000 duplicate_request/run" ;;
esac
`+sendBWOutput)
	c := config{dev: "rxe0", bench: bench, benchDir: dir, keep: filepath.Join(dir, "keep"), iters: 5000, runs: 3,
		timeout: 20 * time.Second, perftestD: dir}
	require.NoError(t, os.MkdirAll(c.keep, 0o755))
	sc, err := find("send_bw")
	require.NoError(t, err)
	rows, err := runScenario(context.Background(), c, sc[0], io.Discard)
	require.NoError(t, err)

	order, args := orderOf(t, dir)
	assert.Equal(t, []string{"perftest", "bench", "bench", "perftest", "perftest", "bench"}, order, "interleaved pairs, even ones benchmark first")
	for _, a := range args {
		assert.Contains(t, a, "-test.count 1 -test.benchtime 5000x")
	}
	require.Len(t, rows, 1)
	pt := 16.79 * 1.048576 // server row, MiB/s labelled [MB/sec], shown in MB/s; the same in every run
	assert.InDelta(t, pt, rows[0].perftest, 1e-9)
	assert.InDelta(t, 22.0, rows[0].rdmabench, 1e-9, "median of the bidir=false results, MB/s as printed")
	assert.InDelta(t, 22/pt, rows[0].ratios.median, 1e-9)
	assert.InDelta(t, 20/pt, rows[0].ratios.min, 1e-9)
	assert.InDelta(t, 30/pt, rows[0].ratios.max, 1e-9)
	assert.Equal(t, "duplicate_request 3", rows[0].counters, "summed over the benchmark runs")
	assert.Equal(t, Column{"BW average", "MB/sec"}, rows[0].col)
	for run := 1; run <= 3; run++ {
		assert.FileExists(t, filepath.Join(c.keep, fmt.Sprintf("ib_send_bw.%d.client", run)))
		assert.FileExists(t, filepath.Join(c.keep, fmt.Sprintf("bench-ib_send_bw.%d.txt", run)))
	}
}

func TestBenchFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	bench := fakePair(t, dir, `
if [ $n = 2 ]; then echo "--- FAIL: BenchmarkSendBW: post send: ENOMEM"; echo FAIL; exit 1; fi
mbs=20.00
`+sendBWOutput)
	c := config{dev: "rxe0", bench: bench, benchDir: dir, keep: dir, iters: 5000, runs: 3,
		timeout: 20 * time.Second, perftestD: dir}
	sc, err := find("send_bw")
	require.NoError(t, err)
	_, err = runScenario(context.Background(), c, sc[0], io.Discard)
	require.Error(t, err)
	kept := filepath.Join(dir, "bench-ib_send_bw.2.txt")
	assert.Contains(t, err.Error(), "pair 2/3")
	assert.Contains(t, err.Error(), "exit status 1")
	assert.Contains(t, err.Error(), "output in "+kept)
	out, rerr := os.ReadFile(kept)
	require.NoError(t, rerr)
	assert.Contains(t, string(out), "post send: ENOMEM")
	order, _ := orderOf(t, dir)
	assert.Equal(t, []string{"perftest", "bench", "bench"}, order, "stops at the failed pair (the second, benchmark first)")
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
