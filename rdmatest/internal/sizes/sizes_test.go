package sizes

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{in: "8", want: []int{8}},
		{in: "64,4K,1M", want: []int{64, 4096, 1 << 20}},
		{in: " 2 , 2 ,8", want: []int{2, 8}},
		{in: "2-64", want: []int{2, 4, 8, 16, 32, 64}},
		{in: "3-16", want: []int{3, 4, 8, 16}},
		{in: "1K-4K", want: []int{1024, 2048, 4096}},
		{in: "1G", want: []int{1 << 30}},
		{in: "0", err: `message size "0" is out of range 1..1073741824 bytes`},
		{in: "2G", err: `message size "2G" is out of range 1..1073741824 bytes`},
		{in: "-5", err: `message size "-5" is out of range 1..1073741824 bytes`},
		{in: "abc", err: `message size "abc" is not a number of bytes`},
		{in: "8,,16", err: "empty message size"},
		{in: "64-8", err: `size range "64-8" runs backwards (64 > 8)`},
		{in: "", err: "empty message size"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	all, err := Parse("all")
	require.NoError(t, err)
	assert.Equal(t, 2, all[0])
	assert.Equal(t, 8<<20, all[len(all)-1])
	assert.Len(t, all, 23, "perftest -a: 2^1 … 2^23")
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"8", "64,4K,1M", "2-1M", "all", "0", "1G", "3-16", ",", "9999999999999999999K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sizes, err := Parse(s)
		if err != nil {
			return
		}
		require.NotEmpty(t, sizes)
		seen := map[int]bool{}
		for _, v := range sizes {
			require.True(t, v >= 1 && v <= MaxSize, "size %d out of range for %q", v, s)
			require.False(t, seen[v], "duplicate %d for %q", v, s)
			seen[v] = true
		}
	})
}

// TestBadSizes: every malformed size list is refused with a message
// naming the offending item and the limit.
func TestBadSizes(t *testing.T) {
	sizes := func(in string) func() error { return func() error { _, err := Parse(in); return err } }
	for _, tc := range []struct {
		name string
		err  func() error
		want []string
	}{
		{name: "size list: 0", err: sizes("0"), want: []string{`"0"`, "1..1073741824"}},
		{name: "size list: 2G", err: sizes("64,2G"), want: []string{`"2G"`, "1..1073741824"}},
		{name: "size list: negative", err: sizes("-5"), want: []string{`"-5"`, "1..1073741824"}},
		{name: "size list: not a number", err: sizes("abc"), want: []string{`"abc"`, "e.g. 64, 4K, 1M"}},
		{name: "size list: unknown suffix", err: sizes("4X"), want: []string{`"4X"`, "e.g. 64, 4K, 1M"}},
		{name: "size list: empty item", err: sizes("8,,16"), want: []string{"empty message size"}},
		{name: "size list: trailing comma", err: sizes("8,"), want: []string{"empty message size"}},
		{name: "size list: open range", err: sizes("1-"), want: []string{"empty message size"}},
		{name: "size list: backwards range", err: sizes("64-8"), want: []string{`"64-8"`, "64 > 8"}},
		{name: "size list: range above max", err: sizes("1K-4G"), want: []string{`"4G"`, "1..1073741824"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}
