package schedule

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIncastProperties draws node counts, receivers and sender counts at
// random (the seed is printed) and checks what every case must be: N
// distinct senders, none the receiver; a victim partner other than the
// receiver, outside the senders unless every other node sends; one case
// per receiver and count, receivers in the order given, counts
// ascending.
func TestIncastProperties(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for range 200 {
		n := 3 + rng.IntN(30)
		var recv, ns []int
		if rng.IntN(3) > 0 {
			recv = rng.Perm(n)[:1+rng.IntN(n)]
		}
		if rng.IntN(3) > 0 {
			perm := rng.Perm(n - 2)
			for _, k := range perm[:1+rng.IntN(n-2)] {
				ns = append(ns, k+2)
			}
		}
		cases, err := Incast(n, recv, ns)
		require.NoError(t, err, "n %d receivers %v counts %v", n, recv, ns)
		wantRecv, wantNs := len(recv), len(ns)
		if wantRecv == 0 {
			wantRecv = n
		}
		if wantNs == 0 {
			wantNs = n - 2
		}
		require.Len(t, cases, wantRecv*wantNs)
		for i, c := range cases {
			if recv != nil {
				assert.Equal(t, recv[i/wantNs], c.Dst, "case %d", i)
			}
			if i%wantNs > 0 {
				assert.Greater(t, c.N(), cases[i-1].N(), "counts ascend")
			}
			seen := map[int]bool{c.Dst: true}
			for _, s := range c.Senders {
				assert.True(t, s >= 0 && s < n, "sender %d", s)
				assert.False(t, seen[s], "case %+v: node %d twice", c, s)
				seen[s] = true
			}
			assert.NotEqual(t, c.Dst, c.Victim)
			assert.True(t, c.Victim >= 0 && c.Victim < n)
			if c.N() < n-1 {
				assert.False(t, seen[c.Victim], "case %+v: the victim partner sends though a node is idle", c)
			} else {
				assert.True(t, seen[c.Victim], "case %+v: all send, the victim partner is one of them", c)
			}
		}
	}
}

// TestIncastRefuses checks that bad input is refused with its value and
// the limit.
func TestIncastRefuses(t *testing.T) {
	for _, tc := range []struct {
		n         int
		recv, ns  []int
		wantError string
	}{
		{2, nil, nil, "2 nodes: want 3..100000"},
		{4, []int{4}, nil, "receiver 4: nodes are 0..3"},
		{4, []int{-1}, nil, "receiver -1: nodes are 0..3"},
		{4, []int{1, 1}, nil, "receiver 1 is given twice"},
		{4, nil, []int{1}, "1 senders: want 2..3 for 4 nodes"},
		{4, nil, []int{4}, "4 senders: want 2..3 for 4 nodes"},
		{5, nil, []int{3, 3}, "3 senders is given twice"},
		{20000, nil, nil, "20000 receivers × 19998 sender counts"},
	} {
		_, err := Incast(tc.n, tc.recv, tc.ns)
		assert.ErrorContains(t, err, tc.wantError, "%+v", tc)
	}
}

// TestIncastFourNodes is the four-guest sweep of make test: 3:1 to each
// node in turn, the victim partner one of the senders.
func TestIncastFourNodes(t *testing.T) {
	cases, err := Incast(4, nil, []int{3})
	require.NoError(t, err)
	require.Len(t, cases, 4)
	for i, c := range cases {
		assert.Equal(t, i, c.Dst)
		assert.ElementsMatch(t, []int{(i + 1) % 4, (i + 2) % 4, (i + 3) % 4}, c.Senders)
		assert.Equal(t, (i+3)%4, c.Victim)
	}
}
