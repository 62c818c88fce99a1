package coord

import "github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"

// RetestPlan packs arbitrary directed pairs (blame's second pass) into
// rounds, greedily: each pair, in order, goes into the first round in
// which neither of its nodes is yet, or a new round at the end. So no
// node is twice in a round, every pair is kept (a pair listed twice is
// run twice: its rows are more runs of the link), and pairs keep their
// relative order within a round. The cost is O(pairs × rounds).
//
// The plan's Kind is "retest" and its Nodes one more than the largest
// index (at least 2): set Nodes to the node list's length before Run,
// which requires them equal. Pairs that are no pairs (a node with
// itself, a negative index) are kept, for Plan.Check and Run to refuse.
func RetestPlan(pairs []schedule.Pair) schedule.Plan {
	p := schedule.Plan{Kind: "retest", Nodes: 2}
	used := make(map[int][]bool) // node → the rounds it is in
	in := func(node, round int) bool {
		u := used[node]
		return round < len(u) && u[round]
	}
	mark := func(node, round int) {
		u := used[node]
		for len(u) <= round {
			u = append(u, false)
		}
		u[round] = true
		used[node] = u
	}
	for _, pr := range pairs {
		r := 0
		for r < len(p.Rounds) && (in(pr.Src, r) || in(pr.Dst, r)) {
			r++
		}
		if r == len(p.Rounds) {
			p.Rounds = append(p.Rounds, nil)
		}
		p.Rounds[r] = append(p.Rounds[r], pr)
		mark(pr.Src, r)
		mark(pr.Dst, r)
		p.Nodes = max(p.Nodes, pr.Src+1, pr.Dst+1)
	}
	return p
}
