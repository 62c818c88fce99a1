package schedule

import "fmt"

// Ring returns the plan of the ring shift by k: node i → node (i+k) mod
// n for every i, each of these n pairs once. k must be within 1..n−1 and
// n within 2..MaxNodes.
//
// Every node is the source of one pair and the destination of another,
// so a shift needs at least 2 rounds. The pairs form g = gcd(n, k)
// cycles of L = n/g nodes each (c → c+k → c+2k → … → c, for c < g), and
// two pairs share a node exactly when they follow each other in their
// cycle: pair i→i+k shares i with pair i−k→i and i+k with pair
// i+k→i+2k, and no other (for L = 2 the two are the same pair, i+k→i).
// Along each cycle the pairs take rounds 0, 1, 0, 1, …; when L is odd
// the last pair, between two pairs of round 1 and round 0, takes round
// 2. So Ring has 2 rounds of n/2 pairs when L is even, and when L is odd
// 3 rounds: two of g(L−1)/2 pairs and one of g pairs; 3 is the fewest
// then, for an odd cycle cannot alternate between two rounds. Within a
// round, pairs are in the order of their source.
func Ring(n, k int) (Plan, error) {
	kind := fmt.Sprintf("ring/k=%d", k)
	if err := checkNodes(kind, n, MaxNodes); err != nil {
		return Plan{}, err
	}
	if k < 1 || k >= n {
		return Plan{}, fmt.Errorf("schedule %s: shift %d: must be within 1..%d for %d nodes", kind, k, n-1, n)
	}
	round, count := ringRounds(n, k)
	flat := make([]Pair, n)
	rounds := make([]Round, len(count))
	start := 0
	for r, c := range count {
		rounds[r] = Round(flat[start : start : start+c])
		start += c
	}
	for i, r := range round {
		rounds[r] = append(rounds[r], Pair{i, (i + k) % n})
	}
	return Plan{Kind: kind, Nodes: n, Rounds: rounds}, nil
}

// ringRounds returns, for the shift by k of n nodes, the round of each
// pair (indexed by its source) and the number of pairs in each round, as
// Ring describes.
func ringRounds(n, k int) (round []uint8, count []int) {
	g := gcd(n, k)
	l := n / g
	count = make([]int, 2+l%2)
	round = make([]uint8, n)
	for c := 0; c < g; c++ {
		i := c
		for j := 0; j < l; j++ {
			r := j % 2
			if l%2 == 1 && j == l-1 {
				r = 2
			}
			round[i] = uint8(r)
			count[r]++
			i = (i + k) % n
		}
	}
	return round, count
}

// gcd is the greatest common divisor of a and b, both positive.
func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
