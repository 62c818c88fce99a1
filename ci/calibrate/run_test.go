package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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

// fakePerftest writes into dir a fake perftest program that stands in
// for the real one: the server counts its runs (dir/ptcount), appends
// "perftest" to dir/order, starts "listening" (a marker file) and prints
// a report once a client connected (a second marker); the client fails
// with perftest's "Couldn't connect" until the server listens, as
// perftest does, then prints its report. Run m
// reads line m of dir/pt-values, "A B": a latency program prints
// t_typical A and 99% percentile B on both sides, a bandwidth program BW
// average A on the client and B on the server ([MB/sec], perftest
// 6.06's label of MiB/s).
func fakePerftest(t *testing.T, dir, program string, values ...string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pt-values"), []byte(strings.Join(values, "\n")+"\n"), 0o644))
	report := `printf ' #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n %s 5000 0.00 %s 0.004\n' "$size" "$1"`
	if strings.HasSuffix(program, "_lat") {
		report = `printf ' #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% percentile[usec]\n %s 5000 1.00 300.00 %s 20.00 1.00 %s 200.00\n' "$size" "$a" "$b"`
	}
	writeScript(t, dir, program, `
dir=$(dirname "$0")
size=8; prev=
for a in "$@"; do
	[ "$a" = 127.0.0.1 ] && client=1
	[ "$a" = 192.0.2.1 ] && client=1 cm=1 # -R: the client is given the device's IPv4 address
	[ "$a" = -R ] && late=0.5             # a server through rdma_cm listens late: its first client is rejected
	[ "$prev" = -s ] && size=$a
	prev=$a
done
report() { `+report+`; }
if [ -z "$client" ]; then
	n=$(($(cat "$dir/ptcount" 2>/dev/null || echo 0) + 1)); echo $n >"$dir/ptcount"
	echo "perftest $*" >>"$dir/order"
	sleep ${late:-0.2}; touch "$dir/listening"
	i=0; while [ ! -e "$dir/connected" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
	rm -f "$dir/listening" "$dir/connected"
	set -- $(sed -n "${n}p" "$dir/pt-values"); a=$1; b=$2
	report "$b"; exit 0
fi
if [ ! -e "$dir/listening" ] && [ -n "$cm" ]; then echo "Unexpected CM event bl blka 8"; echo " Unable to perform rdma_client function"; exit 1; fi
if [ ! -e "$dir/listening" ]; then echo "Couldn't connect to 127.0.0.1:18515"; exit 1; fi
touch "$dir/connected"
n=$(cat "$dir/ptcount")
set -- $(sed -n "${n}p" "$dir/pt-values"); a=$1; b=$2
report "$a"
`)
}

// fakeBench writes into dir a fake test binary and returns its path: it
// appends "bench ARGS" to dir/order, counts its runs (dir/count) and runs
// body with $n set to its run number (1, 2, ...).
func fakeBench(t *testing.T, dir, body string) string {
	t.Helper()
	return writeScript(t, dir, "bench.test", `
dir=$(dirname "$0")
echo "bench $*" >>"$dir/order"
n=$(($(cat "$dir/count" 2>/dev/null || echo 0) + 1)); echo $n >"$dir/count"
# As rdmatest does: the work's configuration lines where the flags move
# it from the defaults (unless the test prints its own).
if [ -z "$FAKE_OWN_WORK_LINES" ]; then
	prev=
	for a in "$@"; do
		[ "$a" = -rdma.signal-all ] && echo "rdma-signal-all: true"
		[ "$prev" = -rdma.warmup ] && [ "$a" != 1 ] && echo "rdma-warmup: $a"
		prev=$a
	done
fi
`+body)
}

// fakePair writes a fake ib_send_bw (its pt-values lines given) and a
// fake test binary (benchBody) into dir and returns the test binary's
// path.
func fakePair(t *testing.T, dir, benchBody string, ptValues ...string) string {
	t.Helper()
	fakePerftest(t, dir, "ib_send_bw", ptValues...)
	return fakeBench(t, dir, benchBody)
}

// sendBWOutput is a benchmark output whose matching result (bidir=false)
// has MB/s $mbs, recv-MB/s $recv (default 19.00) and, when given, $dup
// duplicate_request/run; a result
// of another value of the bidir axis comes first and must be ignored.
const sendBWOutput = `
echo "rdma-device: rxe0"
echo "BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=true-2  5000  1000 ns/op  40.00 MB/s"
echo "BenchmarkSendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false-2  5000  1000 ns/op  $mbs MB/s  ${recv:-19.00} recv-MB/s $dup"
echo PASS
`

// orderOf returns the first word of each line of dir/order and the
// arguments of each benchmark run.
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

// testConfig is a configuration of fakes in dir: unpinned, 5000
// iterations, runs pairs.
func testConfig(dir, bench string, runs int) config {
	return config{dev: "rxe0", bench: bench, benchDir: dir, keep: dir, iters: 5000, runs: runs,
		timeout: 20 * time.Second, perftestD: dir, cpus: [2]int{-1, -1}}
}

func scenarioNamed(t *testing.T, name string) scenario {
	t.Helper()
	for _, s := range scenarios {
		if s.name == name {
			return s
		}
	}
	require.Failf(t, "no scenario", "%q", name)
	return scenario{}
}

// TestBandwidthEndToEnd: send_bw runs P1 B1 P2 B2 rotated by one each
// pair, compares perftest's client row with the benchmark's MB/s and
// perftest's server row with its recv-MB/s.
func TestBandwidthEndToEnd(t *testing.T) {
	dir := t.TempDir()
	bench := fakePair(t, dir, `
case $n in
1) mbs=20.00 recv=19.00 dup="2.000 duplicate_request/run" ;;
2) mbs=22.00 recv=21.00 ;;
3) mbs=24.00 recv=23.00 ;;
*) mbs=30.00 recv=29.00 dup="1.000 duplicate_request/run" ;;
esac
`+sendBWOutput, "10 5", "11 6", "12 7", "13 8")
	c := testConfig(dir, bench, 2)
	c.keep = filepath.Join(dir, "keep")
	require.NoError(t, os.MkdirAll(c.keep, 0o755))
	sr, err := runScenario(context.Background(), c, scenarioNamed(t, "send_bw 4 KiB"), io.Discard)
	require.NoError(t, err)

	order, args := orderOf(t, dir)
	// Pair 1: P1 B1 P2 B2; pair 2: B1 P2 B2 P1.
	assert.Equal(t, []string{"perftest", "bench", "perftest", "bench", "bench", "perftest", "bench", "perftest"}, order)
	for _, a := range args {
		assert.Contains(t, a, "-test.count 1 -test.benchtime 5000x")
		assert.NotContains(t, a, "-rdma.signal-all", "streams run with their own flags")
	}
	assert.Equal(t, []string{"P1", "B1", "P2", "B2"}, sr.Order)
	require.Len(t, sr.Figures, 2)
	mib := 1.048576 // perftest's MiB/s (labelled [MB/sec]) in MB/s
	bw := sr.Figures[0]
	assert.Equal(t, "bandwidth", bw.Label)
	assert.Equal(t, "ib_send_bw client BW average[MB/sec]", bw.PerftestColumn, "the requester's row")
	assert.InDeltaSlice(t, []float64{10 * mib, 13 * mib}, bw.Values["P1"], 1e-9, "P1: perftest runs 1 and 4")
	assert.InDeltaSlice(t, []float64{11 * mib, 12 * mib}, bw.Values["P2"], 1e-9)
	assert.Equal(t, []float64{20, 24}, bw.Values["B1"], "bidir=false results only, MB/s as printed")
	assert.Equal(t, []float64{22, 30}, bw.Values["B2"])
	recv := sr.Figures[1]
	assert.Equal(t, "ib_send_bw server BW average[MB/sec]", recv.PerftestColumn)
	assert.Equal(t, "recv-MB/s", recv.LikeMetric, "the receiver's row against the passive loop's figure")
	assert.Equal(t, []string{"B1", "B2", "P1", "P2"}, keys(recv.Values))
	assert.InDeltaSlice(t, []float64{5 * mib, 8 * mib}, recv.Values["P1"], 1e-9)
	assert.Equal(t, []float64{19, 23}, recv.Values["B1"])
	assert.Equal(t, []float64{21, 29}, recv.Values["B2"])
	assert.Equal(t, "duplicate_request 3", sr.BenchCounters, "summed over the benchmark runs")
	for run := 1; run <= 2; run++ {
		for _, id := range []string{"P1", "P2"} {
			assert.FileExists(t, filepath.Join(c.keep, fmt.Sprintf("send_bw_4_KiB.%d.%s.client", run, id)))
			assert.FileExists(t, filepath.Join(c.keep, fmt.Sprintf("send_bw_4_KiB.%d.%s.server", run, id)))
		}
		for _, id := range []string{"B1", "B2"} {
			assert.FileExists(t, filepath.Join(c.keep, fmt.Sprintf("bench-send_bw_4_KiB.%d.%s.txt", run, id)))
		}
	}
}

func keys(m map[string][]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// latOutput prints a WriteLat result with line $n of dir/bench-values:
// cycle-p50-ns cycle-p99-ns p50-ns p99-ns.
const latOutput = `
set -- $(sed -n "${n}p" "$dir/bench-values")
echo "rdma-cpus: $cpus"
echo "BenchmarkWriteLat/transport=RC/size=8/inline=false-2  5000  1000 ns/op  $3 p50-ns  $4 p99-ns  $1 cycle-p50-ns  $2 cycle-p99-ns"
echo PASS
`

// TestLatencyEndToEnd: a latency scenario runs P1 L1 P2 L2 O rotated by
// one each pair; L runs with -rdma.signal-all -rdma.warmup 0 and gives
// cycle-p50-ns/cycle-p99-ns, O runs with the default flags and gives
// p50-ns/p99-ns.
func TestLatencyEndToEnd(t *testing.T) {
	dir := t.TempDir()
	fakePerftest(t, dir, "ib_write_lat", "10 100", "11 110", "12 120", "13 130")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench-values"), []byte(
		"10000 100000 0 0\n"+ // pair 1 L1
			"11000 110000 0 0\n"+ // pair 1 L2
			"0 0 9000 90000\n"+ // pair 1 O
			"14000 140000 0 0\n"+ // pair 2 L1
			"12000 120000 0 0\n"+ // pair 2 L2
			"0 0 26000 260000\n"), 0o644)) // pair 2 O
	bench := fakeBench(t, dir, "cpus=unpinned\n"+latOutput)
	c := testConfig(dir, bench, 2)
	c.cpusLine = "unpinned"
	sr, err := runScenario(context.Background(), c, scenarioNamed(t, "write_lat 8 B"), io.Discard)
	require.NoError(t, err)

	order, args := orderOf(t, dir)
	// Pair 1: P1 L1 P2 L2 O; pair 2: L1 P2 L2 O P1.
	assert.Equal(t, []string{"perftest", "bench", "perftest", "bench", "bench", "bench", "perftest", "bench", "bench", "perftest"}, order)
	require.Len(t, args, 6)
	for i, a := range args {
		own := i == 2 || i == 5
		assert.Equal(t, !own, strings.HasSuffix(a, "-rdma.signal-all -rdma.warmup 0"), "bench run %d: %s", i+1, a)
	}
	assert.Equal(t, []string{"P1", "L1", "P2", "L2", "O"}, sr.Order)
	require.Len(t, sr.Figures, 2)
	p50 := sr.Figures[0]
	assert.Equal(t, "ib_write_lat client t_typical[usec]", p50.PerftestColumn)
	assert.Equal(t, "cycle-p50-ns", p50.LikeMetric)
	assert.Equal(t, "p50-ns", p50.OwnMetric)
	want := map[string][]float64{"P1": {10, 13}, "P2": {11, 12}, "L1": {10, 14}, "L2": {11, 12}, "O": {9, 26}}
	for id, w := range want {
		assert.InDeltaSlice(t, w, p50.Values[id], 1e-9, id)
	}
	assert.InDeltaSlice(t, []float64{260, 130}, []float64{sr.Figures[1].Values["O"][1], sr.Figures[1].Values["P1"][1]}, 1e-9, "p99")

	rows := summarize(sr.Name, p50)
	require.Len(t, rows, 1)
	r := rows[0]
	assert.InDelta(t, 11.5, r.perftest, 1e-9, "median of P1")
	assert.InDelta(t, 12, r.rdmabench, 1e-9, "median of L1")
	// L1/P1: 1, 14/13; L2/P2: 1, 1: median 1, range 1–14/13.
	assert.InDelta(t, 1, r.like.median, 1e-9)
	assert.InDelta(t, 14.0/13, r.like.max, 1e-9)
	assert.InDelta(t, 12.0/13, r.perftestAA.min, 1e-9, "P2/P1 of pair 2")
	assert.InDelta(t, 1.1, r.perftestAA.max, 1e-9)
	assert.InDelta(t, 12.0/14, r.oursAA.min, 1e-9)
	assert.InDelta(t, (0.9+2)/2, r.own, 1e-9, "median of O/P1: 0.9, 2")
	assert.True(t, r.inside())
}

// TestPerftestPinned: perftest's server runs on the benchmark's passive
// CPU and its client on the requester CPU, through taskset -c; a
// benchmark that reports other CPUs is refused.
func TestPerftestPinned(t *testing.T) {
	dir := t.TempDir()
	fakePerftest(t, dir, "ib_write_lat", "10 100", "11 110")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bench-values"), []byte("1 1 1 1\n"), 0o644))
	taskset := writeScript(t, dir, "taskset", `
echo "$*" >>"$(dirname "$0")/taskset.log"
[ "$1" = -c ] || exit 9
shift 2; exec "$@"
`)
	bench := fakeBench(t, dir, "cpus='requester=2,passive=3(allowed)'\n"+latOutput)
	c := testConfig(dir, bench, 1)
	c.cpus, c.cpusLine, c.taskset = [2]int{0, 1}, "requester=0,passive=1(numa-local)", taskset
	_, err := runScenario(context.Background(), c, scenarioNamed(t, "write_lat 8 B"), io.Discard)
	require.Error(t, err, "the benchmark ran elsewhere")
	assert.ErrorContains(t, err, `ran with rdma-cpus "requester=2,passive=3(allowed)", but perftest is pinned from "requester=0,passive=1(numa-local)"`)

	log, rerr := os.ReadFile(filepath.Join(dir, "taskset.log"))
	require.NoError(t, rerr)
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	srv := filepath.Join(dir, "ib_write_lat") + " -d rxe0 -F -n 5000 -s 8 -I 0"
	assert.Equal(t, "-c 1 "+srv, lines[0], "the server on the passive CPU")
	assert.Equal(t, "-c 0 "+srv+" 127.0.0.1", lines[len(lines)-1], "the client on the requester CPU")
}

// TestPerftestRetriesCMRejection: perftest's client through rdma_cm
// (-R) started before its server listens is rejected ("Unexpected CM
// event bl blka 8") and is started again until the server listens, as
// over TCP.
func TestPerftestRetriesCMRejection(t *testing.T) {
	dir := t.TempDir()
	fakePerftest(t, dir, "ib_write_lat", "10 100")
	c := testConfig(dir, "", 1)
	c.cmAddr = "192.0.2.1"
	s := scenarioNamed(t, "write_lat rdma_cm 8 B")
	out, err := runPerftest(context.Background(), c, s, filepath.Join(dir, "cm"))
	require.NoError(t, err)
	assert.Contains(t, string(out[client]), "t_typical")
	assert.NotContains(t, string(out[client]), "Unexpected CM event", "the kept output is the run that connected")
}

// TestNoUsableFigure: a figure of zero (or NaN) from either tool is
// refused, naming the run and its kept output, rather than dividing by it.
func TestNoUsableFigure(t *testing.T) {
	for _, tt := range []struct {
		name, pt, bench, want string
	}{
		{"perftest", "0 100", "1 1 1 1", "t_typical[usec] 0 for size 8, want a positive number"},
		{"rdmabench", "10 100", "0 1 1 1", "(L1, pair 1/1) reported cycle-p50-ns 0, want a positive number; output in"},
		{"rdmabench NaN", "10 100", "NaN 1 1 1", "reported cycle-p50-ns NaN"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			fakePerftest(t, dir, "ib_write_lat", tt.pt)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bench-values"), []byte(tt.bench+"\n"), 0o644))
			c := testConfig(dir, fakeBench(t, dir, "cpus=unpinned\n"+latOutput), 1)
			_, err := runScenario(context.Background(), c, scenarioNamed(t, "write_lat 8 B"), io.Discard)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// TestLatencyWorkChecked: a latency run whose configuration lines say it
// did not do its contestant's work (the environment overrode the flags)
// is refused.
func TestLatencyWorkChecked(t *testing.T) {
	for _, tt := range []struct {
		name, lines, want string
	}{
		// rdmatest prints the lines only where they differ from the
		// defaults: the like-for-like runs (1 and 2 here) print both,
		// the own-definition run (3) neither.
		{"own run signaled all", `if [ $n = 3 ]; then echo "rdma-signal-all: true"; else echo "rdma-signal-all: true"; echo "rdma-warmup: 0"; fi`, `(O, pair 1/1) ran with rdma-signal-all "true", want false`},
		{"like run warmed up", `if [ $n = 1 ]; then echo "rdma-signal-all: true"; echo "rdma-warmup: 5"; elif [ $n != 3 ]; then echo "rdma-signal-all: true"; echo "rdma-warmup: 0"; fi`, `(L1, pair 1/1) ran with rdma-warmup "5", want 0`},
		{"like run without its line", `if [ $n != 3 ]; then echo "rdma-warmup: 0"; fi`, `(L1, pair 1/1) ran with rdma-signal-all "", want true`},
		{"as asked", `if [ $n != 3 ]; then echo "rdma-signal-all: true"; echo "rdma-warmup: 0"; fi`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("FAKE_OWN_WORK_LINES", "1")
			dir := t.TempDir()
			fakePerftest(t, dir, "ib_write_lat", "10 100", "11 110")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "bench-values"), []byte("1 1 1 1\n1 1 1 1\n1 1 1 1\n"), 0o644))
			c := testConfig(dir, fakeBench(t, dir, "cpus=unpinned\n"+tt.lines+"\n"+latOutput), 1)
			_, err := runScenario(context.Background(), c, scenarioNamed(t, "write_lat 8 B"), io.Discard)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestBenchFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	bench := fakePair(t, dir, `
if [ $n = 2 ]; then echo "--- FAIL: BenchmarkSendBW: post send: ENOMEM"; echo FAIL; exit 1; fi
mbs=20.00
`+sendBWOutput, "10 5", "11 6", "12 7")
	c := testConfig(dir, bench, 3)
	_, err := runScenario(context.Background(), c, scenarioNamed(t, "send_bw 4 KiB"), io.Discard)
	require.Error(t, err)
	kept := filepath.Join(dir, "bench-send_bw_4_KiB.1.B2.txt")
	assert.ErrorContains(t, err, "B2, pair 1/3")
	assert.ErrorContains(t, err, "exit status 1")
	assert.ErrorContains(t, err, "output in "+kept)
	out, rerr := os.ReadFile(kept)
	require.NoError(t, rerr)
	assert.Contains(t, string(out), "post send: ENOMEM")
	order, _ := orderOf(t, dir)
	assert.Equal(t, []string{"perftest", "bench", "perftest", "bench"}, order, "stops at the failed run")
}

func TestPerftestFailureIsReported(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "ib_write_lat", `
for a in "$@"; do [ "$a" = 127.0.0.1 ] && client=1; done
if [ -z "$client" ]; then sleep 30; exit 0; fi
echo " Unable to init the socket connection"; exit 1
`)
	c := testConfig(dir, "", 1)
	c.timeout = 5 * time.Second
	start := time.Now()
	_, err := runScenario(context.Background(), c, scenarioNamed(t, "write_lat 8 B"), io.Discard)
	require.Error(t, err)
	assert.ErrorContains(t, err, "ib_write_lat client")
	assert.ErrorContains(t, err, "write_lat_8_B.1.P1.client")
	assert.Less(t, time.Since(start), 4*time.Second, "the waiting server is killed when the client fails")
}

// TestPerftestDeadline: a perftest that never ends is killed at -timeout
// and named so.
func TestPerftestDeadline(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "ib_read_lat", "exec sleep 30\n")
	c := testConfig(dir, "", 1)
	c.timeout = time.Second
	start := time.Now()
	_, err := runScenario(context.Background(), c, scenarioNamed(t, "read_lat 8 B"), io.Discard)
	require.Error(t, err)
	assert.ErrorContains(t, err, "killed at the 1s deadline, -timeout")
	assert.Less(t, time.Since(start), 10*time.Second)
}
