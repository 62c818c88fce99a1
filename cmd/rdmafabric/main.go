// Command rdmafabric measures an RDMA fabric link by link, for cluster
// operators: one agent per node (rdmapeer -agent, started by Slurm's
// srun --ntasks-per-node=1, a Kubernetes Indexed Job, or ssh/systemd),
// and this coordinator, which drives pairs of nodes in rounds, each pair
// running rdmabench's scenarios with the requester on the source node
// and the passive side on the destination, and writes one Go benchfmt
// stream with a row per run of a scenario on a directed link:
//
//	BenchmarkFabric/src=nodeA/dst=nodeB/bench=WriteBW/size=65536
//
// Three modes:
//
//	rdmafabric run [-nodes a,b,… | -nodes-file FILE] [-scenario NAME …] [-o fabric.txt] [-json F] [-heatmap P] …
//	rdmafabric report [-retest FILE] [-json F] [-heatmap P] FILE
//	rdmafabric -plan …
//
// run takes the nodes from -nodes, -nodes-file, or the Slurm job it runs
// in (scontrol show hostnames $SLURM_JOB_NODELIST), dials every agent at
// -port with the token of $RDMA_PEER_TOKEN or -token-file, runs the
// schedule (-schedule, -k, -serial, as -plan shows it) with every
// -scenario (a bench_test name, package rdmatest/scenario; default
// WriteBW/size=65536 and WriteLat/size=8) -runs times per link at a
// fixed count (-iters), writes the stream to -o, judges it (package
// internal/blame), retests the suspects against healthy nodes into the
// -o file's "-retest" sibling, and prints the report and the drain lines
// (never run). Exit status: 0 healthy, 1 a bad node or link named, 2
// could not run (a bad flag, no agent, nothing measured). report judges
// stored streams the same way.
//
// -plan is a dry run that needs no nodes, network or device. It prints
// the schedule a run would follow, which directed pairs run in which
// round (package internal/schedule), and how long it would take.
//
//	rdmafabric -plan -nodes 64 [-schedule all|quick|ring] [-k 1] [-serial] [-per-pair 10s] [-v]
//	rdmafabric -plan -nodes-file hosts.txt …
//
// Schedules: all, every ordered pair of nodes once (2(n−1) rounds for
// even n, 2n for odd n; at most 2048 nodes); quick, every node the source
// of one pair and the destination of one (2 rounds, 3 for odd n); ring,
// the shift node i → node (i+k) mod n, 1 ≤ k < n (2 rounds, or 3 when
// n/gcd(n,k) is odd). -serial runs the same pairs one a round. No node is
// ever in two pairs of a round.
//
// The first line of the output sums the plan up:
//
//	schedule=all nodes=64 rounds=126 directed-pairs=4032 per-pair=10s estimated-wall=21m0s
//
// where estimated-wall is rounds × -per-pair: the pairs of a round run
// at once, and -per-pair should be what a pair takes from the start of a
// round to the start of the next, setup included. Then, with -v, or by
// default for at most 16 nodes, one line per round lists its pairs:
//
//	round 1/126: node000->node063 node001->node062 …
//
// Nodes are named node000, node001, … (with more digits past 1000
// nodes), or by -nodes-file: one host name per line, '#' starting a
// comment, blank lines ignored. A name is at most 253 ASCII letters,
// digits, '.', '-', '_' or ':' (it goes into benchmark names, as
// src=NAME); names must be distinct (ignoring case) and at most 100000.
//
// -plan's exit status: 0 plan printed; 1 the nodes file could not be read or the
// output not written; 2 usage: a bad flag or value (the message names
// it), a bad nodes file, or no mode.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rdmabench/rdmabench/cmd/internal/nodes"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

// listMax is the most nodes whose rounds are listed without -v.
const listMax = 16

// usageError is a bad command line or nodes file (exit status 2).
type usageError struct{ error }

// options are the command line, checked.
type options struct {
	plan      bool
	nodes     int
	nodesFile string
	schedule  string
	k         int
	serial    bool
	perPair   time.Duration
	verbose   bool
	setFlags  map[string]bool // flags given on the command line
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "run":
			return runCommand(args[1:], stdout, stderr)
		case "report":
			return reportCommand(args[1:], stdout, stderr)
		case "incast":
			return incastCommand(args[1:], stdout, stderr)
		case "incast-report":
			return incastReportCommand(args[1:], stdout, stderr)
		}
	}
	fs := flag.NewFlagSet("rdmafabric", flag.ContinueOnError)
	o, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		usage(stdout, fs)
		return 0
	}
	if err == nil {
		err = dryRun(o, stdout)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "rdmafabric:", err)
	var ue usageError
	if errors.As(err, &ue) {
		usage(stderr, fs)
		return 2
	}
	return 1
}

// usage prints the synopsis and the flags to w.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "usage: rdmafabric -plan (-nodes N | -nodes-file FILE) [-schedule all|quick|ring] [-k K] [-serial] [-per-pair D] [-v]")
	fmt.Fprintln(w, "       rdmafabric run -help, rdmafabric report -help: the fabric run and the report on stored streams")
	fmt.Fprintln(w, "       rdmafabric incast -help, rdmafabric incast-report -help: many-to-one cases with a victim flow")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseFlags reads and checks the command line: the errors are
// usageErrors, or flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	fs.SetOutput(io.Discard) // errors are returned, usage printed by run
	fs.BoolVar(&o.plan, "plan", false, "print the schedule of a run and its estimated wall time, and exit (the only mode yet)")
	fs.IntVar(&o.nodes, "nodes", 0, "number of nodes, named node000, node001, …")
	fs.StringVar(&o.nodesFile, "nodes-file", "", "file of node names, one a line ('#' comments, blank lines ignored)")
	fs.StringVar(&o.schedule, "schedule", "all", "which pairs: all (every ordered pair), quick (every node once each way), ring (i → i+k)")
	fs.IntVar(&o.k, "k", 1, "shift of -schedule ring, 1 ≤ k < nodes")
	fs.BoolVar(&o.serial, "serial", false, "run one pair a round")
	fs.DurationVar(&o.perPair, "per-pair", 10*time.Second, "time a pair takes, setup included, for the estimate")
	fs.BoolVar(&o.verbose, "v", false, fmt.Sprintf("list every round's pairs (default: only for at most %d nodes)", listMax))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, usageError{err}
	}
	o.setFlags = make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { o.setFlags[f.Name] = true })
	return o, checkOptions(o, fs.Args())
}

// checkOptions tells the first thing wrong with o and the arguments
// left after the flags, as a usageError.
func checkOptions(o options, rest []string) error {
	var err error
	switch {
	case len(rest) > 0:
		err = fmt.Errorf("unexpected arguments %q", rest)
	case !o.plan:
		err = errors.New("give a mode: rdmafabric run, report, incast, incast-report, or rdmafabric -plan")
	case o.setFlags["nodes"] && o.setFlags["nodes-file"]:
		err = fmt.Errorf("-nodes %d and -nodes-file %q: give one of them", o.nodes, o.nodesFile)
	case !o.setFlags["nodes"] && !o.setFlags["nodes-file"]:
		err = errors.New("-plan needs -nodes N or -nodes-file FILE")
	case o.setFlags["nodes-file"] && o.nodesFile == "":
		err = errors.New(`-nodes-file "": name a file`)
	case o.schedule != "all" && o.schedule != "quick" && o.schedule != "ring":
		err = fmt.Errorf("-schedule %q: must be all, quick or ring", o.schedule)
	case o.setFlags["k"] && o.schedule != "ring":
		err = fmt.Errorf("-k %d: only -schedule ring has a shift (not %s)", o.k, o.schedule)
	case o.perPair <= 0:
		err = fmt.Errorf("-per-pair %v: must be positive", o.perPair)
	}
	if err != nil {
		return usageError{err}
	}
	return nil
}

// dryRun prints the plan o asks for to w.
func dryRun(o options, w io.Writer) error {
	n, names, source := o.nodes, []string(nil), fmt.Sprintf("-nodes %d", o.nodes)
	if o.nodesFile != "" {
		var err error
		if names, err = nodes.ReadFile(o.nodesFile, schedule.MaxNodes); err != nil {
			if errors.Is(err, nodes.ErrList) {
				return usageError{err}
			}
			return err
		}
		n, source = len(names), fmt.Sprintf("-nodes-file %s (%d nodes)", o.nodesFile, len(names))
	}
	p, err := buildPlan(o, n)
	if err != nil {
		return usageError{fmt.Errorf("%s: %w", source, err)}
	}
	wall, err := schedule.Estimate(p, o.perPair)
	if err != nil {
		return usageError{fmt.Errorf("-per-pair %v: %w", o.perPair, err)}
	}
	list := n <= listMax
	if o.setFlags["v"] {
		list = o.verbose
	}
	return printPlan(w, p, o.perPair, wall, list, nodeNamer(names, n))
}

// buildPlan makes the schedule o names for n nodes.
func buildPlan(o options, n int) (schedule.Plan, error) {
	var p schedule.Plan
	var err error
	switch o.schedule {
	case "all":
		p, err = schedule.All(n)
	case "quick":
		p, err = schedule.Quick(n)
	default: // "ring": checkOptions allows no other
		p, err = schedule.Ring(n, o.k)
	}
	if err == nil && o.serial {
		p = schedule.Serial(p)
	}
	return p, err
}

// printPlan writes the summary line of p and, when list is set, a line
// per round with its pairs, nodes named by name.
func printPlan(w io.Writer, p schedule.Plan, perPair, wall time.Duration, list bool, name func(int) string) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "schedule=%s nodes=%d rounds=%d directed-pairs=%d per-pair=%v estimated-wall=%v\n",
		p.Kind, p.Nodes, len(p.Rounds), p.Pairs(), perPair, wall)
	if list {
		for i, r := range p.Rounds {
			fmt.Fprintf(bw, "round %d/%d:", i+1, len(p.Rounds))
			for _, pr := range r {
				fmt.Fprintf(bw, " %s->%s", name(pr.Src), name(pr.Dst))
			}
			bw.WriteString("\n")
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing the plan: %w", err)
	}
	return nil
}

// nodeNamer names node i: names[i] when names are given, else "node"
// and i in decimal, zero-padded to at least 3 digits and to the width of
// n−1, so that the names of one plan sort in node order.
func nodeNamer(names []string, n int) func(int) string {
	if names != nil {
		return func(i int) string { return names[i] }
	}
	width := max(3, len(fmt.Sprint(n-1)))
	return func(i int) string { return fmt.Sprintf("node%0*d", width, i) }
}
