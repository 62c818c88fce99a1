package coord_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/coord"
	"github.com/rdmabench/rdmabench/cmd/rdmafabric/internal/schedule"
)

func TestRetestPlan(t *testing.T) {
	pp := func(s ...int) []schedule.Pair {
		var out []schedule.Pair
		for i := 0; i < len(s); i += 2 {
			out = append(out, schedule.Pair{Src: s[i], Dst: s[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		pairs  []schedule.Pair
		rounds [][]schedule.Pair
		nodes  int
	}{
		{"none", nil, nil, 2},
		{"one", pp(3, 1), [][]schedule.Pair{pp(3, 1)}, 4},
		{"disjoint", pp(0, 1, 2, 3, 4, 5), [][]schedule.Pair{pp(0, 1, 2, 3, 4, 5)}, 6},
		{"both ways", pp(0, 1, 1, 0), [][]schedule.Pair{pp(0, 1), pp(1, 0)}, 2},
		{"first fit", pp(0, 1, 1, 2, 2, 3, 3, 0, 0, 2), [][]schedule.Pair{pp(0, 1, 2, 3), pp(1, 2, 3, 0), pp(0, 2)}, 4},
		{"duplicate kept", pp(5, 6, 5, 6), [][]schedule.Pair{pp(5, 6), pp(5, 6)}, 7},
		{"suspect against healthy", pp(2, 0, 0, 2, 2, 1, 1, 2, 3, 4), [][]schedule.Pair{pp(2, 0, 3, 4), pp(0, 2), pp(2, 1), pp(1, 2)}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := coord.RetestPlan(tc.pairs)
			assert.Equal(t, "retest", p.Kind)
			assert.Equal(t, tc.nodes, p.Nodes)
			require.Len(t, p.Rounds, len(tc.rounds))
			for i, r := range tc.rounds {
				assert.Equal(t, schedule.Round(r), p.Rounds[i], "round %d", i)
			}
			if len(tc.pairs) > 0 {
				assert.NoError(t, p.Check())
			}
		})
	}
}

// Random pairs: every pair kept once per listing, no node twice in a
// round, no more rounds than the busiest node's pairs allow greedily
// (2·degree − 1), and each pair in the first round it fits.
func TestRetestPlanProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 2 + rng.IntN(20)
		var pairs []schedule.Pair
		for range rng.IntN(60) {
			a, b := rng.IntN(n), rng.IntN(n-1)
			if b >= a {
				b++
			}
			pairs = append(pairs, schedule.Pair{Src: a, Dst: b})
		}
		p := coord.RetestPlan(pairs)
		if len(pairs) > 0 {
			require.NoError(t, p.Check(), "trial %d", trial)
		}
		count := map[schedule.Pair]int{}
		deg := map[int]int{}
		for _, pr := range pairs {
			count[pr]++
			deg[pr.Src]++
			deg[pr.Dst]++
		}
		maxDeg := 0
		for _, d := range deg {
			maxDeg = max(maxDeg, d)
		}
		got := map[schedule.Pair]int{}
		for ri, r := range p.Rounds {
			require.NotEmpty(t, r)
			for _, pr := range r {
				got[pr]++
				// First fit: every earlier round holds one of its nodes.
				for _, earlier := range p.Rounds[:ri] {
					hit := false
					for _, q := range earlier {
						hit = hit || q.Src == pr.Src || q.Dst == pr.Src || q.Src == pr.Dst || q.Dst == pr.Dst
					}
					require.True(t, hit, "trial %d: %v in round %d fits earlier", trial, pr, ri)
				}
			}
		}
		assert.Equal(t, count, got, "trial %d", trial)
		assert.LessOrEqual(t, len(p.Rounds), max(0, 2*maxDeg-1), "trial %d", trial)
		assert.LessOrEqual(t, p.Nodes, max(n, 2))
	}
}

// A retest plan with Nodes set to the node list's length runs.
func TestRetestPlanRuns(t *testing.T) {
	o := options(t, 4, 1)
	o.Plan = coord.RetestPlan([]schedule.Pair{{Src: 2, Dst: 0}, {Src: 0, Dst: 2}, {Src: 2, Dst: 1}})
	require.Error(t, o.Check(), "Nodes is 3 until set")
	o.Plan.Nodes = len(o.Nodes)
	f := newFake()
	sum, err := coord.Run(t.Context(), o, f.dial, &discard{})
	require.NoError(t, err)
	assert.Equal(t, coord.Summary{Rounds: 3, Links: 3, Measured: 6, Rows: 6}, sum)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
