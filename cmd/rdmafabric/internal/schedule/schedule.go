// Package schedule has one job: deciding which directed pairs of nodes
// run in which round of a fabric run. It knows nothing of networks,
// devices or host names: nodes are indexes 0..n−1 into the coordinator's
// node list, a Pair is one directed link (requester on Src, passive side
// on Dst), and a Plan is a list of rounds run one after another, the
// pairs of a round at the same time.
//
// Every Plan this package returns keeps one rule literally, in every
// round: no node is in two pairs of a round, so a node is either the
// source of one pair, the destination of one pair, or idle (Plan.Check
// tells). A link's two directions are therefore never in the same round:
// A→B and B→A would put A and B in two pairs each, and would measure two
// transfers sharing each node's adapter instead of one.
//
// The schedules:
//
//   - All: every ordered pair (i, j), i ≠ j, exactly once. The circle
//     (round-robin, Berger) method splits the n(n−1)/2 unordered pairs
//     into n−1 rounds of n/2 disjoint pairs for even n, or n rounds of
//     (n−1)/2 pairs with one node idle (the bye) for odd n; each circle
//     round is run twice, A→B then B→A. So All has 2(n−1) rounds of n/2
//     pairs for even n and 2n rounds of (n−1)/2 pairs for odd n, and
//     that is the fewest possible: a round holds at most ⌊n/2⌋ pairs and
//     there are n(n−1) of them. A link's two directions run in adjacent
//     rounds, close in time.
//   - Quick: every node is the source of exactly one pair and the
//     destination of exactly one: a check that each node works, not of
//     every link. For even n it is the first circle round run both ways
//     (2 rounds); for odd n the idle node joins one pair to make a
//     three-node cycle (3 rounds, the fewest: n directed pairs, at most
//     (n−1)/2 a round).
//   - Ring: the shift i → (i+k) mod n, each of its n pairs once, in 2
//     rounds when n/gcd(n,k) is even and 3 when it is odd (see Ring).
//   - Serial: the pairs of any plan, one pair a round, for small or
//     shared machines where concurrent pairs would disturb each other.
//
// All holds n(n−1) pairs in memory, so it accepts at most MaxAllNodes
// nodes; the other schedules are linear in n and accept MaxNodes. Every
// bad input is refused, with the value and the limit, before anything is
// allocated.
package schedule

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxNodes is the most nodes a plan may have.
const MaxNodes = 100000

// MaxAllNodes is the most nodes All accepts. All holds n(n−1) pairs of
// 16 bytes, 67 MB at 2048 nodes (Serial of it another 24 bytes a pair),
// and its 2(n−1) rounds at 10 s a pair take over 11 hours there; larger
// fabrics are covered by Ring with several shifts, or Quick.
const MaxAllNodes = 2048

// Pair is one directed link: the requester runs on node Src, the passive
// side on node Dst. Both are indexes into the node list.
type Pair struct{ Src, Dst int }

// String formats p as "Src->Dst".
func (p Pair) String() string { return fmt.Sprintf("%d->%d", p.Src, p.Dst) }

// Round is the pairs that run at the same time; no node is in two of
// them.
type Round []Pair

// Plan is a schedule for Nodes nodes: its Rounds run one after another.
type Plan struct {
	// Kind names the schedule: "all", "quick" or "ring/k=K", with
	// "/serial" appended by Serial.
	Kind string
	// Nodes is the number of nodes; pairs index 0..Nodes−1.
	Nodes int
	// Rounds are run in order.
	Rounds []Round
}

// Pairs is the number of directed pairs in p, over all its rounds.
func (p Plan) Pairs() int {
	n := 0
	for _, r := range p.Rounds {
		n += len(r)
	}
	return n
}

// Check reports the first way p breaks the rules every plan of this
// package keeps: Nodes within 2..MaxNodes, every node index within
// 0..Nodes−1, no pair from a node to itself, no node in two pairs of a
// round. It is for plans built or changed outside this package.
func (p Plan) Check() error {
	if err := checkNodes(p.Kind, p.Nodes, MaxNodes); err != nil {
		return err
	}
	last := make([]int, p.Nodes) // 1 + the last round each node was seen in
	for ri, r := range p.Rounds {
		for _, pr := range r {
			if err := checkPair(pr, p.Nodes); err != nil {
				return fmt.Errorf("schedule: round %d: %w", ri, err)
			}
			for _, v := range [2]int{pr.Src, pr.Dst} {
				if last[v] == ri+1 {
					return fmt.Errorf("schedule: round %d: node %d is in two pairs", ri, v)
				}
				last[v] = ri + 1
			}
		}
	}
	return nil
}

// checkPair tells why pr is not a pair of distinct nodes below n.
func checkPair(pr Pair, n int) error {
	if pr.Src < 0 || pr.Src >= n || pr.Dst < 0 || pr.Dst >= n {
		return fmt.Errorf("pair %v: nodes are 0..%d", pr, n-1)
	}
	if pr.Src == pr.Dst {
		return fmt.Errorf("pair %v: a node cannot be paired with itself", pr)
	}
	return nil
}

// checkNodes tells why kind cannot have n nodes: fewer than 2, or more
// than limit.
func checkNodes(kind string, n, limit int) error {
	switch {
	case n < 2:
		return fmt.Errorf("schedule %s: %d nodes: at least 2 are needed", kind, n)
	case n > limit:
		return fmt.Errorf("schedule %s: %d nodes: at most %d are accepted", kind, n, limit)
	}
	return nil
}

// serialSuffix ends the Kind of a plan made by Serial.
const serialSuffix = "/serial"

// Serial returns the pairs of p, in p's order, one pair a round: the
// rule "no node in two pairs of a round" then holds trivially, and no
// two transfers ever share the fabric. Its Kind is p's with "/serial"
// appended (once: Serial of a serial plan keeps its Kind).
func Serial(p Plan) Plan {
	flat := make([]Pair, 0, p.Pairs())
	for _, r := range p.Rounds {
		flat = append(flat, r...)
	}
	rounds := make([]Round, len(flat))
	for i := range flat {
		rounds[i] = flat[i : i+1 : i+1]
	}
	kind := p.Kind
	if !strings.HasSuffix(kind, serialSuffix) {
		kind += serialSuffix
	}
	return Plan{Kind: kind, Nodes: p.Nodes, Rounds: rounds}
}

// Estimate is the wall time of p when each pair takes perPair: the pairs
// of a round run at the same time, so a round takes perPair, and rounds
// run one after another, so p takes len(p.Rounds) × perPair. There is no
// separate per-round overhead: perPair is meant to be what the
// coordinator sees a pair take from the start of a round to the start of
// the next (connecting the two agents and setting up their QPs, the
// scenarios, collecting the results), not the measuring time alone. It
// fails on a negative perPair and on a total beyond time.Duration's
// range (about 292 years).
func Estimate(p Plan, perPair time.Duration) (time.Duration, error) {
	if perPair < 0 {
		return 0, fmt.Errorf("schedule: per-pair time %v: must not be negative", perPair)
	}
	rounds := time.Duration(len(p.Rounds))
	if perPair > 0 && rounds > math.MaxInt64/perPair {
		return 0, fmt.Errorf("schedule: %d rounds × %v: beyond %v", rounds, perPair, time.Duration(math.MaxInt64))
	}
	return rounds * perPair, nil
}
