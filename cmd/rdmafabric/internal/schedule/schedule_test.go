package schedule

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sizes are the node counts every schedule is tested with: the smallest,
// odd and even, powers of two and one past them.
var sizes = []int{2, 3, 4, 5, 7, 8, 16, 17, 64}

// pairCounts counts how many times each directed pair occurs in p.
func pairCounts(p Plan) map[Pair]int {
	m := make(map[Pair]int)
	for _, r := range p.Rounds {
		for _, pr := range r {
			m[pr]++
		}
	}
	return m
}

// assertDisjoint checks, independently of Plan.Check, that every pair of
// p is two distinct nodes below p.Nodes and no node is in two pairs of a
// round.
func assertDisjoint(t *testing.T, p Plan) {
	t.Helper()
	for ri, r := range p.Rounds {
		seen := make(map[int]bool)
		for _, pr := range r {
			assert.NotEqual(t, pr.Src, pr.Dst, "round %d pair %v", ri, pr)
			for _, v := range []int{pr.Src, pr.Dst} {
				assert.True(t, v >= 0 && v < p.Nodes, "round %d pair %v: node out of range", ri, pr)
				assert.False(t, seen[v], "round %d: node %d in two pairs", ri, v)
				seen[v] = true
			}
		}
	}
	assert.NoError(t, p.Check())
}

func TestAllCoversEveryOrderedPairOnce(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			p, err := All(n)
			require.NoError(t, err)
			assert.Equal(t, "all", p.Kind)
			assert.Equal(t, n, p.Nodes)
			wantRounds := 2 * (n - 1) // even n
			if n%2 == 1 {
				wantRounds = 2 * n
			}
			require.Len(t, p.Rounds, wantRounds)
			for ri, r := range p.Rounds {
				assert.Len(t, r, n/2, "round %d", ri)
			}
			counts := pairCounts(p)
			assert.Len(t, counts, n*(n-1))
			assert.Equal(t, n*(n-1), p.Pairs())
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if i != j {
						assert.Equal(t, 1, counts[Pair{i, j}], "pair %d->%d", i, j)
					}
				}
			}
			assertDisjoint(t, p)
		})
	}
}

func TestAllRunsEachCircleRoundBothWays(t *testing.T) {
	for _, n := range sizes {
		p, err := All(n)
		require.NoError(t, err)
		for r := 0; r+1 < len(p.Rounds); r += 2 {
			assert.Equal(t, reversed(p.Rounds[r]), p.Rounds[r+1], "n=%d rounds %d,%d", n, r, r+1)
		}
	}
}

func TestAllOddHasOneIdleNodePerRound(t *testing.T) {
	for _, n := range []int{3, 5, 7, 17} {
		p, err := All(n)
		require.NoError(t, err)
		for ri, r := range p.Rounds {
			assert.Equal(t, n-1, 2*len(r), "n=%d round %d", n, ri)
		}
	}
}

func TestQuickEveryNodeSendsAndReceivesOnce(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint("n=", n), func(t *testing.T) {
			p, err := Quick(n)
			require.NoError(t, err)
			assert.Equal(t, "quick", p.Kind)
			require.Len(t, p.Rounds, 2+n%2)
			src, dst := make([]int, n), make([]int, n)
			for _, r := range p.Rounds {
				for _, pr := range r {
					src[pr.Src]++
					dst[pr.Dst]++
				}
			}
			for v := 0; v < n; v++ {
				assert.Equal(t, 1, src[v], "node %d as source", v)
				assert.Equal(t, 1, dst[v], "node %d as destination", v)
			}
			assert.Equal(t, n, p.Pairs())
			assertDisjoint(t, p)
			all, err := All(n)
			require.NoError(t, err)
			assert.Equal(t, all.Rounds[0], p.Rounds[0], "the first circle round")
		})
	}
}

// ringShifts are the shifts tested for n nodes: 1, 2, 3, n/2, n−1 and
// every divisor of n (shifts sharing a factor with n split the ring
// into several cycles), those within 1..n−1.
func ringShifts(n int) []int {
	set := map[int]bool{1: true, 2: true, 3: true, n / 2: true, n - 1: true}
	for d := 2; d < n; d++ {
		if n%d == 0 {
			set[d] = true
		}
	}
	var ks []int
	for k := 1; k < n; k++ {
		if set[k] {
			ks = append(ks, k)
		}
	}
	return ks
}

func TestRingCoversTheShiftOnce(t *testing.T) {
	for _, n := range sizes {
		for _, k := range ringShifts(n) {
			t.Run(fmt.Sprintf("n=%d/k=%d", n, k), func(t *testing.T) {
				checkRing(t, n, k)
			})
		}
	}
}

func TestRingEveryShiftSmall(t *testing.T) {
	for n := 2; n <= 24; n++ {
		for k := 1; k < n; k++ {
			checkRing(t, n, k)
		}
	}
}

// checkRing checks Ring(n, k): the pairs i→i+k once each and nothing
// else, no node twice in a round, and 2 rounds when n/gcd(n,k) is even,
// 3 when it is odd.
func checkRing(t *testing.T, n, k int) {
	t.Helper()
	p, err := Ring(n, k)
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("ring/k=%d", k), p.Kind)
	want := make(map[Pair]int, n)
	for i := 0; i < n; i++ {
		want[Pair{i, (i + k) % n}] = 1
	}
	assert.Equal(t, want, pairCounts(p), "n=%d k=%d", n, k)
	cycle := n / gcd(n, k)
	wantRounds := 2 + cycle%2
	assert.Len(t, p.Rounds, wantRounds, "n=%d k=%d cycle length %d", n, k, cycle)
	for ri, r := range p.Rounds {
		assert.NotEmpty(t, r, "n=%d k=%d round %d", n, k, ri)
	}
	assertDisjoint(t, p)
}

func TestRingRoundsSizes(t *testing.T) {
	for _, tc := range []struct {
		n, k  int
		sizes []int
	}{
		{2, 1, []int{1, 1}},
		{3, 1, []int{1, 1, 1}},
		{8, 1, []int{4, 4}},
		{8, 4, []int{4, 4}},     // 4 cycles of 2: i→i+4 then i+4→i
		{9, 3, []int{3, 3, 3}},  // 3 cycles of 3
		{15, 5, []int{5, 5, 5}}, // 5 cycles of 3
		{15, 3, []int{6, 6, 3}}, // 3 cycles of 5
		{64, 6, []int{32, 32}},  // 2 cycles of 32
		{17, 1, []int{8, 8, 1}}, // one cycle of 17
		{100000, 1, []int{50000, 50000}},
	} {
		p, err := Ring(tc.n, tc.k)
		require.NoError(t, err)
		got := make([]int, len(p.Rounds))
		for i, r := range p.Rounds {
			got[i] = len(r)
		}
		assert.Equal(t, tc.sizes, got, "n=%d k=%d", tc.n, tc.k)
	}
}

func TestSerialOnePairPerRound(t *testing.T) {
	for _, n := range sizes {
		plans := []func() (Plan, error){
			func() (Plan, error) { return All(n) },
			func() (Plan, error) { return Quick(n) },
			func() (Plan, error) { return Ring(n, 1) },
		}
		for _, mk := range plans {
			p, err := mk()
			require.NoError(t, err)
			s := Serial(p)
			assert.Equal(t, p.Kind+"/serial", s.Kind)
			assert.Equal(t, p.Nodes, s.Nodes)
			require.Len(t, s.Rounds, p.Pairs())
			var flat []Pair
			for _, r := range p.Rounds {
				flat = append(flat, r...)
			}
			for i, r := range s.Rounds {
				require.Len(t, r, 1, "%s n=%d round %d", s.Kind, n, i)
				assert.Equal(t, flat[i], r[0], "same pairs in the same order")
			}
			assert.Equal(t, pairCounts(p), pairCounts(s))
			assertDisjoint(t, s)
			assert.Equal(t, s.Kind, Serial(s).Kind, "serial once")
		}
	}
}

func TestBadInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() (Plan, error)
		want []string // substrings of the error: the value and the limit
	}{
		{"all n=1", func() (Plan, error) { return All(1) }, []string{"1 nodes", "at least 2"}},
		{"all n=0", func() (Plan, error) { return All(0) }, []string{"0 nodes", "at least 2"}},
		{"all n=-5", func() (Plan, error) { return All(-5) }, []string{"-5 nodes", "at least 2"}},
		{"all above max", func() (Plan, error) { return All(MaxAllNodes + 1) }, []string{"2049 nodes", "at most 2048"}},
		{"all huge", func() (Plan, error) { return All(math.MaxInt) }, []string{fmt.Sprint(math.MaxInt), "at most 2048"}},
		{"quick n=1", func() (Plan, error) { return Quick(1) }, []string{"quick", "1 nodes", "at least 2"}},
		{"quick above max", func() (Plan, error) { return Quick(MaxNodes + 1) }, []string{"100001 nodes", "at most 100000"}},
		{"ring n=1", func() (Plan, error) { return Ring(1, 1) }, []string{"1 nodes", "at least 2"}},
		{"ring above max", func() (Plan, error) { return Ring(MaxNodes+1, 1) }, []string{"100001 nodes", "at most 100000"}},
		{"ring k=0", func() (Plan, error) { return Ring(8, 0) }, []string{"shift 0", "1..7"}},
		{"ring k=n", func() (Plan, error) { return Ring(8, 8) }, []string{"shift 8", "1..7", "8 nodes"}},
		{"ring k<0", func() (Plan, error) { return Ring(8, -1) }, []string{"shift -1", "1..7"}},
		{"ring k huge", func() (Plan, error) { return Ring(8, math.MaxInt) }, []string{fmt.Sprint("shift ", math.MaxInt)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.make()
			require.Error(t, err)
			for _, s := range tc.want {
				assert.Contains(t, err.Error(), s)
			}
			assert.Empty(t, p.Rounds)
		})
	}
}

func TestCheckFindsBrokenPlans(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan Plan
		want string
	}{
		{"too few nodes", Plan{Nodes: 1}, "at least 2"},
		{"too many nodes", Plan{Nodes: MaxNodes + 1}, "at most 100000"},
		{"node out of range", Plan{Nodes: 3, Rounds: []Round{{{0, 3}}}}, "round 0: pair 0->3: nodes are 0..2"},
		{"negative node", Plan{Nodes: 3, Rounds: []Round{{{-1, 2}}}}, "pair -1->2"},
		{"self pair", Plan{Nodes: 3, Rounds: []Round{{{0, 1}}, {{2, 2}}}}, "round 1: pair 2->2"},
		{"both directions at once", Plan{Nodes: 2, Rounds: []Round{{{0, 1}, {1, 0}}}}, "round 0: node 1 is in two pairs"},
		{"shared source", Plan{Nodes: 4, Rounds: []Round{{{0, 1}}, {{2, 1}, {3, 1}}}}, "round 1: node 1 is in two pairs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.plan.Check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.NoError(t, Plan{Nodes: 2}.Check(), "a plan with no rounds breaks no rule")
}

func TestEstimate(t *testing.T) {
	all64, err := All(64)
	require.NoError(t, err)
	ring17, err := Ring(17, 1)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		plan    Plan
		perPair time.Duration
		want    time.Duration
	}{
		{"all 64 nodes", all64, 10 * time.Second, 126 * 10 * time.Second}, // 21m
		{"serial all 64", Serial(all64), time.Second, 4032 * time.Second},
		{"ring odd cycle", ring17, time.Minute, 3 * time.Minute},
		{"zero per pair", all64, 0, 0},
		{"no rounds", Plan{Nodes: 2}, time.Hour, 0},
	} {
		got, err := Estimate(tc.plan, tc.perPair)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
	_, err = Estimate(all64, -time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-1s")
	_, err = Estimate(all64, time.Duration(math.MaxInt64/100))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "126 rounds")
}
