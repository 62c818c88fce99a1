// Command faults has one job: the faults of the fabric pass in make
// test (ci/fabric/pass.sh): draw them, put them on a guest's interface,
// and check the report against them.
//
// Usage:
//
//	faults draw -seed N -nodes node1,node2,node3,node4
//	faults tc -spec SPEC -node NAME [-dev eth0] [-ref-mbps X]
//	faults check -spec SPEC|none -report REPORT.json
//	faults ref -report HEALTHY.json
//
// draw prints a spec drawn from seed N (0: a random seed, printed on
// stderr): a bad node and a bad link between two other nodes, each with
// a kind drawn from delay 20-50 ms, loss 2-5% and a rate limit to
// 30-50%, one-way or both ways with even odds.
//
// A spec (FABRIC_FAULTS in ci/fabric/pass.sh; docs/fabric.md) is
// space-separated faults:
//
//	node=NAME:KIND=VALUE[:egress|:ingress|:both]
//	link=A-B:KIND=VALUE[:oneway|:both]
//
// with KIND=VALUE one of delay=Nms (1-1000), loss=N% (0.1-50) and
// rate=N% (5-95, of -ref-mbps: the healthy pass's median MB/s); the
// direction defaults to both. A node's egress is what it sends, its
// ingress what the others send it; a one-way link A-B is what A sends
// B. At most one node fault and one link fault, the link's ends other
// than the bad node. Example:
//
//	node=node4:loss=5%:egress link=node2-node3:delay=40ms
//
// tc prints the tc commands that put NAME's part of the spec on -dev,
// one a line (nothing for a node with no part): every fault is a netem
// qdisc on a sender's egress. A fault on a node's ingress is netem on
// every other node's egress towards it, picked by a u32 filter on the
// destination address (nodeN is 192.0.2.N); a rate limit is netem rate,
// with a queue long enough that it only delays.
//
// check reads rdmafabric run's -json report and exits 1 unless it
// names exactly the faults of the spec (none: nothing): the bad node,
// in its faulted direction when that is one way, and the bad link in
// one direction or both, its faulted one among them when it is one way.
// ref prints the fabric median MB/s of a healthy pass's -json report
// (its first MB/s metric), the base of rate=N%.
//
// Exit 2: bad usage or input.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errUsage marks a usage error (exit 2).
var errUsage = errors.New("usage")

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: faults draw|tc|check|ref [flags] (go doc ./ci/fabric/faults)")
		return 2
	}
	fs := flag.NewFlagSet("faults "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 0, "draw: the seed (0: a random one, printed)")
	nodes := fs.String("nodes", "node1,node2,node3,node4", "the nodes, comma-separated")
	spec := fs.String("spec", "", "the faults (go doc ./ci/fabric/faults), or none")
	node := fs.String("node", "", "tc: the node whose part to print")
	dev := fs.String("dev", "eth0", "tc: the interface")
	ref := fs.Float64("ref-mbps", 0, "tc: the healthy pass's median MB/s, the base of rate=N%")
	reportFile := fs.String("report", "", "check: rdmafabric run's -json report")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	names := strings.Split(*nodes, ",")
	var err error
	switch args[0] {
	case "draw":
		s := *seed
		if s == 0 {
			s = rand.Uint64()
		}
		var sp Spec
		if sp, err = Draw(s, names); err == nil {
			fmt.Fprintf(stderr, "faults: seed %d (replay: FABRIC_FAULT_SEED=%d)\n", s, s)
			fmt.Fprintln(stdout, sp)
		}
	case "tc":
		var sp Spec
		var cmds []string
		if sp, err = Parse(*spec, names); err == nil {
			if cmds, err = TC(sp, *node, *dev, *ref, segmentAddr); err == nil {
				for _, c := range cmds {
					fmt.Fprintln(stdout, c)
				}
			}
		}
	case "check":
		return check(*spec, names, *reportFile, stdout, stderr)
	case "ref":
		var mbps float64
		if mbps, err = refMBps(*reportFile); err == nil {
			fmt.Fprintln(stdout, mbps)
		}
	default:
		err = fmt.Errorf("%w: subcommand %q: want draw, tc, check or ref", errUsage, args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 2
	}
	return 0
}

func check(spec string, names []string, file string, stdout, stderr io.Writer) int {
	var sp Spec
	if spec != "none" {
		var err error
		if sp, err = Parse(spec, names); err != nil {
			fmt.Fprintln(stderr, "faults:", err)
			return 2
		}
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(stderr, "faults:", err)
		return 2
	}
	defer f.Close()
	rep, err := readReport(f)
	if err != nil {
		fmt.Fprintf(stderr, "faults: %s: %v\n", file, err)
		return 2
	}
	wrong := Check(rep, sp)
	for _, w := range wrong {
		fmt.Fprintf(stdout, "faults check: %s\n", w)
	}
	if len(wrong) > 0 {
		fmt.Fprintf(stdout, "faults check: FAIL: want %s\n", expectation(sp))
		return 1
	}
	fmt.Fprintf(stdout, "faults check: PASS: %s\n", expectation(sp))
	return 0
}
