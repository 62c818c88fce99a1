package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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

// runAll runs every scenario and returns the calibration's record (its
// table not yet printed).
func runAll(ctx context.Context, c config, scs []scenario, log io.Writer) (*record, error) {
	fmt.Fprintf(log, "calibrate: device %s, %d iterations, %d pairs per scenario; %s; raw outputs in %s\n",
		c.dev, c.iters, c.runs, pinText(c.cpus), c.keep)
	rec := &record{Format: storeFormat, Time: c.start.UTC().Format(time.RFC3339), Commit: c.commit, BootID: c.bootID,
		Kernel: c.kern, Device: c.dev, Iters: c.iters, Runs: c.runs, CPUs: c.cpusLine}
	for _, s := range scs {
		sr, err := runScenario(ctx, c, s, log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		rec.Scenarios = append(rec.Scenarios, sr)
	}
	return rec, nil
}

// runScenario runs c.runs pairs of one scenario, each pair every
// contestant once in the rotated order (see contestants), and returns
// every contestant's value of every figure in every pair.
func runScenario(ctx context.Context, c config, s scenario, log io.Writer) (scenarioRecord, error) {
	cs := contestants(s, c.control != "" && hasControl(s))
	vals := make([]map[string][]float64, len(s.figures))
	for j := range vals {
		vals[j] = map[string][]float64{}
	}
	var cols []Column
	ptMoved, rbMoved := map[string]float64{}, map[string]float64{}
	for i := range c.runs {
		run := i + 1
		for _, ct := range rotate(cs, i) {
			var v []float64
			var err error
			switch ct.kind {
			case kindPerftest:
				fmt.Fprintf(log, "calibrate: %s, pair %d/%d: %s %s %s\n", s.name, run, c.runs, ct.id, s.program, strings.Join(s.args, " "))
				v, cols, err = perftestRun(ctx, c, s, run, ct.id, ptMoved)
			case kindLike, kindOwn:
				var extra []string
				if ct.kind == kindLike && s.latency() {
					extra = likeFlags
				}
				if s.cm {
					extra = append(slices.Clip(extra), cmFlag)
				}
				fmt.Fprintf(log, "calibrate: %s, pair %d/%d: %s %s %s\n", s.name, run, c.runs, ct.id, s.bench, strings.Join(extra, " "))
				v, err = benchRun(ctx, c, s, run, ct, extra, rbMoved)
			case kindControl, kindControlLike:
				like := ct.kind == kindControlLike
				fmt.Fprintf(log, "calibrate: %s, pair %d/%d: %s %s%s\n", s.name, run, c.runs, ct.id, c.control, map[bool]string{true: " -S"}[like])
				v, err = controlRun(ctx, c, s, run, ct.id, like)
			}
			if err != nil {
				return scenarioRecord{}, err
			}
			for j, f := range s.figures {
				if measures(ct.kind, f) {
					vals[j][ct.id] = append(vals[j][ct.id], v[j])
				}
			}
		}
	}
	sr := scenarioRecord{Name: s.name, Perftest: strings.Join(append([]string{s.program}, s.args...), " "), Bench: s.bench.String(),
		Differs: s.differs, PerftestCounters: movedText(ptMoved), BenchCounters: movedText(rbMoved)}
	for _, ct := range cs {
		sr.Order = append(sr.Order, ct.id)
	}
	for j, f := range s.figures {
		sr.Figures = append(sr.Figures, figureRecord{Label: f.label, Unit: f.display,
			PerftestColumn: fmt.Sprintf("%s %s %s", s.program, f.side, cols[j]), LikeMetric: f.like, OwnMetric: f.own, Values: vals[j]})
	}
	return sr, nil
}

// perftestRun runs the scenario's perftest program once (its outputs
// kept as <stem>.<run>.<id>.{client,server}), adds the watched port
// counters that moved to moved, and returns each figure's value in its
// display unit and the column it came from.
func perftestRun(ctx context.Context, c config, s scenario, run int, id string, moved map[string]float64) ([]float64, []Column, error) {
	base := filepath.Join(c.keep, fmt.Sprintf("%s.%d.%s", s.stem(), run, id))
	before, cerr := rdmatest.ReadCounters(c.dev, perftestPort)
	outs, err := runPerftest(ctx, c, s, base)
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
	reps := map[side]*Report{}
	vals := make([]float64, len(s.figures))
	cols := make([]Column, len(s.figures))
	for j, f := range s.figures {
		rep := reps[f.side]
		if rep == nil {
			if rep, err = ParsePerftest(bytes.NewReader(outs[f.side])); err != nil {
				return nil, nil, fmt.Errorf("%s %s (%s.%s): %w", s.program, f.side, base, f.side, err)
			}
			reps[f.side] = rep
		}
		v, col, ok := rep.Lookup(f.column, s.size)
		if !ok {
			return nil, nil, fmt.Errorf("%s's %s output (%s.%s) has no column %q for size %d", s.program, f.side, base, f.side, f.column, s.size)
		}
		if v <= 0 {
			return nil, nil, fmt.Errorf("%s's %s output (%s.%s): %s %v for size %d, want a positive number", s.program, f.side, base, f.side, col, v, s.size)
		}
		b, err := toBase(v, col)
		if err != nil {
			return nil, nil, err
		}
		vals[j], cols[j] = fromBase(b, f.display), col
	}
	return vals, cols, nil
}

// benchBase converts an rdmabench value as printed to bytes/s (units
// ending in MB/s — MB/s, recv-MB/s —, 1 MB = 10^6 bytes) or ns (units
// ending in -ns).
func benchBase(v float64, unit string) float64 {
	if strings.HasSuffix(unit, "MB/s") {
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
// listening yet: over TCP, and over rdma_cm (-R), where a connect to a
// port with no listener is rejected (RDMA_CM_EVENT_REJECTED, 8; calibration
// 6 lost a whole run to it once, on its 21st perftest -R client).
var notListening = []string{"Couldn't connect to", "Unable to open file descriptor for socket connection",
	"Unexpected CM event bl blka 8"}

// runPerftest runs s.program as server (on the benchmark's passive CPU)
// and client (on its requester CPU; retried until the server listens),
// writes their outputs to base.server and base.client and returns them.
func runPerftest(ctx context.Context, c config, s scenario, base string) (map[side][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	prog := s.program
	if c.perftestD != "" {
		prog = filepath.Join(c.perftestD, prog)
	}
	args := append([]string{"-d", c.dev, "-F", "-n", strconv.Itoa(c.iters)}, s.args...)
	var srvOut bytes.Buffer
	name, argv := pinned(c, c.cpus[1], prog, args)
	srv := exec.CommandContext(ctx, name, argv...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	srv.WaitDelay = waitDelay
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("start %s server: %w", prog, err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Wait() }()

	var cliOut []byte
	var cliErr error
	for {
		time.Sleep(200 * time.Millisecond)
		name, argv := pinned(c, c.cpus[0], prog, append(slices.Clip(args), serverAddr(c, s)))
		cli := exec.CommandContext(ctx, name, argv...)
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
	if cliErr != nil {
		cancel() // the server would wait for a client forever
	}
	srvErr := <-srvDone
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
	return files, nil
}

// serverAddr is the address perftest's client is given: 127.0.0.1 for
// the exchange of QP data over TCP, the device's IPv4 address for rdma_cm
// (-R), which resolves it to the device.
func serverAddr(c config, s scenario) string {
	if s.cm {
		return c.cmAddr
	}
	return "127.0.0.1"
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

// benchRun runs the scenario's benchmark once as contestant ct
// (-test.count 1, then extra; its output kept as
// bench-<stem>.<run>.<id>.txt), checks that it ran on the CPUs perftest
// was given, adds the port counters it reports as moved (units ending in
// /run) to moved, and returns the value of each figure ct measures in
// its display unit (NaN for the others).
func benchRun(ctx context.Context, c config, s scenario, run int, ct contestant, extra []string, moved map[string]float64) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	args := append([]string{"-test.run", "^$", "-test.bench", benchRegexp(s.bench),
		"-test.count", "1", "-test.benchtime", strconv.Itoa(c.iters) + "x"}, c.benchArgs...)
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, c.bench, args...)
	cmd.Dir = c.benchDir
	cmd.WaitDelay = waitDelay
	out, err := cmd.CombinedOutput()
	keep := filepath.Join(c.keep, fmt.Sprintf("bench-%s.%d.%s.txt", s.stem(), run, ct.id))
	if werr := os.WriteFile(keep, out, 0o644); werr != nil {
		return nil, fmt.Errorf("keep benchmark output: %w", werr)
	}
	what := fmt.Sprintf("benchmark %s (%s, pair %d/%d)", s.bench, ct.id, run, c.runs)
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
	if line := got[0].GetConfig("rdma-cpus"); line != "" && c.cpusLine != "" {
		cpus, err := parseCPUs(line)
		if err != nil || cpus != c.cpus {
			return nil, fmt.Errorf("%s ran with rdma-cpus %q, but perftest is pinned from %q (%s); output in %s", what, line, c.cpusLine, pinText(c.cpus), keep)
		}
	}
	if err := checkLatencyWork(got[0], s, ct); err != nil {
		return nil, fmt.Errorf("%s %w; output in %s", what, err, keep)
	}
	if err := checkConnection(got[0], s); err != nil {
		return nil, fmt.Errorf("%s %w; output in %s", what, err, keep)
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
		vals[j] = math.NaN()
		if !measures(ct.kind, f) {
			continue
		}
		unit := f.like
		if ct.kind == kindOwn {
			unit = f.own
		}
		v, ok := byUnit[unit]
		if !ok {
			return nil, fmt.Errorf("%s reported no %s; output in %s", what, unit, keep)
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return nil, fmt.Errorf("%s reported %s %v, want a positive number; output in %s", what, unit, v, keep)
		}
		vals[j] = fromBase(benchBase(v, unit), f.display)
	}
	return vals, nil
}

// checkLatencyWork checks, where the benchmark prints them (rdmatest's
// rdma-signal-all and rdma-warmup configuration lines), that a latency
// run did the work its contestant stands for: the like-for-like runs
// perftest's (signal-all true, warm-up 0), the own-definition run ours
// (signal-all false), whatever RDMA_SIGNAL_ALL or RDMA_WARMUP say in the
// environment.
func checkLatencyWork(r *benchfmt.Result, s scenario, ct contestant) error {
	if !s.latency() {
		return nil
	}
	want := [][2]string{{"rdma-signal-all", strconv.FormatBool(ct.kind == kindLike)}}
	if ct.kind == kindLike {
		want = append(want, [2]string{"rdma-warmup", "0"})
	}
	for _, kv := range want {
		// rdmatest prints the lines only where they differ from the
		// defaults (signal-all false): absent is the default.
		got := r.GetConfig(kv[0])
		if got == "" && kv[1] == "false" {
			continue
		}
		if got != kv[1] {
			return fmt.Errorf("ran with %s %q, want %s (RDMA_SIGNAL_ALL or RDMA_WARMUP set?)", kv[0], got, kv[1])
		}
	}
	return nil
}

// cmFlag makes the benchmark connect through the RDMA connection
// manager, as perftest -R does; cmConfig is the configuration line that
// says it did (printed only then: absent means connected by hand).
const (
	cmFlag   = "-rdma.cm"
	cmConfig = "rdma-connect"
	cmValue  = "cm"
)

// checkConnection checks that an rdma_cm scenario's benchmark run was
// connected through the CM (its configuration line) and every other by
// hand, whatever RDMA_CM says in the environment.
func checkConnection(r *benchfmt.Result, s scenario) error {
	got := r.GetConfig(cmConfig)
	switch {
	case s.cm && got != cmValue:
		return fmt.Errorf("ran with %s %q, want %q (%s given)", cmConfig, got, cmValue, cmFlag)
	case !s.cm && got == cmValue:
		return fmt.Errorf("ran with %s %q, want connected by hand (RDMA_CM set?)", cmConfig, got)
	}
	return nil
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
