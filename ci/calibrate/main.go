// Command calibrate runs perftest (ib_{send,write,read,atomic}_{lat,bw})
// and the matching rdmabench benchmarks on the same RDMA device, one
// after the other in one session, and prints their figures side by side
// with the ratio rdmabench ÷ perftest and, per scenario, the definitions
// that differ.
//
// Usage (make calibrate does this, inside the runner so that both see
// the same device in one VM boot):
//
//	go test -c -o .cache/bench.test ./bench_test
//	go build -o .cache/bin/calibrate ./ci/calibrate
//	.cache/rxevm -- .cache/bin/calibrate [flags]
//
// Each perftest program runs as server and client on the same device
// over 127.0.0.1 (-F, -n ITERS, and options matched to the benchmark's
// axes: see scenarios); the client is retried until the server listens
// (perftest itself does not retry), and every process has a deadline.
// The runs are interleaved pairs: for each scenario, -runs times,
// perftest runs once and the benchmark runs once right after it, or
// before it in even pairs (-test.count 1 -test.benchtime ITERSx, so both
// do the same number of operations per run), because the speed of a TCG guest drifts over
// tens of seconds and two blocks run at different times would not be
// comparable. The perftest and rdmabench columns are the medians of
// each side's runs; the ratio is the median of the per-pair ratios
// rdmabench ÷ perftest (which need not equal the quotient of the two
// medians), and the ratio range their minimum and maximum: a
// distribution-free confidence interval of the median ratio, which lies
// outside it with probability 2·2^-runs (97% confidence for 6 pairs,
// 99.8% for 10), whatever the noise's distribution.
//
// With -control (make calibrate passes it), write_lat has a third
// contestant: ci/cping, rdmabench's own C loops (verbs/loop.c) over the
// WriteLat setup in a process without the Go runtime. Its rows, "write_lat
// 8 B [C-only control]", give its ratio to perftest: what the benchmark
// adds beyond it is what the Go process around the same loop costs. The
// three then run in rotated order (perftest, benchmark, control;
// benchmark, control, perftest; …).
//
// Units: perftest prints bandwidth in MiB/s (2^20 bytes/s; versions
// before PR #257 label the same unit [MB/sec]); rdmabench prints MB/s =
// 10^6 bytes/s. The table shows both in MB/s = 10^6 bytes/s (perftest's
// value × 1.048576) and latencies in µs.
//
// Exit status: 0 table printed; 1 a program failed or printed no usable
// figure (the output is kept under -keep and named); 2 usage.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmabench/rdmabench/rdmatest"
	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"golang.org/x/perf/benchfmt"
)

// config is the command line.
type config struct {
	dev         string
	bench       string
	benchDir    string
	keep        string
	only        string
	iters       int
	runs        int
	timeout     time.Duration
	markdown    bool
	perftestD   string   // directory of the perftest programs ("" = PATH)
	size, qd    int      // -size, -qd overrides (0: the scenarios' own)
	benchArgs   []string // test binary flags that select the overridden points
	control     string   // the C-only control program (ci/cping; "" = none)
	controlGID  int      // its GID index (-1: the benchmark's)
	controlCPUs [2]int   // its requester's and passive side's CPUs (-1: unpinned)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	var c config
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.dev, "dev", os.Getenv("RDMA_DEVICE"), "RDMA device (default: $RDMA_DEVICE, else the first in /sys/class/infiniband)")
	fs.StringVar(&c.bench, "bench", ".cache/bench.test", "rdmabench test binary (go test -c -o .cache/bench.test ./bench_test)")
	fs.StringVar(&c.benchDir, "benchdir", "bench_test", "working directory of the test binary, as go test would use")
	fs.StringVar(&c.keep, "keep", "", "directory for every raw output (default .cache/calibrate/<UTC time>)")
	fs.StringVar(&c.only, "only", "", "comma-separated parts of scenario names to run (e.g. lat or write_bw,read_lat); default all")
	fs.IntVar(&c.iters, "iters", 5000, "perftest -n and rdmabench -test.benchtime Nx")
	fs.IntVar(&c.runs, "runs", 6, "interleaved pairs per scenario: perftest once and the benchmark once (-test.count 1), the benchmark first in even pairs")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "deadline of every perftest run and of every benchmark run")
	fs.BoolVar(&c.markdown, "markdown", false, "print the table as Markdown")
	fs.StringVar(&c.perftestD, "perftest", "", "directory of the perftest programs (default: $PATH)")
	fs.IntVar(&c.size, "size", 0, "message size for every scenario but the atomics (perftest -s; the benchmark's size= point via -rdma.sizes); 0: each scenario's own")
	fs.StringVar(&c.control, "control", "", "the C-only control program (make calibrate builds .cache/bin/cping from ci/cping): a third contestant of write_lat, rdmabench's own C loop without the Go runtime; \"\" = none")
	fs.IntVar(&c.controlGID, "control-gid", -1, "GID index of the control (default: the benchmark's, from its rdma-gid-index line)")
	fs.IntVar(&c.qd, "qd", 0, "queue depth for every streaming scenario (perftest -t; the benchmark's qd= point via -rdma.qd); 0: each scenario's own")
	if err := fs.Parse(args); err != nil {
		return 2
	}
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
	} {
		if !b.ok {
			bad = append(bad, b.what)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "calibrate: %s\nusage: calibrate [flags]\n", strings.Join(bad, "; "))
		fs.PrintDefaults()
		return 2
	}
	scs, err := find(c.only)
	if err != nil {
		fmt.Fprintf(stderr, "calibrate: %v\n", err)
		return 2
	}
	scs, c.benchArgs = override(scs, c.size, c.qd)
	rows, err := calibrate(context.Background(), &c, scs, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "calibrate: %v\n", err)
		return 1
	}
	printTable(stdout, c, rows)
	return 0
}

// calibrate runs every scenario and returns its rows.
func calibrate(ctx context.Context, c *config, scs []scenario, log io.Writer) ([]result, error) {
	if c.dev == "" {
		devs, err := filepath.Glob("/sys/class/infiniband/*")
		if err != nil || len(devs) == 0 {
			return nil, errors.New("no RDMA device in /sys/class/infiniband (run through the runner: .cache/rxevm -- .cache/calibrate)")
		}
		c.dev = filepath.Base(devs[0])
	}
	// The benchmark and the control run on the device perftest runs on:
	// the benchmark gets -rdma.dev, and this process's rdmatest (its
	// configuration lines, which the control's GID and CPUs come from)
	// the same flag.
	c.benchArgs = append([]string{"-rdma.dev", c.dev}, c.benchArgs...)
	devFlags := flag.NewFlagSet("calibrate-device", flag.ContinueOnError)
	rdmatest.RegisterDeviceFlags(devFlags)
	if err := devFlags.Parse([]string{"-rdma.dev", c.dev}); err != nil {
		return nil, fmt.Errorf("device %q: %w", c.dev, err)
	}
	if c.keep == "" {
		c.keep = filepath.Join(".cache", "calibrate", time.Now().UTC().Format("20060102T150405Z"))
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
		if err := controlSetup(c, rdmatest.Config()); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "calibrate: C-only control %s on GID index %d, CPUs %v (the benchmark's)\n", c.control, c.controlGID, c.controlCPUs)
	}
	fmt.Fprintf(log, "calibrate: device %s, %d iterations, %d interleaved pairs per scenario; raw outputs in %s\n", c.dev, c.iters, c.runs, c.keep)
	var out []result
	for _, s := range scs {
		r, err := runScenario(ctx, *c, s, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		out = append(out, r...)
	}
	return out, nil
}

// result is one row of the table.
type result struct {
	sc        scenario
	fig       figure
	col       Column  // perftest column the figure came from
	perftest  float64 // median over runs, display unit
	rdmabench float64 // median over runs, display unit
	ratios    ratios  // per-pair ratios rdmabench ÷ perftest
	counters  string  // port counters that moved during the benchmark runs
	ptCount   string  // port counters that moved during the perftest runs
}

// runScenario runs c.runs interleaved pairs of one scenario: perftest
// once and the benchmark once, perftest first in odd pairs — and, with
// the C-only control, triples rotated (perftest, benchmark, control;
// benchmark, control, perftest; control, perftest, benchmark; …).
func runScenario(ctx context.Context, c config, s scenario, log io.Writer) ([]result, error) {
	pt := make([][]float64, len(s.figures))
	rb := make([][]float64, len(s.figures))
	ct := make([][]float64, len(s.figures))
	withControl := c.control != "" && hasControl(s)
	var cols []Column
	ptMoved, rbMoved := map[string]float64{}, map[string]float64{}
	for i := range c.runs {
		run := i + 1
		var p, b, k []float64
		perftestOnce := func() error {
			fmt.Fprintf(log, "calibrate: %s %s (pair %d/%d)\n", s.program, strings.Join(s.args, " "), run, c.runs)
			var err error
			p, cols, err = perftestRun(ctx, c, s, run, ptMoved)
			return err
		}
		benchOnce := func() error {
			fmt.Fprintf(log, "calibrate: %s (-test.count 1 -test.benchtime %dx, pair %d/%d)\n", s.bench, c.iters, run, c.runs)
			var err error
			b, err = benchRun(ctx, c, s, run, rbMoved)
			return err
		}
		// Each pair starts with the next contestant, so that whatever the
		// first run pays (or gains) is shared.
		order := []func() error{perftestOnce, benchOnce}
		if withControl {
			order = append(order, func() error {
				fmt.Fprintf(log, "calibrate: C-only control %s (pair %d/%d)\n", c.control, run, c.runs)
				var err error
				k, err = controlRun(ctx, c, s, run)
				return err
			})
		}
		for j := range order {
			if err := order[(i+j)%len(order)](); err != nil {
				return nil, err
			}
		}
		for j := range s.figures {
			pt[j], rb[j] = append(pt[j], p[j]), append(rb[j], b[j])
			if withControl {
				ct[j] = append(ct[j], k[j])
			}
		}
	}
	var out []result
	for j, f := range s.figures {
		out = append(out, result{sc: s, fig: f, col: cols[j], perftest: median(pt[j]), rdmabench: median(rb[j]),
			ratios: pairRatios(pt[j], rb[j]), counters: movedText(rbMoved), ptCount: movedText(ptMoved)})
	}
	if withControl {
		for j, f := range s.figures {
			out = append(out, result{sc: controlScenario(s), fig: f, col: cols[j], perftest: median(pt[j]), rdmabench: median(ct[j]),
				ratios: pairRatios(pt[j], ct[j]), ptCount: movedText(ptMoved), counters: "not read"})
		}
	}
	return out, nil
}

// ratios summarises the per-pair ratios rdmabench ÷ perftest of one
// figure.
type ratios struct {
	median, min, max float64
}

// pairRatios returns the median, minimum and maximum of rb[i] ÷ pt[i]
// over the pairs i (pt and rb have the same length, at least 1).
func pairRatios(pt, rb []float64) ratios {
	q := make([]float64, len(pt))
	for i := range pt {
		q[i] = rb[i] / pt[i]
	}
	return ratios{median: median(q), min: slices.Min(q), max: slices.Max(q)}
}

// perftestRun runs the scenario's perftest program once (run numbers
// its kept outputs), adds the watched port counters that moved to moved,
// and returns each figure's value in its display unit and the column it
// came from.
func perftestRun(ctx context.Context, c config, s scenario, run int, moved map[string]float64) ([]float64, []Column, error) {
	base := filepath.Join(c.keep, fmt.Sprintf("%s.%d", s.program, run))
	before, cerr := rdmatest.ReadCounters(c.dev, perftestPort)
	rep, err := runPerftest(ctx, c, s, base)
	if err != nil {
		return nil, nil, err
	}
	if cerr == nil {
		var after rdmatest.Counters
		if after, cerr = rdmatest.ReadCounters(c.dev, perftestPort); cerr == nil {
			d, derr := rdmatest.Delta(before, after)
			cerr = derr
			for name, v := range d {
				if rdmatest.Watched(name) {
					moved[name] += float64(v)
				}
			}
		}
	}
	if cerr != nil {
		moved["(counters unreadable: "+cerr.Error()+")"] = 0
	}
	vals := make([]float64, len(s.figures))
	cols := make([]Column, len(s.figures))
	for j, f := range s.figures {
		v, col, ok := rep.Lookup(f.column, s.size)
		if !ok {
			return nil, nil, fmt.Errorf("%s's %s output (%s.%s) has no column %q for size %d", s.program, s.side, base, s.side, f.column, s.size)
		}
		b, err := toBase(v, col)
		if err != nil {
			return nil, nil, err
		}
		vals[j], cols[j] = fromBase(b, f.display), col
	}
	return vals, cols, nil
}

// benchBase converts an rdmabench value as printed to bytes/s (MB/s,
// 1 MB = 10^6 bytes) or ns (units ending in -ns).
func benchBase(v float64, unit string) float64 {
	if unit == "MB/s" {
		return v * 1e6
	}
	return v
}

// fromBase converts bytes/s or ns to the display unit.
func fromBase(v float64, display string) float64 {
	switch display {
	case "µs":
		return v / 1e3
	case "MB/s":
		return v / 1e6
	}
	panic("calibrate: unknown display unit " + display)
}

// waitDelay bounds the wait for a killed program's output pipes, which a
// child it started may still hold open.
const waitDelay = 2 * time.Second

// notListening are client messages that mean the server was not
// listening yet.
var notListening = []string{"Couldn't connect to", "Unable to open file descriptor for socket connection"}

// runPerftest runs s.program as server and client (retried until the
// server listens), writes their outputs to base.server and base.client,
// and parses the side s.side.
func runPerftest(ctx context.Context, c config, s scenario, base string) (*Report, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	prog := s.program
	if c.perftestD != "" {
		prog = filepath.Join(c.perftestD, prog)
	}
	args := append([]string{"-d", c.dev, "-F", "-n", strconv.Itoa(c.iters)}, s.args...)
	var srvOut bytes.Buffer
	srv := exec.CommandContext(ctx, prog, args...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	srv.WaitDelay = waitDelay
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start %s server: %w", prog, err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()

	var cliOut []byte
	var cliErr error
	for attempt := 1; ; attempt++ {
		time.Sleep(200 * time.Millisecond)
		cli := exec.CommandContext(ctx, prog, append(args, "127.0.0.1")...)
		cli.WaitDelay = waitDelay
		cliOut, cliErr = cli.CombinedOutput()
		if cliErr == nil || ctx.Err() != nil || !containsAny(cliOut, notListening) {
			break
		}
		select {
		case err := <-srvDone: // the server died before listening
			srvDone <- err
			cliErr = fmt.Errorf("server exited before the client could connect (%v)", err)
		default:
			continue
		}
		break
	}
	var srvErr error
	if cliErr != nil {
		cancel() // the server would wait for a client forever
	}
	srvErr = <-srvDone
	files := map[side][]byte{client: cliOut, server: srvOut.Bytes()}
	for sd, b := range files {
		if err := os.WriteFile(base+"."+string(sd), b, 0o644); err != nil {
			return nil, fmt.Errorf("keep %s output: %w", sd, err)
		}
	}
	switch {
	case cliErr != nil:
		return nil, fmt.Errorf("%s client: %w%s; output in %s.client, server's in %s.server", prog, cliErr, deadlineNote(ctx, c), base, base)
	case srvErr != nil:
		return nil, fmt.Errorf("%s server: %w%s; output in %s.server", prog, srvErr, deadlineNote(ctx, c), base)
	}
	rep, err := ParsePerftest(bytes.NewReader(files[s.side]))
	if err != nil {
		return nil, fmt.Errorf("%s %s (%s.%s): %w", prog, s.side, base, s.side, err)
	}
	return rep, nil
}

func deadlineNote(ctx context.Context, c config) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf(" (killed at the %v deadline, -timeout)", c.timeout)
	}
	return ""
}

func containsAny(b []byte, subs []string) bool {
	for _, s := range subs {
		if bytes.Contains(b, []byte(s)) {
			return true
		}
	}
	return false
}

// benchRun runs the scenario's benchmark once (-test.count 1; run
// numbers its kept output, bench-<program>.<run>.txt), adds the port
// counters it reports as moved (units ending in /run) to moved, and
// returns each figure's value in its display unit.
func benchRun(ctx context.Context, c config, s scenario, run int, moved map[string]float64) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	args := append([]string{"-test.run", "^$", "-test.bench", benchRegexp(s.bench),
		"-test.count", "1", "-test.benchtime", strconv.Itoa(c.iters) + "x"}, c.benchArgs...)
	cmd := exec.CommandContext(ctx, c.bench, args...)
	cmd.Dir = c.benchDir
	cmd.WaitDelay = waitDelay
	out, err := cmd.CombinedOutput()
	keep := filepath.Join(c.keep, fmt.Sprintf("bench-%s.%d.txt", s.program, run))
	if werr := os.WriteFile(keep, out, 0o644); werr != nil {
		return nil, fmt.Errorf("keep benchmark output: %w", werr)
	}
	what := fmt.Sprintf("benchmark %s (pair %d/%d)", s.bench, run, c.runs)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w%s; output in %s", what, c.bench, err, deadlineNote(ctx, c), keep)
	}
	var got []*benchfmt.Result
	rd := benchfmt.NewReader(bytes.NewReader(out), keep)
	for rd.Scan() {
		if r, ok := rd.Result().(*benchfmt.Result); ok && sameBench(string(r.Name.Full()), s.bench) {
			got = append(got, r.Clone())
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("%s: read output %s: %w", what, keep, err)
	}
	if len(got) != 1 {
		return nil, fmt.Errorf("%s: %d results, want 1; output in %s", what, len(got), keep)
	}
	byUnit := map[string]float64{}
	for _, v := range got[0].Values {
		unit, val := v.Unit, v.Value
		if v.OrigUnit != "" {
			unit, val = v.OrigUnit, v.OrigValue
		}
		byUnit[unit] = val
		if name, ok := strings.CutSuffix(unit, "/run"); ok {
			moved[name] += val
		}
	}
	vals := make([]float64, len(s.figures))
	for j, f := range s.figures {
		v, ok := byUnit[f.unit]
		if !ok {
			return nil, fmt.Errorf("%s reported no %s; output in %s", what, f.unit, keep)
		}
		vals[j] = fromBase(benchBase(v, f.unit), f.display)
	}
	return vals, nil
}

// perftestPort is the port perftest uses by default (-i 1).
const perftestPort = 1

// movedText lists counter totals as "name total, ..." sorted by name.
func movedText(moved map[string]float64) string {
	var out []string
	for name, v := range moved {
		if v == 0 {
			out = append(out, name)
			continue
		}
		out = append(out, fmt.Sprintf("%s %g", name, v))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// neutralParts are name parts of axes added to a family later whose value
// is the behaviour the scenario already means (SendBW and WriteBW gained
// a bidir axis): a result named with them is the scenario's benchmark.
// The -test.bench pattern cannot leave them out (a pattern with fewer
// levels also runs the other values, one with more levels would run
// nothing on older binaries), so benchRun filters instead.
var neutralParts = map[benchname.Part]bool{{Key: "bidir", Value: "false"}: true}

// sameBench tells whether result name got (as printed, with or without
// its -GOMAXPROCS suffix) is the benchmark want, ignoring neutral parts.
// A name that does not parse is no benchmark of ours.
func sameBench(got string, want benchname.Name) bool {
	n, err := benchname.Parse(got)
	if err != nil || n.Base != want.Base {
		return false
	}
	kept := slices.DeleteFunc(n.Parts, func(p benchname.Part) bool { return neutralParts[p] })
	return slices.Equal(kept, want.Parts)
}

// median is the middle value (mean of the middle two for an even count).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
