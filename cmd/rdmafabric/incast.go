package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
	"github.com/rdmabench/rdmabench/internal/results"
	"github.com/rdmabench/rdmabench/internal/stats"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
)

// incastOptions are rdmafabric incast's command line, checked.
type incastOptions struct {
	nodes, nodesFile string
	port             int
	tokenFile        string
	receivers        string // names, comma-separated; "" every node
	senders          string // counts, comma-separated; "" 2..n−1
	stream, victim   string
	iters, vIters    int
	victimDelay      time.Duration
	runs             int
	caseTimeout      time.Duration
	out              string
	minOverlap       float64
}

// incastFlags registers incast's flags.
func incastFlags(fs *flag.FlagSet, o *incastOptions) {
	fs.StringVar(&o.nodes, "nodes", "", "the nodes, comma-separated (default: -nodes-file, or the Slurm job's nodes)")
	fs.StringVar(&o.nodesFile, "nodes-file", "", "file of node names, one a line")
	fs.IntVar(&o.port, "port", 18515, "the agents' port (rdmapeer -agent -listen)")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the agents' token (default: $RDMA_PEER_TOKEN)")
	fs.StringVar(&o.receivers, "receivers", "", "the receivers, comma-separated, in order (default: every node in turn)")
	fs.StringVar(&o.senders, "senders", "", "sender counts N to sweep, comma-separated, each 2..nodes−1 (default: all of them)")
	fs.StringVar(&o.stream, "scenario", "WriteBW/size=65536", "each sender's stream, a bench_test scenario that moves bytes")
	fs.IntVar(&o.iters, "iters", 500, "iterations of each sender's stream: its fixed transfer is iters × the message size")
	fs.StringVar(&o.victim, "victim", "WriteLat/size=8", "the victim flow, a latency scenario (the receiver's agent runs it)")
	fs.IntVar(&o.vIters, "victim-iters", 1000, "iterations of the victim flow")
	fs.DurationVar(&o.victimDelay, "victim-delay", time.Second, "start the victim this long after the senders' runs are sent (their setup comes first)")
	fs.IntVar(&o.runs, "runs", 3, fmt.Sprintf("runs per case, 1..%d", coord.MaxRuns))
	fs.DurationVar(&o.caseTimeout, "case-timeout", 10*time.Minute, "deadline of one case: the idle victim, then the incast")
	fs.StringVar(&o.out, "o", "incast.txt", "the result stream (benchfmt)")
	fs.Float64Var(&o.minOverlap, "min-overlap", 0.9, "the least share of the victim's run inside the incast for its ratios to count (0..1)")
}

// checkIncastOptions tells the first thing wrong with o, as a
// usageError, before anything is dialled.
func checkIncastOptions(o *incastOptions) error {
	var err error
	switch {
	case o.nodes != "" && o.nodesFile != "":
		err = fmt.Errorf("-nodes %q and -nodes-file %q: give one of them", o.nodes, o.nodesFile)
	case o.port < 1 || o.port > 65535:
		err = fmt.Errorf("-port %d: want 1..65535", o.port)
	case o.iters < 1 || o.iters > oob.MaxIters:
		err = fmt.Errorf("-iters %d: want 1..%d", o.iters, oob.MaxIters)
	case o.vIters < 1 || o.vIters > oob.MaxIters:
		err = fmt.Errorf("-victim-iters %d: want 1..%d", o.vIters, oob.MaxIters)
	case o.victimDelay < 0 || o.victimDelay > time.Hour:
		err = fmt.Errorf("-victim-delay %v: want 0..1h", o.victimDelay)
	case o.runs < 1 || o.runs > coord.MaxRuns:
		err = fmt.Errorf("-runs %d: want 1..%d", o.runs, coord.MaxRuns)
	case o.caseTimeout <= 0:
		err = fmt.Errorf("-case-timeout %v: must be positive", o.caseTimeout)
	case o.out == "":
		err = errors.New(`-o "": name the result file`)
	case !(o.minOverlap >= 0 && o.minOverlap <= 1):
		err = fmt.Errorf("-min-overlap %v: want 0..1", o.minOverlap)
	}
	if err == nil {
		err = checkIncastScenario("-scenario", o.stream, false)
	}
	if err == nil {
		err = checkIncastScenario("-victim", o.victim, true)
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// checkIncastScenario tells why name cannot be the stream (latency
// false) or the victim (latency true).
func checkIncastScenario(flagName, name string, latency bool) error {
	n, err := scenario.Parse(name)
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", flagName, err)
	case len(name) > oob.MaxScenarioLen:
		return fmt.Errorf("%s %.40q…: %d bytes, at most %d", flagName, name, len(name), oob.MaxScenarioLen)
	case latency && n.Spec.Kind != scenario.KindLatency:
		return fmt.Errorf("%s %s: not a latency scenario (its percentiles are the victim's)", flagName, name)
	case !latency && n.Spec.Kind == scenario.KindLatency:
		return fmt.Errorf("%s %s: a latency scenario; a sender streams (WriteBW, SendBW, …)", flagName, name)
	}
	return nil
}

// incastCases resolves -receivers and -senders against the node list.
func incastCases(o incastOptions, names []string) ([]schedule.IncastCase, error) {
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[strings.ToLower(n)] = i
	}
	var recv, ns []int
	if o.receivers != "" {
		for _, r := range strings.Split(o.receivers, ",") {
			i, ok := index[strings.ToLower(strings.TrimSpace(r))]
			if !ok {
				return nil, fmt.Errorf("-receivers: %q is not one of the %d nodes", r, len(names))
			}
			recv = append(recv, i)
		}
	}
	if o.senders != "" {
		for _, s := range strings.Split(o.senders, ",") {
			k, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, fmt.Errorf("-senders: %q is not a count", s)
			}
			ns = append(ns, k)
		}
	}
	cases, err := schedule.Incast(len(names), recv, ns)
	if err != nil {
		return nil, fmt.Errorf("-receivers %q -senders %q: %w", o.receivers, o.senders, err)
	}
	return cases, nil
}

// incastCommand is `rdmafabric incast`: it returns the exit status (0
// measured, 2 could not run).
func incastCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmafabric incast", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o incastOptions
	incastFlags(fs, &o)
	synopsis := "usage: rdmafabric incast [-nodes a,b,… | -nodes-file FILE] [-receivers a,b] [-senders 2,3] [-o incast.txt] [flags]"
	if code, done := parseCommand(fs, args, synopsis, func() error { return checkIncastOptions(&o) }, stdout, stderr); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := incastRun(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "rdmafabric incast:", err)
		return exitCouldNotRun
	}
	return 0
}

// incastRun runs the sweep into o.out and prints its report.
func incastRun(ctx context.Context, o incastOptions, stdout, log io.Writer) error {
	names, err := nodeList(ctx, runOptions{nodes: o.nodes, nodesFile: o.nodesFile})
	if err != nil {
		return err
	}
	cases, err := incastCases(o, names)
	if err != nil {
		return err
	}
	token, err := agentToken(o.tokenFile)
	if err != nil {
		return err
	}
	co := coord.IncastOptions{Nodes: names, Cases: cases, Runs: o.runs, VictimDelay: o.victimDelay, CaseTimeout: o.caseTimeout,
		Stream: coord.Scenario{Name: scenarioKey + o.stream}, Victim: coord.Scenario{Name: scenarioKey + o.victim}}
	dial := agentDialer(o.port, token, map[string]int{o.stream: o.iters, o.victim: o.vIters})
	fmt.Fprintf(log, "rdmafabric incast: %d nodes, %d cases × %d runs: %s × %d from each sender, victim %s × %d from the receiver -> %s\n",
		len(names), len(cases), o.runs, o.stream, o.iters, o.victim, o.vIters, o.out)
	f, err := os.Create(o.out)
	if err != nil {
		return err
	}
	sum, err := coord.RunIncast(ctx, co, dial, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", o.out, cerr)
	}
	for _, nf := range sum.NodeFailures {
		fmt.Fprintf(log, "rdmafabric incast: node %s: %v\n", nf.Node, nf.Err)
	}
	for _, cf := range sum.Failures {
		fmt.Fprintf(log, "rdmafabric incast: case to %s %s: %v\n", cf.Dst, cf.Scenario, cf.Err)
	}
	if err != nil {
		return err
	}
	data, err := os.ReadFile(o.out)
	if err != nil {
		return err
	}
	_, err = writeIncastReport(data, o.minOverlap, stdout)
	return err
}

// incastCase is one case's rows over its runs, by unit.
type incastCase struct {
	dst  string
	n    int
	vals map[string][]float64 // the case row's
	idle map[string][]float64 // the idle victim's
	load map[string][]float64 // the victim's under incast
}

// readIncast reads an incast stream's cases in stream order.
func readIncast(data []byte) ([]*incastCase, []string, error) {
	var cases []*incastCase
	byKey := make(map[string]*incastCase)
	var notes []string
	rd := results.NewReader(bytes.NewReader(data), "incast")
	rd.Strict()
	for rd.Scan() {
		rec := rd.Result()
		parts := strings.Split(rec.Name, "/")
		if parts[0] != "Incast" {
			continue
		}
		kv := make(map[string]string)
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			if _, dup := kv[k]; !dup {
				kv[k] = v
			}
		}
		n, _ := strconv.Atoi(kv["n"])
		key := kv["dst"] + "/" + kv["n"]
		c := byKey[key]
		if c == nil {
			c = &incastCase{dst: kv["dst"], n: n, vals: map[string][]float64{}, idle: map[string][]float64{}, load: map[string][]float64{}}
			byKey[key] = c
			cases = append(cases, c)
		}
		into := map[string]map[string][]float64{"case": c.vals, "victim-idle": c.idle, "victim": c.load}[kv["flow"]]
		if into == nil {
			continue // a sender's row
		}
		for _, v := range rec.Values {
			into[v.Unit] = append(into[v.Unit], v.Value)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nil, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "fabric.incast.") || strings.HasPrefix(l, "fabric.error.") {
			notes = append(notes, l)
		}
	}
	return cases, notes, nil
}

// writeIncastReport prints one line a case, the medians over its runs:
// the aggregate and fairness of the senders, their completion times and
// start skew, and the victim's percentiles idle and under incast with
// their ratio; a case whose victim overlapped the incast less than
// minOverlap in a run is marked, for its ratios then understate.
func writeIncastReport(data []byte, minOverlap float64, w io.Writer) ([]*incastCase, error) {
	cases, notes, err := readIncast(data)
	if err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, errors.New("no incast case in the stream")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "receiver\tN\truns\tMB/s\tjain\tFCT p50 ms\tFCT max ms\tskew ms\tvictim p50 µs\tp99 µs\tp99.9 µs\tp99 ×idle\toverlap\t")
	us := func(x float64) string { return strconv.FormatFloat(x/1e3, 'f', 1, 64) }
	ms := func(x float64) string { return strconv.FormatFloat(x/1e6, 'f', 1, 64) }
	var short []string
	for _, c := range cases {
		ov := c.vals["victim-overlap"]
		if len(ov) > 0 && slices.Min(ov) < minOverlap {
			short = append(short, fmt.Sprintf("%s n=%d (least %.2f)", c.dst, c.n, slices.Min(ov)))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.3f\t%s\t%s\t%s\t%s→%s\t%s→%s\t%s→%s\t%.2f\t%.2f\t\n",
			c.dst, c.n, len(c.vals["jain"]), stats.Median(c.vals["MB/s"]), stats.Median(c.vals["jain"]),
			ms(stats.Median(c.vals["fct-p50-ns"])), ms(stats.Median(c.vals["fct-max-ns"])), ms(stats.Median(c.vals["sender-skew-ns"])),
			us(stats.Median(c.idle["p50-ns"])), us(stats.Median(c.load["p50-ns"])), us(stats.Median(c.idle["p99-ns"])), us(stats.Median(c.load["p99-ns"])),
			us(stats.Median(c.idle["p99.9-ns"])), us(stats.Median(c.load["p99.9-ns"])), stats.Median(c.vals["victim-p99-x"]), stats.Median(c.vals["victim-overlap"]))
	}
	if err := tw.Flush(); err != nil {
		return nil, err
	}
	if len(short) > 0 {
		fmt.Fprintf(w, "\nThe victim ran partly outside the incast (overlap < %.2f) in: %s.\nIts ratios there understate the incast's effect: raise -iters or -victim-delay.\n", minOverlap, strings.Join(short, ", "))
	}
	for _, l := range notes {
		fmt.Fprintln(w, l)
	}
	return cases, nil
}

// incastReportCommand is `rdmafabric incast-report FILE…`: each
// stored stream's table, and with -chart the victim's percentiles of
// every case of every file in one chart.
func incastReportCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmafabric incast-report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	minOverlap := fs.Float64("min-overlap", 0.9, "the least share of the victim's run inside the incast for its ratios to count (0..1)")
	expect := fs.Float64("expect-victim-p99", 0, "a check: exit 1 unless every case's median victim-p99-x (p99 under incast ÷ idle) is above this and its median overlap at least -min-overlap (0: no check)")
	chart := fs.String("chart", "", "also draw the victim's percentiles idle and under incast, every case of every file, to PREFIX.svg and .png")
	err := parseSub(fs, args, "usage: rdmafabric incast-report [-min-overlap F] [-expect-victim-p99 X] [-chart PREFIX] FILE…", stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && fs.NArg() == 0 {
		err = errors.New("want at least one result file")
	}
	if err == nil && !(*minOverlap >= 0 && *minOverlap <= 1) {
		err = fmt.Errorf("-min-overlap %v: want 0..1", *minOverlap)
	}
	if err == nil && !(*expect >= 0 && *expect <= 1e6) {
		err = fmt.Errorf("-expect-victim-p99 %v: want 0..1e6", *expect)
	}
	var all []*incastCase
	var charted []chartCase
	for i, file := range fs.Args() {
		if err != nil {
			break
		}
		var data []byte
		if data, err = os.ReadFile(file); err != nil {
			break
		}
		if fs.NArg() > 1 {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "%s:\n", file)
		}
		var cases []*incastCase
		if cases, err = writeIncastReport(data, *minOverlap, stdout); err != nil {
			err = fmt.Errorf("%s: %w", file, err)
			break
		}
		all = append(all, cases...)
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		for _, c := range cases {
			charted = append(charted, chartCase{label: fmt.Sprintf("%s\n%s n=%d", name, c.dst, c.n), c: c})
		}
	}
	if err == nil && *chart != "" {
		err = incastChart(charted, *chart)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmafabric incast-report:", err)
		return exitCouldNotRun
	}
	if *expect > 0 {
		return expectVictim(all, *expect, *minOverlap, stdout)
	}
	return 0
}

// expectVictim is -expect-victim-p99's check: 0 when every case's median
// victim-p99-x is above x and its victim ran inside the incast (median
// victim-overlap at least minOverlap: otherwise the ratio measures
// nothing), else 1, each such case named.
func expectVictim(cases []*incastCase, x, minOverlap float64, w io.Writer) int {
	code := 0
	for _, c := range cases {
		got, ov := stats.Median(c.vals["victim-p99-x"]), stats.Median(c.vals["victim-overlap"])
		switch {
		case !(ov >= minOverlap):
			fmt.Fprintf(w, "FAIL: %s n=%d: the victim ran inside the incast for %.2f of its run (median), under %.2f: not judged\n", c.dst, c.n, ov, minOverlap)
			code = 1
		case !(got > x):
			fmt.Fprintf(w, "FAIL: %s n=%d: the victim's p99 is %.2f× idle, not above %.2f×\n", c.dst, c.n, got, x)
			code = 1
		}
	}
	if code == 0 {
		fmt.Fprintf(w, "PASS: every case's victim p99 is above %.2f× idle\n", x)
	}
	return code
}
