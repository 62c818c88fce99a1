package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

// side is which perftest process's output holds the figure.
type side string

const (
	client side = "client"
	server side = "server"
)

// figure is one compared number: a perftest column and an rdmabench unit
// that measure the same thing, both converted to one display unit.
type figure struct {
	label   string // "p50", "p99", "bandwidth"
	column  string // perftest column name without its unit
	unit    string // rdmabench unit, e.g. "p50-ns", "MB/s"
	display string // "µs" or "MB/s"
}

var (
	latFigures = []figure{
		{"p50", "t_typical", "p50-ns", "µs"},
		{"p99", "99% percentile", "p99-ns", "µs"},
	}
	bwFigures = []figure{
		{"bandwidth", "BW average", "MB/s", "MB/s"},
	}
)

// scenario is one perftest program with options matched to one rdmabench
// benchmark.
type scenario struct {
	name    string         // short, e.g. "write_lat 8 B"
	program string         // perftest program
	args    []string       // perftest options (besides -d, -F, -n)
	size    int            // message size: the row of perftest's table
	side    side           // whose report row is compared
	bench   benchname.Name // full rdmabench sub-benchmark name (no -GOMAXPROCS)
	figures []figure
	// differs says how perftest's definitions differ from ours, beyond
	// the common ones printed once under the table.
	differs string
}

// scenarios are the perftest programs next to the benchmark of
// bench_test/perftest_test.go that measures the same thing, with
// perftest's options set to the benchmark's axes: -t = qd, -Q 1 =
// signal=1 (perftest's default -Q 100 would signal one WR in 100), inline
// off (rxe has none in perftest either), poll mode, one QP. READ and
// atomic depth: -t 16 = qd=16 and perftest's -o left at its default, the
// device's max_qp_rd_atom, as rdmabench leaves max_rd_atomic at the
// device maximum; so at most 16 are outstanding on both.
var scenarios = []scenario{
	{
		name: "send_lat 8 B", program: "ib_send_lat", args: []string{"-s", "8", "-I", "0"}, size: 8, side: client,
		bench:   mustName("SendLat/transport=RC/size=8/inline=false/mode=poll"),
		figures: latFigures,
		differs: "RTT/2 on both; perftest: post-to-post deltas (loop included), 2 largest dropped; ours: post → answer's receive completion, all samples",
	},
	{
		name: "write_lat 8 B", program: "ib_write_lat", args: []string{"-s", "8", "-I", "0"}, size: 8, side: client,
		bench:   mustName("WriteLat/transport=RC/size=8/inline=false"),
		figures: latFigures,
		differs: "RTT/2 on both; perftest: post-to-post deltas (loop included), 2 largest dropped; ours: post → last byte of the answer in memory, all samples",
	},
	{
		name: "read_lat 8 B", program: "ib_read_lat", args: []string{"-s", "8"}, size: 8, side: client,
		bench:   mustName("ReadLat/transport=RC/size=8/mode=poll"),
		figures: latFigures,
		differs: "full round trip on both; perftest: post-to-post deltas, 2 largest dropped; ours: post → completion polled, all samples",
	},
	{
		name: "atomic_lat fadd", program: "ib_atomic_lat", args: []string{"-A", "FETCH_AND_ADD"}, size: 8, side: client,
		bench:   mustName("AtomicLat/op=fadd/transport=RC"),
		figures: latFigures,
		differs: "full round trip on both; perftest: post-to-post deltas, 2 largest dropped; ours: post → completion polled, all samples",
	},
	{
		name: "send_bw 4 KiB", program: "ib_send_bw", args: []string{"-s", "4096", "-t", "128", "-Q", "1"}, size: 4096, side: server,
		bench:   mustName("SendBW/transport=RC/size=4096/qd=128/batch=1/signal=1/mode=poll/srq=false"),
		figures: bwFigures,
		differs: "perftest's send_bw figure is the receiver's (server row, first to last receive completion); ours is the requester's (first post → last send completion); rx depth 512 on both",
	},
	{
		name: "write_bw 4 KiB", program: "ib_write_bw", args: []string{"-s", "4096", "-t", "128", "-Q", "1"}, size: 4096, side: client,
		bench:   mustName("WriteBW/transport=RC/size=4096/qd=128/qps=1/inline=false/batch=1/signal=1"),
		figures: bwFigures,
		differs: "requester on both, first post → last completion",
	},
	{
		name: "read_bw 4 KiB", program: "ib_read_bw", args: []string{"-s", "4096", "-t", "16", "-Q", "1"}, size: 4096, side: client,
		bench:   mustName("ReadBW/transport=RC/size=4096/qd=16"),
		figures: bwFigures,
		differs: "requester on both, first post → last completion; 16 outstanding (-t 16; -o = device max on both)",
	},
	{
		name: "atomic_bw fadd", program: "ib_atomic_bw", args: []string{"-A", "FETCH_AND_ADD", "-t", "16", "-Q", "1"}, size: 8, side: client,
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
			s.name = strings.Fields(s.name)[0] + " " + strconv.Itoa(size) + " B"
		}
		if qd > 0 && has("qd") {
			set("-t", "qd", qd)
			s.name += " qd " + strconv.Itoa(qd)
		}
		out[i] = s
	}
	return out, benchArgs
}
