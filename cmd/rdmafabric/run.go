package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmabench/rdmabench/cmd/internal/nodes"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/blame"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
	"github.com/rdmabench/rdmabench/rdmatest/oob"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
)

// defaultScenarios are run when no -scenario is given: a large WRITE
// stream (bandwidth) and an 8-byte WRITE ping-pong (latency), as the
// issue's ib_write_bw and ib_write_lat.
var defaultScenarios = []string{"WriteBW/size=65536", "WriteLat/size=8"}

// runOptions are rdmafabric run's command line, checked.
type runOptions struct {
	nodes, nodesFile string
	port             int
	tokenFile        string
	schedule         string
	k                int
	serial           bool
	scenarios        multiFlag
	runs, iters      int
	pairTimeout      time.Duration
	out, json        string
	heatmap          string
	drain            string
	confirm          bool
	perSuspect       int
	minDrop          float64
	baseline         string
	base             *blame.Fabric // -baseline, read and checked
}

// multiFlag is a flag given any number of times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// exitCouldNotRun is the exit status when a fabric run could not run.
const exitCouldNotRun = 2

// runFlags registers run's flags; report shares the output ones.
func runFlags(fs *flag.FlagSet, o *runOptions) {
	fs.StringVar(&o.nodes, "nodes", "", "the nodes, comma-separated (default: -nodes-file, or the Slurm job's nodes)")
	fs.StringVar(&o.nodesFile, "nodes-file", "", "file of node names, one a line ('#' comments, blank lines ignored)")
	fs.IntVar(&o.port, "port", 18515, "the agents' port (rdmapeer -agent -listen)")
	fs.StringVar(&o.tokenFile, "token-file", "", "file holding the agents' token (default: $RDMA_PEER_TOKEN)")
	fs.StringVar(&o.schedule, "schedule", "all", "which pairs: all (every ordered pair), quick, ring (i → i+k)")
	fs.IntVar(&o.k, "k", 1, "shift of -schedule ring")
	fs.BoolVar(&o.serial, "serial", false, "run one pair at a time")
	fs.Var(&o.scenarios, "scenario", "a bench_test scenario by name, e.g. WriteBW/size=65536 (repeatable; default "+strings.Join(defaultScenarios, " and ")+")")
	fs.IntVar(&o.runs, "runs", 5, fmt.Sprintf("runs per link and scenario, 1..%d", coord.MaxRuns))
	fs.IntVar(&o.iters, "iters", 0, "iterations of each run (default: perftest's, 1000 for latency scenarios, 5000 for the others)")
	fs.DurationVar(&o.pairTimeout, "pair-timeout", 10*time.Minute, "deadline of one pair's turn in a round: one run of each scenario")
	fs.StringVar(&o.out, "o", "fabric.txt", "the result stream (benchfmt); the second pass goes to the same name with -retest")
	reportFlags(fs, o)
	fs.BoolVar(&o.confirm, "confirm", true, "retest the suspects against healthy nodes before naming them")
	fs.IntVar(&o.perSuspect, "retests", 2, "healthy partners per suspect node in the second pass")
}

// reportFlags registers the flags of the report's outputs.
func reportFlags(fs *flag.FlagSet, o *runOptions) {
	fs.StringVar(&o.json, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&o.heatmap, "heatmap", "", "also draw each scenario's matrix to PREFIX-<scenario>.png and .svg")
	fs.StringVar(&o.drain, "drain", "", "drain lines for slurm or kubernetes (default: slurm in a Slurm job, else kubernetes)")
	fs.Float64Var(&o.minDrop, "min-drop", blame.DefaultMinDrop, "the least drop below the typical value that can name a node or link (0.1: 10%); raise it where the noise between runs is larger (software devices, shared hosts)")
	fs.StringVar(&o.baseline, "baseline", "", "a result stream of this fabric when healthy (a former run's -o): name a node or link only where it is worse than that run's worst link")
}

// loadBaseline reads and checks -baseline, if given, into o.base.
func (o *runOptions) loadBaseline() error {
	if o.baseline == "" || o.base != nil {
		return nil
	}
	base, err := blame.ReadFile(o.baseline)
	if err == nil {
		bo, _ := o.blameOptions()
		err = blame.CheckBaseline(base, bo)
	}
	if err != nil {
		return fmt.Errorf("-baseline %s: %w", o.baseline, err)
	}
	o.base = base
	return nil
}

// blameOptions are blame's defaults with o's -min-drop.
func (o runOptions) blameOptions() (blame.Options, error) {
	bo := blame.DefaultOptions()
	bo.MinDrop, bo.Baseline = o.minDrop, o.base
	if err := bo.Check(); err != nil {
		return bo, fmt.Errorf("-min-drop %g: %w", o.minDrop, err)
	}
	return bo, nil
}

// checkRunOptions tells the first thing wrong with o, as a usageError,
// before anything is dialled.
func checkRunOptions(o *runOptions) error {
	var err error
	switch {
	case o.nodes != "" && o.nodesFile != "":
		err = fmt.Errorf("-nodes %q and -nodes-file %q: give one of them", o.nodes, o.nodesFile)
	case o.port < 1 || o.port > 65535:
		err = fmt.Errorf("-port %d: want 1..65535", o.port)
	case o.schedule != "all" && o.schedule != "quick" && o.schedule != "ring":
		err = fmt.Errorf("-schedule %q: must be all, quick or ring", o.schedule)
	case o.runs < 1 || o.runs > coord.MaxRuns:
		err = fmt.Errorf("-runs %d: want 1..%d", o.runs, coord.MaxRuns)
	case o.iters < 0 || o.iters > oob.MaxIters:
		err = fmt.Errorf("-iters %d: want 1..%d (0: the default)", o.iters, oob.MaxIters)
	case o.pairTimeout <= 0:
		err = fmt.Errorf("-pair-timeout %v: must be positive", o.pairTimeout)
	case o.out == "":
		err = errors.New(`-o "": name the result file`)
	case o.perSuspect < 1:
		err = fmt.Errorf("-retests %d: want at least 1", o.perSuspect)
	}
	if err == nil {
		err = checkDrain(o.drain)
	}
	if err == nil {
		_, err = o.blameOptions()
	}
	if err == nil {
		err = o.loadBaseline()
	}
	if err == nil && len(o.scenarios) == 0 {
		o.scenarios = defaultScenarios
	}
	for _, s := range o.scenarios {
		if err != nil {
			break
		}
		if _, perr := scenario.Parse(s); perr != nil {
			err = fmt.Errorf("-scenario: %w", perr)
		} else if len(s) > oob.MaxScenarioLen {
			err = fmt.Errorf("-scenario %.40q…: %d bytes, at most %d", s, len(s), oob.MaxScenarioLen)
		}
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

func checkDrain(d string) error {
	if d != "" && d != "slurm" && d != "kubernetes" {
		return fmt.Errorf("-drain %q: must be slurm or kubernetes", d)
	}
	return nil
}

// parseSub parses a subcommand's flags; on -help it prints synopsis and
// the flags to stdout and returns flag.ErrHelp.
func parseSub(fs *flag.FlagSet, args []string, synopsis string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	return err
}

// parseCommand parses the flags of a subcommand that takes no
// arguments (parseSub) and checks them with check. done tells that the
// command ends here, with code: 0 after -help, exitCouldNotRun after a
// bad flag, argument or option, printed to stderr after fs's name.
func parseCommand(fs *flag.FlagSet, args []string, synopsis string, check func() error, stdout, stderr io.Writer) (code int, done bool) {
	err := parseSub(fs, args, synopsis, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0, true
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err == nil {
		err = check()
	}
	if err != nil {
		fmt.Fprintln(stderr, fs.Name()+":", err)
		return exitCouldNotRun, true
	}
	return 0, false
}

// runCommand is `rdmafabric run`: it returns the exit status.
func runCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmafabric run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o runOptions
	runFlags(fs, &o)
	synopsis := "usage: rdmafabric run [-nodes a,b,… | -nodes-file FILE] [-scenario NAME …] [-o fabric.txt] [flags]"
	if code, done := parseCommand(fs, args, synopsis, func() error { return checkRunOptions(&o) }, stdout, stderr); done {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := fabricRun(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "rdmafabric run:", err)
		return exitCouldNotRun
	}
	if err := writeReport(rep, o, stdout); err != nil {
		fmt.Fprintln(stderr, "rdmafabric run:", err)
		return exitCouldNotRun
	}
	return rep.report.Exit()
}

// judged is a report with the stream it judged (for the heatmaps).
type judged struct {
	report blame.Report
	fabric *blame.Fabric
}

// fabricRun runs the plan over the agents, judges the stream, and runs
// and judges the second pass when there are suspects.
func fabricRun(ctx context.Context, o runOptions, log io.Writer) (judged, error) {
	names, err := nodeList(ctx, o)
	if err != nil {
		return judged{}, err
	}
	plan, err := buildPlan(options{schedule: o.schedule, k: o.k, serial: o.serial}, len(names))
	if err != nil {
		return judged{}, fmt.Errorf("%d nodes: %w", len(names), err)
	}
	token, err := agentToken(o.tokenFile)
	if err != nil {
		return judged{}, err
	}
	co := coord.Options{Nodes: names, Plan: plan, Runs: o.runs, PairTimeout: o.pairTimeout, Concurrency: true}
	for _, s := range o.scenarios {
		co.Scenarios = append(co.Scenarios, coord.Scenario{Name: scenarioKey + s})
	}
	iters := make(map[string]int)
	for _, s := range o.scenarios {
		if o.iters > 0 {
			iters[s] = o.iters
		}
	}
	dial := agentDialer(o.port, token, iters)
	fmt.Fprintf(log, "rdmafabric run: %d nodes, schedule %s: %d rounds, %d directed links × %d scenarios × %d runs -> %s\n",
		len(names), plan.Kind, len(plan.Rounds), plan.Pairs(), len(co.Scenarios), o.runs, o.out)
	first, err := pass(ctx, co, dial, o.out, log)
	if err != nil {
		return judged{}, err
	}
	bo, _ := o.blameOptions() // checked by checkRunOptions
	bo.Confirm = o.confirm
	rep := blame.Judge(first, bo)
	if rep.Exit() == 0 {
		rep.Suspects = false // no suspect: the verdict is final
	}
	if !rep.Suspects {
		return judged{rep, first}, nil
	}
	pairs := blame.Retests(rep, first.Nodes, o.perSuspect)
	index := make(map[string]int)
	for i, n := range names {
		index[strings.ToLower(n)] = i
	}
	var sp []schedule.Pair
	for _, p := range pairs {
		sp = append(sp, schedule.Pair{Src: index[strings.ToLower(p.Src)], Dst: index[strings.ToLower(p.Dst)]})
	}
	co.Plan = coord.RetestPlan(sp)
	co.Plan.Nodes = len(names)
	retest := retestFile(o.out)
	fmt.Fprintf(log, "rdmafabric run: %d suspect nodes, %d suspect links: second pass of %d directed pairs in %d rounds -> %s\n",
		len(rep.Nodes), len(rep.Links), len(sp), len(co.Plan.Rounds), retest)
	second, err := pass(ctx, co, dial, retest, log)
	if err != nil {
		return judged{}, fmt.Errorf("second pass: %w", err)
	}
	bo.Confirm = false
	return judged{blame.Confirm(first, second, bo), first}, nil
}

// agentToken is the agents' token: -token-file's, else
// $RDMA_PEER_TOKEN.
func agentToken(file string) (string, error) {
	if file == "" {
		return os.Getenv("RDMA_PEER_TOKEN"), nil
	}
	token, err := oob.ReadTokenFile(file)
	if err != nil {
		return "", fmt.Errorf("-token-file: %w", err)
	}
	return token, nil
}

// agentDialer dials the agents at port with token, each run of a
// scenario at its count in iters (absent: itersFor).
func agentDialer(port int, token string, iters map[string]int) coord.Dialer {
	return func(node string) (coord.Agent, error) {
		return &remoteAgent{node: node, addr: net.JoinHostPort(node, strconv.Itoa(port)), token: token, dial: 30 * time.Second, iters: iters}, nil
	}
}

// retestFile is the second pass's file: out with "-retest" before its
// extension.
func retestFile(out string) string {
	ext := filepath.Ext(out)
	return strings.TrimSuffix(out, ext) + "-retest" + ext
}

// pass runs co into file and reads it back for blame. Links that failed
// are logged; a pass that measured nothing is an error.
func pass(ctx context.Context, co coord.Options, dial coord.Dialer, file string, log io.Writer) (*blame.Fabric, error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	sum, err := coord.Run(ctx, co, dial, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("%s: %w", file, cerr)
	}
	for _, nf := range sum.NodeFailures {
		fmt.Fprintf(log, "rdmafabric run: node %s: %v\n", nf.Node, nf.Err)
	}
	for _, lf := range sum.Failures {
		fmt.Fprintf(log, "rdmafabric run: %s -> %s %s: %v\n", lf.Src, lf.Dst, lf.Scenario, lf.Err)
	}
	fmt.Fprintf(log, "rdmafabric run: %s: %d rounds, %d links, %d link scenarios measured, %d rows, %d failed\n",
		file, sum.Rounds, sum.Links, sum.Measured, sum.Rows, len(sum.Failures))
	if err != nil {
		return nil, err
	}
	return blame.ReadFile(file)
}

// nodeList is the run's nodes: -nodes, -nodes-file, or the Slurm job's.
func nodeList(ctx context.Context, o runOptions) ([]string, error) {
	switch {
	case o.nodes != "":
		return nodes.Split(o.nodes, "-nodes", schedule.MaxNodes)
	case o.nodesFile != "":
		return nodes.ReadFile(o.nodesFile, schedule.MaxNodes)
	}
	list, err := nodes.Slurm(ctx, schedule.MaxNodes)
	if err != nil {
		return nil, fmt.Errorf("no -nodes or -nodes-file: %w", err)
	}
	return list, nil
}

// writeReport prints the report and the drain lines, and writes the JSON
// and the heatmaps that o asks for.
func writeReport(j judged, o runOptions, stdout io.Writer) error {
	if err := j.report.WriteText(stdout); err != nil {
		return err
	}
	slurm := o.drain == "slurm" || o.drain == "" && os.Getenv("SLURM_JOB_ID") != ""
	if lines := j.report.DrainLines(slurm); len(lines) > 0 {
		fmt.Fprintln(stdout, "\nTo take them out of service (printed, never run):")
		for _, l := range lines {
			fmt.Fprintln(stdout, l)
		}
	}
	if o.json != "" {
		f, err := os.Create(o.json)
		if err != nil {
			return err
		}
		err = j.report.WriteJSON(f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if o.heatmap != "" {
		// One map a scenario, of the first unit blame judged it on.
		drawn := make(map[string]bool)
		for _, m := range j.report.Metrics {
			if drawn[m.Scenario] {
				continue
			}
			drawn[m.Scenario] = true
			path := o.heatmap + "-" + strings.NewReplacer("/", "_", "=", "-").Replace(m.Scenario)
			if err := blame.Heatmap(j.fabric, m.Scenario, m.Unit, path); err != nil {
				return fmt.Errorf("heatmap of %s: %w", m.Scenario, err)
			}
		}
	}
	return nil
}

// reportCommand is `rdmafabric report [flags] FILE`: blame on a stored
// stream (and its second pass with -retest).
func reportCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmafabric report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o runOptions
	var retest string
	reportFlags(fs, &o)
	fs.StringVar(&retest, "retest", "", "the second pass's stream: name only the suspects it shows again")
	err := parseSub(fs, args, "usage: rdmafabric report [-retest FILE] [-json FILE] [-heatmap PREFIX] [-drain slurm|kubernetes] [-min-drop D] [-baseline FILE] FILE", stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil && fs.NArg() != 1 {
		err = fmt.Errorf("want one result file, got %d arguments", fs.NArg())
	}
	if err == nil {
		err = checkDrain(o.drain)
	}
	var bo blame.Options
	if err == nil {
		bo, err = o.blameOptions()
	}
	if err == nil {
		err = o.loadBaseline()
		bo.Baseline = o.base
	}
	var j judged
	if err == nil {
		j, err = judgeFiles(fs.Arg(0), retest, bo)
	}
	if err == nil {
		err = writeReport(j, o, stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "rdmafabric report:", err)
		return exitCouldNotRun
	}
	return j.report.Exit()
}

// judgeFiles judges the stream in file, confirmed by retest if given.
func judgeFiles(file, retest string, bo blame.Options) (judged, error) {
	first, err := blame.ReadFile(file)
	if err != nil {
		return judged{}, err
	}
	if retest == "" {
		return judged{blame.Judge(first, bo), first}, nil
	}
	second, err := blame.ReadFile(retest)
	if err != nil {
		return judged{}, err
	}
	return judged{blame.Confirm(first, second, bo), first}, nil
}
