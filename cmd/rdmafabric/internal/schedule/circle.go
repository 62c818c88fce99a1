package schedule

import "fmt"

// circleRounds is the number of rounds of the circle method for n nodes:
// n−1 for even n, n for odd n (where a place is added, and the node
// paired with it has the round's bye).
func circleRounds(n int) int { return n - 1 + n%2 }

// circlePairs appends to dst the unordered pairs of circle round r
// (0 ≤ r < circleRounds(n)), as pairs (a, b), and returns it.
//
// The method: take an even number of places m (n, or n+1 for odd n);
// place m−1 stays fixed and places 0..m−2 turn around a circle. Round r
// pairs r with m−1 and (r+i) with (r−i), mod m−1, for i = 1..m/2−1. Two
// nodes a ≠ b below m−1 meet in the one round r with 2r ≡ a+b (mod m−1),
// which exists and is unique because m−1 is odd; node a meets m−1 in
// round a. So every unordered pair meets exactly once, and each round's
// pairs are disjoint. For odd n, place m−1 = n is no node: the pair
// (r, n) is left out and node r is idle in round r.
func circlePairs(dst []Pair, n, r int) []Pair {
	m := n + n%2
	c := m - 1 // places turning around the circle
	if c < n {
		dst = append(dst, Pair{r, c})
	}
	for i := 1; i < m/2; i++ {
		dst = append(dst, Pair{(r + i) % c, (r - i + c) % c})
	}
	return dst
}

// reversed returns a new Round with every pair of r turned around.
func reversed(r Round) Round {
	out := make(Round, len(r))
	for i, p := range r {
		out[i] = Pair{p.Dst, p.Src}
	}
	return out
}

// All returns the plan that measures every ordered pair (i, j), i ≠ j,
// of n nodes exactly once: each circle round run twice, first as built
// then reversed, for 2(n−1) rounds of n/2 pairs when n is even and 2n
// rounds of (n−1)/2 pairs when n is odd (the package comment says why).
// n must be within 2..MaxAllNodes.
func All(n int) (Plan, error) {
	if err := checkNodes("all", n, MaxAllNodes); err != nil {
		if n > MaxAllNodes {
			err = fmt.Errorf("%w (every ordered pair is n(n−1) pairs: ring or quick cover larger fabrics)", err)
		}
		return Plan{}, err
	}
	cr := circleRounds(n)
	per := n / 2
	flat := make([]Pair, 0, 2*cr*per) // = n(n−1): one array for all rounds
	rounds := make([]Round, 0, 2*cr)
	for r := 0; r < cr; r++ {
		start := len(flat)
		flat = circlePairs(flat, n, r)
		fwd := Round(flat[start:len(flat):len(flat)])
		for _, p := range fwd {
			flat = append(flat, Pair{p.Dst, p.Src})
		}
		back := Round(flat[start+per : len(flat) : len(flat)])
		rounds = append(rounds, fwd, back)
	}
	return Plan{Kind: "all", Nodes: n, Rounds: rounds}, nil
}

// Quick returns the plan in which every node is the source of exactly
// one pair and the destination of exactly one, in the fewest rounds: for
// even n, the first circle round and its reverse (2 rounds of n/2
// pairs); for odd n, where node 0 is idle in the first circle round, that
// round's first pair (1, n−1) becomes the cycle 1→n−1, n−1→0, 0→1 and the
// other pairs run both ways as for even n (3 rounds, the last holding
// 0→1 alone). n must be within 2..MaxNodes.
func Quick(n int) (Plan, error) {
	if err := checkNodes("quick", n, MaxNodes); err != nil {
		return Plan{}, err
	}
	fwd := Round(circlePairs(make([]Pair, 0, n/2), n, 0))
	back := reversed(fwd)
	rounds := []Round{fwd, back}
	if n%2 == 1 {
		const bye = 0 // the node idle in circle round 0
		x, y := fwd[0].Src, fwd[0].Dst
		back[0] = Pair{y, bye}
		rounds = append(rounds, Round{{bye, x}})
	}
	return Plan{Kind: "quick", Nodes: n, Rounds: rounds}, nil
}
