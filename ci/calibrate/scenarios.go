package main

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

// side is which perftest process's output holds a figure.
type side string

const (
	client side = "client" // the requester: the program run with the server's address
	server side = "server" // the passive side
)

// figure is one compared number: a perftest column of one side's row and
// the rdmabench units that measure it, all converted to one display unit.
type figure struct {
	label  string // "p50", "p99", "bandwidth", …
	side   side   // whose perftest row holds it
	column string // perftest column name without its unit
	// like is the rdmabench unit with perftest's definition, read from
	// the like-for-like contestants (L1, L2 with -rdma.signal-all
	// -rdma.warmup 0; B1, B2); "" = none: perftest's figure is shown for
	// information, without a ratio.
	like string
	// own is the rdmabench unit of our own definition, read from the
	// own-definition contestant O and the C-only control; "" = none.
	own     string
	display string // "µs" or "MB/s"
}

var (
	latFigures = []figure{
		{label: "p50", side: client, column: "t_typical", like: "cycle-p50-ns", own: "p50-ns", display: "µs"},
		{label: "p99", side: client, column: "99% percentile", like: "cycle-p99-ns", own: "p99-ns", display: "µs"},
	}
	bwFigures = []figure{
		{label: "bandwidth", side: client, column: "BW average", like: "MB/s", display: "MB/s"},
	}
	// sendBWFigures compare the requester (perftest's client row, first
	// post → last send completion, with our requester's MB/s) and the
	// receiver (perftest's server row, its first poll that returned
	// receives → the end of its last, with our recv-MB/s: the same
	// interval on the passive loop's clock). On UC and UD the receiver's
	// figure is the delivered bandwidth.
	sendBWFigures = append(slices.Clip(bwFigures),
		figure{label: "receiver bandwidth", side: server, column: "BW average", like: "recv-MB/s", display: "MB/s"})
)

// scenario is one perftest program with options matched to one rdmabench
// benchmark.
type scenario struct {
	name    string         // short, e.g. "write_lat 8 B"
	program string         // perftest program
	args    []string       // perftest options (besides -d, -F, -n)
	size    int            // message size: the row of perftest's table
	bench   benchname.Name // full rdmabench sub-benchmark name (no -GOMAXPROCS)
	figures []figure
	// differs says what the like-for-like contestants share with perftest
	// in this scenario and what still differs, beyond the differences
	// common to every scenario (remainingDifferences).
	differs string
	// cm connects both tools through the RDMA connection manager:
	// perftest -R (in args) with its client aimed at the device's IPv4
	// address, the benchmark with -rdma.cm.
	cm bool
}

// latency tells a ping-pong (or one-at-a-time) latency scenario from a
// stream.
func (s scenario) latency() bool { return strings.HasSuffix(s.program, "_lat") }

// stem names the scenario's kept outputs (its name without spaces).
func (s scenario) stem() string { return strings.ReplaceAll(s.name, " ", "_") }

// Notes of the latency scenarios: what the like-for-like contestants
// (-rdma.signal-all -rdma.warmup 0, cycle-p50-ns/cycle-p99-ns) share with
// perftest.
const (
	pingPongLike = "sample = post → next post ÷ 2 on both (perftest's tposted[i+1] − tposted[i], our cycle-p50-ns/cycle-p99-ns), every WR signaled and its completion awaited each iteration on both sides, no warm-up"
	roundLike    = "sample = post → next post on both, full round trip, one operation outstanding, every WR signaled and awaited, no warm-up"
	receiverLike = "receiver on both (perftest's server row, our recv-MB/s): payload received from the first poll that returned receives to the end of the last"
	cmLike       = "perftest -R, its client given the device's IPv4 address; rdmabench -rdma.cm: address and route resolved, connect and accept by the CM, no QP data over TCP on either"
)

// scenarios are the perftest programs next to the benchmark of
// bench_test/perftest_test.go that measures the same thing, with
// perftest's options set to the benchmark's axes: -c = transport, -t =
// qd, -Q 1 = signal=1 (perftest's default -Q 100 would signal one WR in
// 100), inline off (rxe has none in perftest either), poll mode, one QP.
// READ and atomic depth: -t 16 = qd=16 and perftest's -o left at its
// default, the device's max_qp_rd_atom, as rdmabench leaves
// max_rd_atomic at the device maximum; so at most 16 are outstanding on
// both.
var scenarios = []scenario{
	{
		name: "send_lat 8 B", program: "ib_send_lat", args: []string{"-s", "8", "-I", "0"}, size: 8,
		bench:   mustName("SendLat/transport=RC/size=8/inline=false/mode=poll"),
		figures: latFigures,
		differs: "RC; " + pingPongLike + ", one receive reposted per message",
	},
	{
		name: "send_lat UC 8 B", program: "ib_send_lat", args: []string{"-c", "UC", "-s", "8", "-I", "0"}, size: 8,
		bench:   mustName("SendLat/transport=UC/size=8/inline=false/mode=poll"),
		figures: latFigures,
		differs: "UC; " + pingPongLike + ", one receive reposted per message; a lost message ends a run on both (perftest waits, rdmabench's deadline fails it)",
	},
	{
		name: "send_lat UD 8 B", program: "ib_send_lat", args: []string{"-c", "UD", "-s", "8", "-I", "0"}, size: 8,
		bench:   mustName("SendLat/transport=UD/size=8/inline=false/mode=poll"),
		figures: latFigures,
		differs: "UD; " + pingPongLike + ", one receive reposted per message; -s 8 and size=8 are both the payload (each receive holds 40 more bytes for the GRH on both)",
	},
	{
		name: "write_lat 8 B", program: "ib_write_lat", args: []string{"-s", "8", "-I", "0"}, size: 8,
		bench:   mustName("WriteLat/transport=RC/size=8/inline=false"),
		figures: latFigures,
		differs: "RC; " + pingPongLike + "; each side spins on the last byte of its own buffer for the peer's WRITE",
	},
	{
		name: "write_lat rdma_cm 8 B", program: "ib_write_lat", args: []string{"-s", "8", "-I", "0", "-R"}, size: 8, cm: true,
		bench:   mustName("WriteLat/transport=RC/size=8/inline=false"),
		figures: latFigures,
		differs: "RC connected through rdma_cm on both (" + cmLike + "); " + pingPongLike + "; each side spins on the last byte of its own buffer for the peer's WRITE",
	},
	{
		name: "read_lat 8 B", program: "ib_read_lat", args: []string{"-s", "8"}, size: 8,
		bench:   mustName("ReadLat/transport=RC/size=8/mode=poll"),
		figures: latFigures,
		differs: "RC; " + roundLike + "; the passive side does nothing",
	},
	{
		name: "atomic_lat fadd", program: "ib_atomic_lat", args: []string{"-A", "FETCH_AND_ADD"}, size: 8,
		bench:   mustName("AtomicLat/op=fadd/transport=RC"),
		figures: latFigures,
		differs: "RC FETCH_AND_ADD on 8 bytes; " + roundLike,
	},
	{
		name: "atomic_lat cas", program: "ib_atomic_lat", args: []string{"-A", "CMP_AND_SWAP"}, size: 8,
		bench:   mustName("AtomicLat/op=cas/transport=RC"),
		figures: latFigures,
		differs: "RC CMP_AND_SWAP on 8 bytes; " + roundLike,
	},
	{
		name: "send_bw 4 KiB", program: "ib_send_bw", args: []string{"-s", "4096", "-t", "128", "-Q", "1"}, size: 4096,
		bench:   mustName("SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false"),
		figures: sendBWFigures,
		differs: "requester on both (perftest's client row, our MB/s): first post → last send completion, 128 outstanding, every WR signaled (-Q 1 = signal=1); rx depth 512 on both; " + receiverLike,
	},
	{
		name: "send_bw UC 1024 B", program: "ib_send_bw", args: []string{"-c", "UC", "-s", "1024", "-t", "128", "-Q", "1"}, size: 1024,
		bench:   mustName("SendBW/transport=UC/size=1024/qd=128/batch=1/signal=1/mode=poll/srq=false"),
		figures: sendBWFigures,
		differs: "UC; requester on both: first post → last send completion, 128 outstanding, every WR signaled; " + receiverLike + "; on UC the receiver's figure is the delivered bandwidth (a lost message: perftest's server waits for it until calibrate's deadline, our sink counts what arrived)",
	},
	{
		name: "send_bw UD 1024 B", program: "ib_send_bw", args: []string{"-c", "UD", "-s", "1024", "-t", "128", "-Q", "1"}, size: 1024,
		bench:   mustName("SendBW/transport=UD/size=1024/qd=128/batch=1/signal=1/mode=poll/srq=false"),
		figures: sendBWFigures,
		differs: "UD; requester on both: first post → last send completion, 128 outstanding, every WR signaled; " + receiverLike + "; on UD the receiver's figure is the delivered bandwidth (a lost message: perftest's server waits for it until calibrate's deadline, our sink counts what arrived); 1024 B of payload on both (the GRH's 40 bytes not counted)",
	},
	{
		name: "send_bw rdma_cm 4 KiB", program: "ib_send_bw", args: []string{"-s", "4096", "-t", "128", "-Q", "1", "-R"}, size: 4096, cm: true,
		bench:   mustName("SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false"),
		figures: sendBWFigures,
		differs: "RC connected through rdma_cm on both (" + cmLike + "); requester on both (perftest's client row, our MB/s): first post → last send completion, 128 outstanding, every WR signaled (-Q 1 = signal=1); rx depth 512 on both; " + receiverLike,
	},
	{
		name: "write_bw 4 KiB", program: "ib_write_bw", args: []string{"-s", "4096", "-t", "128", "-Q", "1"}, size: 4096,
		bench:   mustName("WriteBW/transport=RC/size=4096/qd=128/qps=1/inline=false/batch=1/signal=1"),
		figures: bwFigures,
		differs: "requester on both, first post → last completion, 128 outstanding, every WR signaled (-Q 1 = signal=1)",
	},
	{
		name: "read_bw 4 KiB", program: "ib_read_bw", args: []string{"-s", "4096", "-t", "16", "-Q", "1"}, size: 4096,
		bench:   mustName("ReadBW/transport=RC/size=4096/qd=16"),
		figures: bwFigures,
		differs: "requester on both, first post → last completion; 16 outstanding (-t 16; -o = device max on both)",
	},
	{
		name: "atomic_bw fadd", program: "ib_atomic_bw", args: []string{"-A", "FETCH_AND_ADD", "-t", "16", "-Q", "1"}, size: 8,
		bench:   mustName("AtomicBW/op=fadd/transport=RC/qd=16"),
		figures: bwFigures,
		differs: "requester on both, first post → last completion; 8 B per atomic; 16 outstanding",
	},
}

// mustName parses a benchmark name of the scenarios table, which
// TestScenariosInMatrix checks against the benchmark matrix.
func mustName(s string) benchname.Name {
	n, err := benchname.Parse(s)
	if err != nil {
		panic(err)
	}
	return n
}

// benchRegexp turns a full sub-benchmark name into a -test.bench pattern
// that matches exactly it: testing splits the pattern at '/' and matches
// each level separately, the first against the function name
// (BenchmarkSendLat).
func benchRegexp(name benchname.Name) string {
	levels := name.Levels()
	for i, l := range levels {
		levels[i] = "^" + regexp.QuoteMeta(l) + "$"
	}
	return strings.Join(levels, "/")
}

// find returns the scenarios whose name contains one of the
// comma-separated words of only (all when only is empty).
func find(only string) ([]scenario, error) {
	if only == "" {
		return scenarios, nil
	}
	var out []scenario
	for _, s := range scenarios {
		for _, w := range strings.Split(only, ",") {
			if w != "" && strings.Contains(s.name, w) {
				out = append(out, s)
				break
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-only %q matches no scenario", only)
	}
	return out, nil
}

// override returns the scenarios with the message size (size > 0; not
// atomics, which move 8 bytes) and the queue depth (qd > 0; streams only)
// replaced in perftest's options, the benchmark's name and the scenario's
// name, and the test binary flags that make the benchmark matrix run
// those points (-rdma.sizes, -rdma.qd).
func override(scs []scenario, size, qd int) ([]scenario, []string) {
	var benchArgs []string
	if size > 0 {
		benchArgs = append(benchArgs, "-rdma.sizes", strconv.Itoa(size))
	}
	if qd > 0 {
		benchArgs = append(benchArgs, "-rdma.qd", strconv.Itoa(qd))
	}
	out := make([]scenario, len(scs))
	for i, s := range scs {
		s.args = append([]string(nil), s.args...)
		set := func(opt, key string, v int) {
			for j := 0; j+1 < len(s.args); j++ {
				if s.args[j] == opt {
					s.args[j+1] = strconv.Itoa(v)
				}
			}
			s.bench = s.bench.With(key, strconv.Itoa(v))
		}
		has := func(key string) bool { _, ok := s.bench.Get(key); return ok }
		if size > 0 && has("size") {
			set("-s", "size", size)
			s.size = size
			f := strings.Fields(s.name) // "send_lat UC 8 B": the size is the last two words
			s.name = strings.Join(append(f[:len(f)-2:len(f)-2], strconv.Itoa(size), "B"), " ")
		}
		if qd > 0 && has("qd") {
			set("-t", "qd", qd)
			s.name += " qd " + strconv.Itoa(qd)
		}
		out[i] = s
	}
	return out, benchArgs
}
