package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gate on real make compare runs (ci/gate/testdata/compare-*, as
// written by ci/compare.sh on a quiet machine; docs/compare.md says how):
//
//   - compare-aa: OLD=HEAD NEW=HEAD, the default matrix, 16 runs per
//     side in blocks of 4 (one build against itself);
//   - compare-slow: the same, NEW built with the self-check slowdown of
//     ten benchmarks (its rdma-selfcheck-slowdown configuration line
//     names them).
//
// These tests hold the README's figures to the stored runs: a change of
// the gate that loses them fails here.

const realBlock = 4 // COMPARE_BLOCK of the stored runs

var realIgnore = map[string]bool{"cpu": true, "rdma-node-guid": true, "rdma-selfcheck-slowdown": true}

func realOptions(t *testing.T) Options {
	t.Helper()
	opt, err := options(0.05, "5%", "")
	require.NoError(t, err)
	opt.Paired, opt.Detect = true, 0.25
	return opt
}

func readCompare(t *testing.T, name string) (old, cur *Set) {
	t.Helper()
	old, err := ReadFile("testdata/"+name+"-old.txt", realIgnore)
	require.NoError(t, err)
	cur, err = ReadFile("testdata/"+name+"-new.txt", realIgnore)
	require.NoError(t, err)
	return old, cur
}

// slowedRegexp reads the self-check slowdown's regexp from a results
// file's rdma-selfcheck-slowdown line ("PCT:REGEX").
func slowedRegexp(t *testing.T, path string) *regexp.Regexp {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rdma-selfcheck-slowdown: "); ok {
			_, expr, ok := strings.Cut(v, ":")
			require.True(t, ok, v)
			return regexp.MustCompile(expr)
		}
	}
	t.Fatalf("%s has no rdma-selfcheck-slowdown line", path)
	return nil
}

// benchName is a Key's name as b.Name() reads it: with the Benchmark
// prefix, without the -GOMAXPROCS suffix.
func benchName(k Key) string {
	return "Benchmark" + regexp.MustCompile(`-[0-9]+$`).ReplaceAllString(k.Name, "")
}

func regressed(rep *Report) map[string]bool {
	m := map[string]bool{}
	for _, row := range rep.Regressions() {
		m[row.Key.Name] = true
	}
	return m
}

func TestRealSameBuild(t *testing.T) {
	old, cur := readCompare(t, "compare-aa")
	rep := Compare(old, cur, realOptions(t))
	require.Len(t, rep.Families, 47, "the default matrix")
	assert.Empty(t, rep.Regressions(), "one build against itself")
	blind := 0
	for _, f := range rep.Families {
		if f.Blind {
			blind++
			t.Logf("UNDECIDED at 25%%: %s (sees %.1f%%)", f.Key.Name, 100*f.Detectable)
		}
	}
	assert.LessOrEqual(t, blind, 4, "at least 90%% of the 47 benchmarks decidable at 25%%")
}

func TestRealSlowdownCaught(t *testing.T) {
	old, cur := readCompare(t, "compare-slow")
	slowed := slowedRegexp(t, "testdata/compare-slow-new.txt")
	rep := Compare(old, cur, realOptions(t))
	require.Len(t, rep.Families, 47)
	got := regressed(rep)
	var named, missed, wrong []string
	for _, f := range rep.Families {
		switch s := slowed.MatchString(benchName(f.Key)); {
		case s && got[f.Key.Name]:
			named = append(named, fmt.Sprintf("%s p=%.2g", f.Key.Name, f.P))
		case s:
			missed = append(missed, fmt.Sprintf("%s p=%.2g level %.2g sees %.1f%%", f.Key.Name, f.P, f.Level, 100*f.Detectable))
		case got[f.Key.Name]:
			wrong = append(wrong, f.Key.Name)
		}
	}
	require.Equal(t, 10, len(named)+len(missed), "ten benchmarks slowed")
	for _, n := range named {
		t.Logf("caught: %s", n)
	}
	assert.GreaterOrEqual(t, len(named), 9, "missed: %v", missed)
	assert.Empty(t, wrong, "flagged although not slowed")
}

// relabel returns copies of old and cur in which the runs of the block
// pairs set in mask (bit j: runs j·block … j·block+block−1 of every
// benchmark) have swapped sides: another assignment of the same runs,
// with the same timing, of which a same-build comparison is one.
func relabel(old, cur *Set, block int, mask uint) (*Set, *Set) {
	o, c := cloneSet(old), cloneSet(cur)
	for _, k := range o.Order {
		ob, cb := o.Benches[k], c.Benches[k]
		if cb == nil || ob.Runs != cb.Runs {
			continue
		}
		for u, ov := range ob.Samples {
			cv := cb.Samples[u]
			if len(ov) != ob.Runs || len(cv) != cb.Runs {
				continue
			}
			for i := range ov {
				if mask>>(i/block)&1 == 1 {
					ov[i], cv[i] = cv[i], ov[i]
				}
			}
		}
	}
	return o, c
}

func cloneSet(s *Set) *Set {
	n := *s
	n.Benches = make(map[Key]*Bench, len(s.Benches))
	for k, b := range s.Benches {
		nb := *b
		nb.Samples = make(map[string][]float64, len(b.Samples))
		for u, v := range b.Samples {
			nb.Samples[u] = slices.Clone(v)
		}
		n.Benches[k] = &nb
	}
	return &n
}

// dropSlowed removes the slowed benchmarks from both sets.
func dropSlowed(old, cur *Set, slowed *regexp.Regexp) {
	for _, s := range []*Set{old, cur} {
		s.Order = slices.DeleteFunc(slices.Clone(s.Order), func(k Key) bool { return slowed.MatchString(benchName(k)) })
	}
}

// TestRealSameBuildRate: same-build comparisons from the stored runs,
// every reassignment of whole block pairs to the two sides (16 per run:
// 4 block pairs), of the A/A run and of the self-check run's 37
// benchmarks that were not slowed. The gate must fail at most 1 in 20.
func TestRealSameBuildRate(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 32 full comparisons")
	}
	opt := realOptions(t)
	opt.skipPower = true // decisions only
	fails, total := 0, 0
	for _, name := range []string{"compare-aa", "compare-slow"} {
		old, cur := readCompare(t, name)
		if name == "compare-slow" {
			dropSlowed(old, cur, slowedRegexp(t, "testdata/compare-slow-new.txt"))
		}
		blocks := old.Benches[old.Order[0]].Runs / realBlock
		for mask := uint(0); mask < 1<<blocks; mask++ {
			o, c := relabel(old, cur, realBlock, mask)
			rep := Compare(o, c, opt)
			total++
			if len(rep.Regressions()) > 0 {
				fails++
				t.Logf("%s relabelled %04b: %v", name, mask, regressed(rep))
			}
		}
	}
	t.Logf("same-build comparisons failed: %d of %d", fails, total)
	assert.LessOrEqual(t, float64(fails), float64(total)/20, "at most 1 in 20")
}
