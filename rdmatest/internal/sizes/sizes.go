// Package sizes reads message-size lists, such as bench_test's -sizes
// and rdmatest/scenario's ParseSizes take, and bounds every message
// size rdmabench accepts (MaxSize).
package sizes

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxSize is the largest message size Parse accepts (1 GiB), and the
// bound of every buffer size a scenario asks for.
const MaxSize = 1 << 30

// Parse reads a message-size list: comma-separated sizes in bytes
// with an optional K, M or G suffix (powers of 1024), a range LO-HI
// meaning every power of two from LO to HI, or "all" for perftest -a's
// 2 B … 8 MiB. Every size must be within 1..MaxSize; the result keeps the
// given order without duplicates.
func Parse(s string) ([]int, error) {
	if strings.TrimSpace(s) == "all" {
		return powers(2, 8<<20), nil
	}
	var out []int
	seen := map[int]bool{}
	add := func(v int) {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if lo, hi, ok := strings.Cut(f, "-"); ok && lo != "" {
			a, err := parseSize(lo)
			if err != nil {
				return nil, err
			}
			b, err := parseSize(hi)
			if err != nil {
				return nil, err
			}
			if a > b {
				return nil, fmt.Errorf("rdmatest: size range %q runs backwards (%d > %d)", f, a, b)
			}
			for _, v := range powers(a, b) {
				add(v)
			}
			continue
		}
		v, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		add(v)
	}
	return out, nil
}

// powers returns lo, then every power of two above it, up to hi.
func powers(lo, hi int) []int {
	out := []int{lo}
	p := 1
	for p <= lo {
		p <<= 1
	}
	for ; p <= hi; p <<= 1 {
		out = append(out, p)
	}
	return out
}

func parseSize(f string) (int, error) {
	if f == "" {
		return 0, fmt.Errorf("rdmatest: empty message size in the list")
	}
	mult := 1
	num := f
	switch f[len(f)-1] {
	case 'K', 'k':
		mult, num = 1<<10, f[:len(f)-1]
	case 'M', 'm':
		mult, num = 1<<20, f[:len(f)-1]
	case 'G', 'g':
		mult, num = 1<<30, f[:len(f)-1]
	}
	v, err := strconv.Atoi(num)
	if err != nil {
		return 0, fmt.Errorf("rdmatest: message size %q is not a number of bytes (e.g. 64, 4K, 1M)", f)
	}
	if v < 1 || v > MaxSize/mult {
		return 0, fmt.Errorf("rdmatest: message size %q is out of range 1..%d bytes", f, MaxSize)
	}
	return v * mult, nil
}
