package cpus

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "0", want: []int{0}},
		{in: "0-3,8", want: []int{0, 1, 2, 3, 8}},
		{in: " 10-11,2\n", want: []int{10, 11, 2}},
		{in: "3,3,1-2", want: []int{3, 1, 2}},
		{in: "", bad: true},
		{in: "a", bad: true},
		{in: "3-1", bad: true},
		{in: "-1", bad: true},
		{in: "0-70000", bad: true},
	} {
		got, err := ParseList(tc.in)
		if tc.bad {
			assert.Error(t, err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

func TestFormatList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{0}, "0"},
		{[]int{0, 1, 2, 3, 8}, "0-3,8"},
		{[]int{2, 4, 5, 6, 9, 10}, "2,4-6,9-10"},
		{[]int{3, 1, 2}, "3,1-2"},
		{nil, ""},
	} {
		assert.Equal(t, tc.want, FormatList(tc.in))
		if tc.in != nil {
			back, err := ParseList(tc.want)
			require.NoError(t, err)
			assert.Equal(t, tc.in, back, "round trip")
		}
	}
}

// TestPlanForLoops: one CPU per busy loop, never two loops on one CPU;
// with fewer CPUs than loops, nothing is pinned.
func TestPlanForLoops(t *testing.T) {
	assert.Equal(t, [2]int{4, 5}, Plan{Loop: []int{4, 5, 6}}.ForLoops(2))
	assert.Equal(t, [2]int{4, -1}, Plan{Loop: []int{4, 5, 6}}.ForLoops(1))
	assert.Equal(t, [2]int{-1, -1}, Plan{Loop: []int{4}}.ForLoops(2))
	assert.Equal(t, "requester=4,passive=5(numa-local)", Plan{Allowed: []int{4, 5}, Loop: []int{4, 5}, Source: "numa-local"}.Line())
	assert.Equal(t, "requester=4,passive=5(numa-local),runtime=0-3,6-7",
		Plan{Allowed: []int{0, 1, 2, 3, 4, 5, 6, 7}, Loop: []int{4, 5, 6, 7}, Source: "numa-local"}.Line(), "the rest moves off the loops' CPUs")
	assert.Equal(t, "requester=4,passive=unpinned(allowed)", Plan{Allowed: []int{4}, Loop: []int{4}, Source: "allowed"}.Line())
	assert.Equal(t, "requester=4,passive=unpinned(-rdma.cpus),runtime=5", Plan{Allowed: []int{4, 5}, Loop: []int{4}, Source: "-rdma.cpus"}.Line())
	assert.Equal(t, "unpinned", Plan{Source: "-rdma.cpus none"}.Line())
}

// TestTake: passive sides served to remote clients get CPUs of their
// own in a benchmark's order (the passive side's, the rest, the
// requester's last), process-wide (two plans share them), unpinned once
// all are held, and get them back when they stop.
func TestTake(t *testing.T) {
	a, b := Plan{Loop: []int{2, 3, 5}}, Plan{Loop: []int{2, 3, 5}}
	assert.Equal(t, 3, a.Take(), "the passive side's CPU first")
	assert.Equal(t, 5, b.Take(), "another plan of the process")
	assert.Equal(t, 2, a.Take(), "the requester's CPU last")
	assert.Equal(t, -1, a.Take(), "every CPU held: unpinned")
	Give(3)
	assert.Equal(t, 3, a.Take(), "a returned CPU is taken again")
	for _, c := range []int{2, 3, 5, -1} {
		Give(c)
	}
	assert.Equal(t, -1, Plan{}.Take(), "no loop CPUs: unpinned")
	assert.Equal(t, 7, Plan{Loop: []int{7}}.Take(), "one CPU: that one")
	Give(7)
	assert.Empty(t, passiveCPUs.held, "all returned")
}
