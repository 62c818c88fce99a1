// Command calibrate runs perftest (ib_{send,write,read,atomic}_{lat,bw})
// and the matching rdmabench benchmarks on the same RDMA device, one
// after the other in one session, and prints, per scenario and figure,
// how far rdmabench lies from perftest measured like for like, next to
// how far perftest lies from itself.
//
// Usage (make calibrate does this, inside the runner so that both see
// the same device in one VM boot):
//
//	go test -c -o .cache/bench.test ./bench_test
//	go build -o .cache/bin/calibrate ./ci/calibrate
//	.cache/rxevm -- .cache/bin/calibrate [flags] [-store docs/calibration -commit REV]
//	calibrate -render docs/calibration [-markdown]   (no device: the table of every stored calibration)
//	calibrate -render docs/calibration -readme FILE  (no device: the summary and the table into FILE's markers)
//	calibrate -phases DIR [-phase-bounds 14,19]      (no device: the phases of a rotation's runs; make calibrate-phases)
//
// # Definitions
//
// Latency (perftest's, which the like-for-like contestants adopt): one
// sample per iteration = from just before one ping's post call to just
// before the next one's (perftest's tposted[i+1] − tposted[i]; iters − 1
// samples), each iteration posting one WR, every WR signaled and its
// completion awaited (perftest's latency tests force tx_depth 1 and so
// cq_mod 1), ib_send_lat and SendLat reposting one receive per message,
// nothing warmed up. Halved (RTT/2) for SEND and WRITE ping-pong
// (ib_send_lat, ib_write_lat; SendLat, WriteLat), the full round trip for
// READ and atomics. perftest reports t_typical (p50) and its 99%
// percentile, rdmabench cycle-p50-ns and cycle-p99-ns; shown in µs.
//
// Latency (our own definition, for comparison): from just before the
// post call until the answer is seen (SEND: the poll that returned its
// receive completion; WRITE: the spin that saw the answer's last byte;
// READ, atomics: the poll that returned the completion), 1 WR in 32
// signaled, receives reposted in batches, one warm-up round trip:
// p50-ns, p99-ns.
//
// Bandwidth (the same on both): the requester's payload bytes from just
// before the first post to the poll that returned the last completion,
// every WR signaled (perftest -Q 1 = signal=1), -t = qd outstanding.
// perftest prints MiB/s = 2^20 bytes/s (labelled MB/sec before perftest
// PR #257), rdmabench MB/s = 10^6 bytes/s; the tables show MB/s = 10^6
// bytes/s (perftest's value × 1.048576). send_bw compares perftest's
// client row (the requester) with ours and shows its server row (the
// receiver, first to last receive completion) for information: rdmabench
// has no figure of that definition.
//
// What still differs (printed under every table): perftest drops its 2
// largest samples and reports the median and the nearest rank of the
// rest, rdmabench keeps every sample in an HDR histogram (3 significant
// digits); perftest times with the TSC and a MHz from /proc/cpuinfo,
// rdmabench with the loops' clock (the same counter, calibrated, where
// the kernel's clocksource is tsc; CLOCK_MONOTONIC elsewhere and before
// issue #43); perftest's loops run in a C process, ours in a Go one.
//
// # Scenarios and contestants
//
// The scenarios: SEND latency over RC, UC and UD (ib_send_lat -c; UD's -s
// and size= are both the payload, each receive holding 40 more bytes for
// the GRH), WRITE and READ latency, FETCH_AND_ADD and CMP_AND_SWAP
// latency (ib_atomic_lat -A), SEND, WRITE, READ and atomic bandwidth;
// -only selects some, -size and -qd change their points. Each perftest program runs as server and client on the same device
// over 127.0.0.1 (-F, -n ITERS, options matched to the benchmark's axes:
// see scenarios); the client is retried until the server listens
// (perftest itself does not retry). perftest runs where the benchmark's
// loops run: its client on the benchmark's requester CPU and its server
// on its passive CPU (taskset -c, from util-linux; both read from the
// benchmark's rdma-cpus configuration line), unpinned where the
// benchmark is. Each benchmark run is -test.count 1 -test.benchtime
// ITERSx, so both do the same number of operations per run.
//
// Per pair, a latency scenario runs P1, L1, P2, L2, O: perftest twice
// (P1, P2), the benchmark like for like twice (L1, L2: -rdma.signal-all
// -rdma.warmup 0, figures cycle-p50-ns, cycle-p99-ns) and with its own
// definition once (O: default flags, p50-ns, p99-ns); with -control
// (make calibrate passes it) write_lat adds C and CL, ci/cping:
// rdmabench's own C loops (verbs/loop.c) over the WriteLat setup in a
// process without the Go runtime. C measures our own definition (its
// ratio to perftest stands next to O's); CL (cping -S) does perftest's
// work and reads perftest's sample, as L does (its ratio to perftest
// stands in its own row's ratio column). What L adds beyond CL is what
// the Go process around the same loop costs; what CL differs from
// perftest is the loop's own doing. A bandwidth scenario runs P1, B1,
// P2, B2: perftest twice, the benchmark twice. Pair i starts with the
// i-th contestant of that list (a rotation), so that none always goes
// first. The pairs interleave because the speed of a TCG guest drifts
// over tens of seconds: runs at different times would not be comparable.
//
// # Columns
//
// perftest = median of P1; rdmabench = median of L1 (B1); ratio = median
// over the pairs of L1/P1 and L2/P2 pooled (B1/P1, B2/P2), ratio range
// their min–max; perftest A/A = min–max over the pairs of P2/P1, the
// band within which perftest differs from itself; rdmabench A/A = min–max
// of L2/L1 (B2/B1); own-definition ratio = median of O/P1 (the control's
// row: C/P1; the like-for-like control's ratio: median of CL/P1); vs perftest A/A = inside when the ratio lies within
// perftest's A/A band, else OUTSIDE. A ratio above 1 means rdmabench
// measured more (a higher latency or a higher bandwidth).
//
// # Stored calibrations and the rendered table
//
// With -store DIR (make calibrate passes docs/calibration) each
// calibration is written, never overwriting (O_EXCL), as
// DIR/<UTC time>-<commit>.json — format version 1: time, commit
// (-commit), boot_id, kernel, device, iters, runs, cpus (the rdma-cpus
// line), per scenario its perftest options, benchmark, contestant order
// and moved counters, per figure every contestant's value of every pair
// in the display unit, and the printed table — with the printed table as
// the .txt beside it. -render DIR (no device needed) reads every *.json
// in DIR, refusing, with the file's name, one it cannot read or of
// another format version, and prints the table of ALL of them: per
// scenario and figure the median over calibrations of the like-for-like
// ratio and its min–max over calibrations, the A/A bands pooled over
// every pair of every calibration, the median own-definition ratio and
// the number of calibrations and the ratio against perftest's A/A per
// calibration (each calibration's median P2/P1), under a line naming
// their dates and commits. RenderStored is the same as a function.
//
// The summary (RenderSummary; the README's) has one row per perftest
// tool, merged over the tool's scenarios: per calibration the median of
// every like-for-like per-pair ratio of the tool's headline figure (p50,
// or the sender's bandwidth) and the median of perftest's P2/P1 over the
// same pairs; per row the median and min–max of each over the
// calibrations, and a verdict: inside when rdmabench's median lies
// within perftest's A/A min–max, else OUTSIDE (none below 3
// calibrations). -render DIR -readme FILE replaces the summary and the
// table between their markers in FILE, whichever it holds (make
// calibration-table: README.md and docs/performance.md).
//
// Exit status: 0 table printed (and stored); 1 a program failed or printed
// no usable figure (the output is kept under -keep and named), or a
// stored calibration could not be written or read; 2 usage.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
)

// config is the command line.
type config struct {
	dev        string
	bench      string
	benchDir   string
	keep       string
	only       string
	iters      int
	runs       int
	timeout    time.Duration
	markdown   bool
	perftestD  string   // directory of the perftest programs ("" = PATH)
	size, qd   int      // -size, -qd overrides (0: the scenarios' own)
	benchArgs  []string // test binary flags that select the overridden points
	control    string   // the C-only control program (ci/cping; "" = none)
	controlGID int      // its GID index (-1: the benchmark's)
	store      string   // directory of the stored calibrations ("" = none)
	commit     string   // the commit measured (-commit)
	render     string   // -render: the directory whose calibrations to render
	phases     string   // -phases: the directory of a rotation's raw outputs to split into phases
	bounds     string   // -phase-bounds: where -phases splits, in µs
	readme     string   // -readme: the file whose table -render replaces

	// Found before the first run.
	start        time.Time // UTC start of the calibration
	cpusLine     string    // the benchmark's rdma-cpus line
	cpus         [2]int    // its requester's and passive side's CPUs (-1: unpinned)
	taskset      string    // taskset's path (needed when a CPU is pinned)
	benchGID     int       // the benchmark's GID index (rdma-gid-index; -1: none)
	cmAddr       string    // the device's IPv4 address, for perftest -R (rdma_cm scenarios only)
	bootID, kern string    // for the stored record
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Where -store reads the boot id and the kernel release.
var (
	bootIDPath    = "/proc/sys/kernel/random/boot_id"
	osReleasePath = "/proc/sys/kernel/osrelease"
)

func run(args []string, stdout, stderr io.Writer) int {
	c := config{cpus: [2]int{-1, -1}}
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.dev, "dev", os.Getenv("RDMA_DEVICE"), "RDMA device (default: $RDMA_DEVICE, else the first in /sys/class/infiniband)")
	fs.StringVar(&c.bench, "bench", ".cache/bench.test", "rdmabench test binary (go test -c -o .cache/bench.test ./bench_test)")
	fs.StringVar(&c.benchDir, "benchdir", "bench_test", "working directory of the test binary, as go test would use")
	fs.StringVar(&c.keep, "keep", "", "directory for every raw output (default .cache/calibrate/<UTC time>)")
	fs.StringVar(&c.only, "only", "", "comma-separated parts of scenario names to run (e.g. lat or write_bw,read_lat); default all")
	fs.IntVar(&c.iters, "iters", 5000, "perftest -n and rdmabench -test.benchtime Nx")
	fs.IntVar(&c.runs, "runs", 6, "pairs per scenario: each runs every contestant once (latency P1 L1 P2 L2 O, bandwidth P1 B1 P2 B2), in an order rotated by one each pair")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "deadline of every perftest run, benchmark run and control run")
	fs.BoolVar(&c.markdown, "markdown", false, "print the table as Markdown")
	fs.StringVar(&c.perftestD, "perftest", "", "directory of the perftest programs (default: $PATH)")
	fs.IntVar(&c.size, "size", 0, "message size for every scenario but the atomics (perftest -s; the benchmark's size= point via -rdma.sizes); 0: each scenario's own")
	fs.StringVar(&c.control, "control", "", "the C-only control program (make calibrate builds .cache/bin/cping from ci/cping): a contestant of write_lat, rdmabench's own C loop without the Go runtime; \"\" = none")
	fs.IntVar(&c.controlGID, "control-gid", -1, "GID index of the control (default: the benchmark's, from its rdma-gid-index line)")
	fs.IntVar(&c.qd, "qd", 0, "queue depth for every streaming scenario (perftest -t; the benchmark's qd= point via -rdma.qd); 0: each scenario's own")
	fs.StringVar(&c.store, "store", "", "directory to store this calibration in, as <UTC time>-<commit>.json and .txt (make calibrate passes docs/calibration); needs -commit")
	fs.StringVar(&c.commit, "commit", "", "the commit measured, named in the stored file (make calibrate passes it)")
	fs.StringVar(&c.render, "render", "", "print the table of every calibration stored in this directory and run nothing (no device needed)")
	fs.StringVar(&c.readme, "readme", "", "with -render: replace the summary and the table between their calibration-table markers in this Markdown file, whichever it holds (make calibration-table: README.md, docs/performance.md), instead of printing the table")
	fs.StringVar(&c.phases, "phases", "", "print the phases of the runs in this directory (perftest.ROUND.txt: perftest -U; TOOL.ROUND.txt: cping -S; make calibrate-phases) and run nothing")
	fs.StringVar(&c.bounds, "phase-bounds", "14,19", "with -phases: the bounds between phases, in µs of the halved sample, ascending")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if c.phases != "" {
		bounds, err := parseBounds(c.bounds)
		var pr *phaseRuns
		if err == nil {
			pr, err = loadPhases(c.phases)
		}
		if err != nil {
			fmt.Fprintf(stderr, "calibrate: -phases: %v\n", err)
			return 1
		}
		printPhases(stdout, pr, bounds)
		return 0
	}
	if bad := c.check(fs); len(bad) > 0 {
		fmt.Fprintf(stderr, "calibrate: %s\nusage: calibrate [flags] | calibrate -render DIR [-markdown]\n", strings.Join(bad, "; "))
		fs.PrintDefaults()
		return 2
	}
	if c.render != "" {
		var out string
		var err error
		if c.readme != "" {
			err = renderInto(c.readme, c.render)
			out = fmt.Sprintf("calibrate: %s: rendered from %s\n", c.readme, c.render)
		} else {
			out, err = RenderStored(c.render, c.markdown)
		}
		if err != nil {
			fmt.Fprintf(stderr, "calibrate: -render: %v\n", err)
			return 1
		}
		fmt.Fprint(stdout, out)
		return 0
	}
	scs, err := find(c.only)
	if err != nil {
		fmt.Fprintf(stderr, "calibrate: %v\n", err)
		return 2
	}
	scs, c.benchArgs = override(scs, c.size, c.qd)
	c.start = time.Now().UTC()
	if c.store != "" {
		if err := c.storeSetup(); err != nil {
			fmt.Fprintf(stderr, "calibrate: -store: %v\n", err)
			return 1
		}
	}
	rec, err := calibrate(context.Background(), &c, scs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "calibrate: %v\n", err)
		return 1
	}
	return finish(c, rec, stdout, stderr)
}

// finish prints the calibration's table and, with -store, stores the
// calibration with that table; it returns the exit status.
func finish(c config, rec *record, stdout, stderr io.Writer) int {
	var table bytes.Buffer
	printTable(&table, rec, c.markdown)
	rec.Table = table.String()
	fmt.Fprint(stdout, rec.Table)
	if c.store != "" {
		path, err := store(c.store, rec)
		if err != nil {
			fmt.Fprintf(stderr, "calibrate: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "calibrate: stored in %s (and .txt)\n", path)
	}
	return 0
}

// check returns every bad flag value, named with what is wanted.
func (c *config) check(fs *flag.FlagSet) []string {
	var bad []string
	for _, b := range []struct {
		ok   bool
		what string
	}{
		{fs.NArg() == 0, fmt.Sprintf("arguments %q: calibrate takes flags only", fs.Args())},
		{c.iters >= 5, fmt.Sprintf("-iters %d: want at least 5", c.iters)},
		{c.runs >= 1, fmt.Sprintf("-runs %d: want at least 1", c.runs)},
		{c.size >= 0 && c.size <= 1<<20, fmt.Sprintf("-size %d: want 0..1048576", c.size)},
		{c.qd >= 0 && c.qd <= 8192, fmt.Sprintf("-qd %d: want 0..8192", c.qd)},
		{c.timeout > 0, fmt.Sprintf("-timeout %v: want a positive duration", c.timeout)},
		{c.commit == "" || commitName.MatchString(c.commit), fmt.Sprintf("-commit %q: want 1 to 64 letters, digits, '.', '_' or '-' (it names the stored file)", c.commit)},
		{c.store == "" || c.commit != "", fmt.Sprintf("-store %q needs -commit, the commit measured (make calibrate passes it)", c.store)},
	} {
		if !b.ok {
			bad = append(bad, b.what)
		}
	}
	if c.readme != "" && c.render == "" {
		bad = append(bad, fmt.Sprintf("-readme %q needs -render DIR (the calibrations whose table it takes)", c.readme))
	}
	if c.render != "" {
		var runOnly []string
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "render" && f.Name != "markdown" && f.Name != "readme" {
				runOnly = append(runOnly, "-"+f.Name)
			}
		})
		if len(runOnly) > 0 {
			bad = append(bad, fmt.Sprintf("-render %q prints stored calibrations and runs nothing: %s do not apply (only -markdown and -readme do)", c.render, strings.Join(runOnly, ", ")))
		}
	}
	return bad
}

// storeSetup makes sure -store's directory exists and reads what the
// stored record names of this machine, before anything runs.
func (c *config) storeSetup() error {
	if err := os.MkdirAll(c.store, 0o755); err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		to   *string
	}{{bootIDPath, &c.bootID}, {osReleasePath, &c.kern}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return fmt.Errorf("the stored record needs it: %w", err)
		}
		*f.to = strings.TrimSpace(string(b))
	}
	return nil
}

// calibrate finds the device and the benchmark's CPUs, then runs every
// scenario.
func calibrate(ctx context.Context, c *config, scs []scenario, log io.Writer) (*record, error) {
	if c.dev == "" {
		devs, err := filepath.Glob("/sys/class/infiniband/*")
		if err != nil || len(devs) == 0 {
			return nil, errors.New("no RDMA device in /sys/class/infiniband (run through the runner: .cache/rxevm -- .cache/calibrate)")
		}
		c.dev = filepath.Base(devs[0])
	}
	// The benchmark and the control run on the device perftest runs on:
	// the benchmark gets -rdma.dev, and this process's rdmatest (its
	// configuration lines, which the CPUs and the control's GID come
	// from) the same flag.
	c.benchArgs = append([]string{"-rdma.dev", c.dev}, c.benchArgs...)
	devFlags := flag.NewFlagSet("calibrate-device", flag.ContinueOnError)
	rdmatest.RegisterDeviceFlags(devFlags)
	if err := devFlags.Parse([]string{"-rdma.dev", c.dev}); err != nil {
		return nil, fmt.Errorf("device %q: %w", c.dev, err)
	}
	if err := setup(c, rdmatest.Config()); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(scs, func(s scenario) bool { return s.cm }) {
		addr, err := deviceIPv4(sysInfiniband, c.dev, perftestPort, c.benchGID)
		if err != nil {
			return nil, fmt.Errorf("the rdma_cm scenarios (perftest -R) need the device's IPv4 address: %w", err)
		}
		c.cmAddr = addr
		fmt.Fprintf(log, "calibrate: rdma_cm scenarios: perftest -R's client connects to %s (%s GID index %d)\n", addr, c.dev, c.benchGID)
	}
	if c.keep == "" {
		c.keep = filepath.Join(".cache", "calibrate", c.start.Format("20060102T150405Z"))
	}
	if err := os.MkdirAll(c.keep, 0o755); err != nil {
		return nil, fmt.Errorf("raw output directory: %w", err)
	}
	bench, err := filepath.Abs(c.bench)
	if err != nil {
		return nil, fmt.Errorf("test binary: %w", err)
	}
	c.bench = bench
	if c.control != "" {
		fmt.Fprintf(log, "calibrate: C-only control %s on GID index %d\n", c.control, c.controlGID)
	}
	return runAll(ctx, *c, scs, log)
}
