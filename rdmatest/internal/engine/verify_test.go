package engine

import (
	"encoding/binary"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/verbs"
)

// TestCheckPatternCatchesACorruptedByte: the payload check passes on the
// pattern and names the first wrong byte otherwise.
func TestCheckPatternCatchesACorruptedByte(t *testing.T) {
	b := make([]byte, 4096)
	fillPattern(b)
	require.NoError(t, checkPattern("payload", b))
	for _, off := range []int{0, 250, 251, 4095} {
		c := append([]byte(nil), b...)
		c[off] ^= 0x40
		err := checkPattern("payload", c)
		require.Error(t, err, "byte %d corrupted", off)
		assert.ErrorContains(t, err, "byte "+itoa(off)+" is")
	}
	assert.Error(t, checkPattern("untouched memory", make([]byte, 8)), "zeroed memory is not the pattern")
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestCheckCountersCatchesAWrongStart: counters that did not start at 0,
// or missed an operation, fail the check.
func TestCheckCountersCatchesAWrongStart(t *testing.T) {
	for _, tc := range []struct {
		n                int64
		counters, stride int
		bump             int // counter index to disturb (-1: none)
		delta            int64
		wantErr          bool
	}{
		{n: 1000, counters: 1, stride: 8, bump: -1},
		{n: 1001, counters: 7, stride: 64, bump: -1},
		{n: 1000, counters: 1, stride: 8, bump: 0, delta: 5, wantErr: true},
		{n: 1001, counters: 7, stride: 64, bump: 6, delta: -1, wantErr: true},
	} {
		slot := make([]byte, tc.counters*tc.stride)
		for k := range tc.n { // what the NIC does: one add per operation
			c := int(k % int64(tc.counters))
			v := binary.LittleEndian.Uint64(slot[c*tc.stride:])
			binary.LittleEndian.PutUint64(slot[c*tc.stride:], v+1)
		}
		if tc.bump >= 0 {
			v := binary.LittleEndian.Uint64(slot[tc.bump*tc.stride:])
			binary.LittleEndian.PutUint64(slot[tc.bump*tc.stride:], uint64(int64(v)+tc.delta))
		}
		err := checkCounters(slot, tc.n, tc.counters, tc.stride, 1)
		if tc.wantErr {
			assert.ErrorContains(t, err, "verification: counter", "%+v", tc)
		} else {
			assert.NoError(t, err, "%+v", tc)
		}
	}
}

// TestMsgsPerQP follows the stream's round robin: batch after batch, QP
// after QP, the last batch partial.
func TestMsgsPerQP(t *testing.T) {
	for _, tc := range []struct{ n, batch, qps int }{{1, 1, 1}, {100, 1, 4}, {103, 8, 3}, {7, 16, 2}, {128, 16, 4}} {
		got := make([]int64, tc.qps)
		var sum int64
		for i := range got {
			got[i] = msgsPerQP(int64(tc.n), tc.batch, tc.qps, i)
			sum += got[i]
		}
		want := make([]int64, tc.qps)
		for left, q := tc.n, 0; left > 0; q = (q + 1) % tc.qps {
			k := min(left, tc.batch)
			want[q] += int64(k)
			left -= k
		}
		assert.Equal(t, want, got, "%+v", tc)
		assert.Equal(t, int64(tc.n), sum)
	}
}

// TestNoSignaledWR: a stream has latency samples only when some QP got a
// whole signal interval.
func TestNoSignaledWR(t *testing.T) {
	s := Spec{Op: verbs.OpWrite, Size: 64, Batch: 8, Signal: 8, QPs: 2}
	assert.True(t, noSignaledWR(&s, 1))
	assert.True(t, noSignaledWR(&s, 7))
	assert.False(t, noSignaledWR(&s, 8))
	assert.False(t, noSignaledWR(&s, 100))
}
