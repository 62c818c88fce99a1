// Command rdmasummary prints an rdmabench results file as one compact
// table per benchmark family, to be read at a glance; make bench ends
// with it. Its one job is that text summary: benchstat compares files,
// ci/gate decides regressions, rdmaplot draws.
//
//	go run ./cmd/rdmasummary RESULTS.txt
//
// The file is read with internal/results, the names with
// rdmatest/benchname. A family is a base name (WriteBW, SendLat, ...); a
// name outside benchname's grammar is a family of its own, named whole,
// without parts. A family's heading shows the
// name parts common to all its benchmarks (and GOMAXPROCS); each row is
// one benchmark, with a column for each name key whose value varies
// (transport, size, qd, ...), n (the runs of that benchmark in the
// file), then the medians of the units that mean something for the
// family:
//
//   - MB/s (1 MB = 10^6 bytes) and msgs/s, for the families that
//     report them (ping-pong families, *Lat, report msgs/s only: round
//     trips per second);
//   - msgs/s/thread and ops/s where a family reports them;
//   - p50, p99 and p99.9 latency, from the p50-ns, p99-ns and p99.9-ns
//     units, in ns, µs, ms or s (for *BW: latency under load).
//
// A unit is left out of a family where no row has it or all its values
// are 0. Rates use decimal prefixes (k = 10^3, M = 10^6, G = 10^9).
// Beside a median stands "±x%", the 95% confidence interval of the
// median as benchstat computes it (golang.org/x/perf/benchmath, assuming
// nothing about the distribution); with fewer than 6 runs there is none
// and the median stands alone (benchstat prints "± ∞"). Port counters
// (units ending in /run, reported only in runs where they moved) are not
// columns: a line under the family names those that moved and in how
// many rows. Other units (ns/op, B/op, p90-ns, max-ns, ...) are read and
// not shown: benchstat shows them all.
//
// Exit status: 0 printed, 1 unreadable input or no results, 2 usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("rdmasummary", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprintln(stderr, "usage: rdmasummary RESULTS.txt") }
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() != 1 {
		fl.Usage()
		return 2
	}
	f, err := os.Open(fl.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "rdmasummary: %v\n", err)
		return 1
	}
	defer f.Close()
	s, err := Read(f, fl.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "rdmasummary: %v\n", err)
		return 1
	}
	if err := s.Write(stdout); err != nil {
		fmt.Fprintf(stderr, "rdmasummary: %v\n", err)
		return 1
	}
	return 0
}
