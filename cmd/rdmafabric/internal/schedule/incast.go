package schedule

import (
	"fmt"
	"slices"
)

// MaxIncastCases is the most cases Incast returns: each case is a run of
// its own (an idle victim, then N streams and the victim at once), so a
// sweep beyond this is not a plan anyone waits for.
const MaxIncastCases = 10000

// IncastCase is one many-to-one case: the Senders stream to Dst at the
// same time, while Dst's own agent keeps a latency ping-pong with Victim
// (the victim flow), whose packets cross Dst's port with the streams.
type IncastCase struct {
	// Dst is the receiver.
	Dst int
	// Senders are the N sources, in node order after Dst (wrapping).
	Senders []int
	// Victim is Dst's partner in the victim flow: the first node that
	// neither receives nor sends, or, when every other node sends, the
	// last sender (whose passive side then shares its node with a
	// stream).
	Victim int
}

// N is the number of senders.
func (c IncastCase) N() int { return len(c.Senders) }

// Incast returns the cases of an incast sweep over n nodes: for each
// receiver in receivers (every node when empty), in the order given, and
// each sender count in ns (every count 2..n−1 when empty), ascending, one
// case whose senders are the N nodes after the receiver in node order.
// The victim flow runs from the receiver, so the receiver's own agent,
// idle otherwise, measures it: the ping-pong's replies enter the
// receiver's port beside the streams, which is the port under test, and
// no agent runs two things at once.
//
// Bad input is refused, with the value and the limit: n outside
// 3..MaxNodes (a receiver, two senders), a count outside 2..n−1, a
// receiver outside 0..n−1, a count or receiver given twice, more than
// MaxIncastCases cases.
func Incast(n int, receivers, ns []int) ([]IncastCase, error) {
	if n < 3 || n > MaxNodes {
		return nil, fmt.Errorf("schedule incast: %d nodes: want 3..%d (a receiver and at least 2 senders)", n, MaxNodes)
	}
	if len(receivers) == 0 {
		receivers = make([]int, n)
		for i := range receivers {
			receivers[i] = i
		}
	}
	if len(ns) == 0 {
		for k := 2; k < n; k++ {
			ns = append(ns, k)
		}
	}
	seen := make(map[int]bool, len(receivers))
	for _, r := range receivers {
		if r < 0 || r >= n {
			return nil, fmt.Errorf("schedule incast: receiver %d: nodes are 0..%d", r, n-1)
		}
		if seen[r] {
			return nil, fmt.Errorf("schedule incast: receiver %d is given twice", r)
		}
		seen[r] = true
	}
	ns = slices.Clone(ns)
	slices.Sort(ns)
	for i, k := range ns {
		if k < 2 || k > n-1 {
			return nil, fmt.Errorf("schedule incast: %d senders: want 2..%d for %d nodes", k, n-1, n)
		}
		if i > 0 && ns[i-1] == k {
			return nil, fmt.Errorf("schedule incast: %d senders is given twice", k)
		}
	}
	if total := len(receivers) * len(ns); total > MaxIncastCases {
		return nil, fmt.Errorf("schedule incast: %d receivers × %d sender counts = %d cases: at most %d", len(receivers), len(ns), total, MaxIncastCases)
	}
	cases := make([]IncastCase, 0, len(receivers)*len(ns))
	for _, r := range receivers {
		for _, k := range ns {
			c := IncastCase{Dst: r, Senders: make([]int, k)}
			for i := range k {
				c.Senders[i] = (r + 1 + i) % n
			}
			c.Victim = c.Senders[k-1]
			if k < n-1 {
				c.Victim = (r + 1 + k) % n
			}
			cases = append(cases, c)
		}
	}
	return cases, nil
}
