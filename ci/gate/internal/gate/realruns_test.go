package gate

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gate on real make compare runs of one build against itself
// (OLD=HEAD NEW=HEAD), stored as ci/compare.sh wrote them on a quiet
// machine (docs/compare.md says when and how):
//
//   - compare-block4: the default matrix (47 benchmarks), 16 runs per
//     side in blocks of 4 runs per process, ABBA by block;
//   - compare-block1: three SendBW benchmarks, 16 runs per side, one run
//     per process;
//   - compare-default: one run per process, 14 a side, on 15
//     benchmarks;
//   - compare-turns, compare-turns2: the processes take turns run by
//     run, 14 a side, the whole matrix, in two boots;
//   - compare-slow: the same with ten benchmarks 25% slower in NEW;
//   - compare-count24, compare-count30: every run at one fixed count on
//     both sides (make compare's default since 63bd440), 24 and 30 runs
//     a side, the whole matrix, each in a boot of its own;
//   - compare-slow30: the default (30 runs a side) with the same ten
//     benchmarks 25% slower in NEW.
//
// These tests hold docs/compare.md's figures to the stored runs.

var realIgnore = map[string]bool{"cpu": true, "rdma-node-guid": true, "rdma-selfcheck-slowdown": true}

// realOptions are make compare's gate options: -paired, -detect 25%,
// -threshold 5%.
func realOptions(t *testing.T) Options {
	t.Helper()
	opt, err := NewOptions(0.05, "5%", "")
	require.NoError(t, err)
	opt.Paired, opt.Detect = true, 0.25
	return opt
}

func readCompare(t *testing.T, name string) (old, cur *Set) {
	t.Helper()
	old, err := ReadFile(fixture(name+"-old.txt"), realIgnore)
	require.NoError(t, err)
	cur, err = ReadFile(fixture(name+"-new.txt"), realIgnore)
	require.NoError(t, err)
	return old, cur
}

func regressed(rep *Report) map[string]bool {
	m := map[string]bool{}
	for _, row := range rep.Regressions() {
		m[row.Key.Name] = true
	}
	return m
}

// With blocks of 4 runs per process, the runs of a block share the
// guest's state: the stored labelling "fails" one benchmark, and so do
// many of the 16 reassignments of whole block pairs to the two sides
// (9 when this was stored; the count moves with every change to the
// gate's tests, so the property held is "more than the one allowed to
// runs that take turns") — the reason make compare takes turns run by
// run.
func TestStoredBlocksOfFour(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	old, cur := readCompare(t, "compare-block4")
	opt := realOptions(t)
	rep := Compare(old, cur, opt)
	require.Len(t, rep.Families, 47, "the default matrix")
	assert.GreaterOrEqual(t, rep.Decidable(), 47/2, "benchmarks that see 25%")
	assert.Equal(t, map[string]bool{"SendBW/transport=UD/size=64/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false-2": true}, regressed(rep))
	if testing.Short() {
		return
	}
	assert.Greater(t, reassignmentFailures(t, old, cur, opt), 1, "same-build reassignments that fail, of 16")
}

// One run per process: neighbouring runs of the two sides share the
// guest's state, and the gate pairs them where they do.
func TestStoredOneRunPerProcess(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	old, cur := readCompare(t, "compare-block1")
	rep := Compare(old, cur, realOptions(t))
	require.Len(t, rep.Families, 3)
	assert.Empty(t, rep.Regressions(), "one build against itself")
	paired := 0
	for _, f := range rep.Families {
		if f.Paired {
			paired++
		}
	}
	assert.Positive(t, paired, "adjacent runs of one process are correlated")
}

// reassignmentFailures counts the same-build comparisons, of the 16 that
// relabel makes from old and cur with four groups of adjacent runs, that
// the gate fails.
func reassignmentFailures(t *testing.T, old, cur *Set, opt Options) int {
	t.Helper()
	opt.skipPower = true // decisions only
	// Four groups of adjacent pairs, covering all the runs: of 4 pairs
	// at 14 or 16 runs a side, of 8 at 30.
	runs := 0
	for _, b := range old.Benches {
		runs = max(runs, b.Runs)
	}
	block := (runs + 3) / 4
	fails := 0
	for mask := uint(0); mask < 16; mask++ {
		o, c := relabel(old, cur, block, mask)
		if r := Compare(o, c, opt); len(r.Regressions()) > 0 {
			fails++
			t.Logf("reassignment %04b fails: %v", mask, regressed(r))
		}
	}
	return fails
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

// One run per process, 14 runs a side (the default before the turns) on 15 benchmarks
// (SendLat, AtomicLat, AtomicBW, ReadBW): 13 see 25%, no regression, and
// none of the 16 reassignments of groups of 4 pairs to the two sides
// (same-build comparisons with the same timing) fails.
func TestStoredDefault(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	old, cur := readCompare(t, "compare-default")
	opt := realOptions(t)
	rep := Compare(old, cur, opt)
	require.Len(t, rep.Families, 15)
	assert.Empty(t, rep.Regressions(), "one build against itself")
	paired := 0
	for _, f := range rep.Families {
		if f.Paired {
			paired++
		}
	}
	assert.GreaterOrEqual(t, rep.Decidable(), 10, "most benchmarks see 25%")
	assert.Positive(t, paired)
	assert.Equal(t, 0, reassignmentFailures(t, old, cur, opt), "same-build reassignments that fail, of 16")
}

// Since the processes take turns (e584910): both builds' processes stay
// ready and alternate run by run, ABBA within each benchmark, the whole
// default matrix (make compare OLD=HEAD NEW=HEAD), each in a boot of its
// own: compare-turns and compare-turns2 at 14 runs a side of 0.1 s
// (testing's ramp); since 63bd440 every run at one fixed count on both
// sides, one setup a run: compare-count24 (24 runs a side) and
// compare-count30 (30, the default).
//
// compare-count24's reassignments take minutes: at 24 runs a side the U
// test of a unit with ties (HDR percentiles) is go-moremath's exact
// tie-aware one (up to 25 runs a side; at 30 the normal approximation),
// 16 × 47 × ~8 units of it. They run with GATE_SLOW_TESTS=1 (0 of 16
// fail); make test checks the run itself.
func TestStoredTurns(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	for _, c := range []struct {
		name string
		slow bool
	}{
		{"compare-turns", false},
		{"compare-turns2", false},
		{"compare-count24", true},
		{"compare-count30", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old, cur := readCompare(t, c.name)
			opt := realOptions(t)
			rep := Compare(old, cur, opt)
			require.Len(t, rep.Families, 47, "the default matrix")
			assert.Empty(t, rep.Regressions(), "one build against itself")
			assert.GreaterOrEqual(t, rep.Decidable(), 47*2/3, "most benchmarks see a 25 percent slowdown in their deciding unit")
			if testing.Short() || c.slow && os.Getenv("GATE_SLOW_TESTS") != "1" {
				return
			}
			assert.LessOrEqual(t, reassignmentFailures(t, old, cur, opt), 1, "same-build reassignments that fail, of 16")
		})
	}
}

// The self-check on the whole matrix as it was made before issue #41
// (make compare OLD=HEAD NEW=HEAD SLOW='25%:…' with the ten benchmarks of
// selfcheckSlowed; NEW alone built with the tag rdmaslow, whose C loops
// then spun inside the timed region): every slowed benchmark is named or
// UNDECIDED, never passed silently. compare-slow: 14 runs a side
// (e584910); compare-slow30: 30 runs a side at one fixed count (63bd440).
//
// compare-slow30 also shows why both sides of a self-check now run one
// binary: WriteLat UC 8 B, not slowed, is worse in NEW in every unit
// (ns/op +15.9%, msgs/s −15.3%, p50-ns +13.5%): the two builds' loops
// differed (RB_SLOW's checks in the loop), and so did their processes.
// Decided by p50-ns alone the gate names it; it is the one name allowed
// here. For the same reason the unslowed 37 are no same-build
// comparison, and their reassignments to the two sides (as
// TestStoredTurns makes) are not checked here: they mix two builds.
func TestStoredSlowdown(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	for _, c := range []struct {
		name   string
		others map[string]bool
	}{
		{"compare-slow", nil},
		{"compare-slow30", map[string]bool{"WriteLat/transport=UC/size=8/inline=false-2": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old, cur := readCompare(t, c.name)
			opt := realOptions(t)
			rep := Compare(old, cur, opt)
			require.Len(t, rep.Families, 47, "the default matrix")
			sc := rep.CheckSelf(regexp.MustCompile(slowedPattern()))
			assert.Empty(t, sc.Silent, "no slowed benchmark passes silently")
			assert.GreaterOrEqual(t, len(sc.Named), 8, "named: %v, UNDECIDED: %v", sc.Named, sc.Undecided)
			for _, n := range sc.Others {
				assert.True(t, c.others[n], "%s is not slowed, yet named", n)
			}
		})
	}
}

// slowedPattern is selfcheckSlowed as the regexp ci/compare.sh gives the
// gate's -expect-slow.
func slowedPattern() string {
	var alts []string
	for n := range selfcheckSlowed {
		alts = append(alts, regexp.QuoteMeta("Benchmark"+strings.TrimSuffix(n, "-2")))
	}
	return "^(" + strings.Join(alts, "|") + ")$"
}

// selfcheckSlowed are the ten benchmarks compare-slow's NEW ran 25%
// slower (their gate keys).
var selfcheckSlowed = func() map[string]bool {
	m := map[string]bool{}
	for _, n := range []string{
		"SendLat/transport=RC/size=8/inline=false/mode=poll",
		"SendLat/transport=UD/size=8/inline=false/mode=poll",
		"WriteLat/transport=RC/size=4096/inline=false",
		"ReadLat/transport=RC/size=4096/mode=event",
		"AtomicLat/op=fadd/transport=RC",
		"SendBW/transport=UC/size=1024/qd=128/batch=1/signal=1/mode=poll/srq=false/bidir=false",
		"SendBW/transport=RC/size=1024/qd=128/batch=1/signal=1/mode=poll/srq=true/bidir=false",
		"WriteBW/transport=RC/size=65536/qd=128/qps=1/inline=false/batch=1/signal=1/bidir=false",
		"ReadBW/transport=RC/size=4096/qd=16",
		"AtomicBW/op=cas/transport=RC/qd=16",
	} {
		m[n+"-2"] = true
	}
	return m
}()

// The self-checks of issue #41's design, as make compare ran them on a
// fresh clone, quiet machine (testdata/README.md says when): the default
// matrix, 30 runs a side from 3 processes a side, SLOW='25%:random10'
// with a fresh seed each (compare-random<i>-slow.txt holds the spec the
// draw made). Every pick is named or UNDECIDED, none passes silently, no
// more than one unpicked benchmark is named over them all (issue #41: at
// most one false failure in six same-build compares), and the
// benchmarks see a median slowdown of at most 15% in their deciding unit.
const storedRandomChecks = 6

func TestStoredRandomSelfChecks(t *testing.T) {
	t.Parallel() // the stored runs are read only; the gate keeps no state
	olds, err := filepath.Glob(fixture("compare-random*-old.txt"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(olds), storedRandomChecks, "the stored random self-checks")
	others := 0
	defer func() {
		// The budget of issue #41: at most one false name over the
		// stored compares (random2 named SendBW UD 64 B, MB/s −6.7%).
		assert.LessOrEqual(t, others, 1, "unpicked benchmarks named, over all stored self-checks")
	}()
	for _, o := range olds {
		name := strings.TrimSuffix(filepath.Base(o), "-old.txt")
		t.Run(name, func(t *testing.T) {
			old, cur := readCompare(t, name)
			spec, err := os.ReadFile(fixture(name + "-slow.txt"))
			require.NoError(t, err)
			_, expr, ok := strings.Cut(strings.TrimSpace(string(spec)), ":")
			require.True(t, ok, "PCT:REGEX in %s-slow.txt", name)
			rep := Compare(old, cur, realOptions(t))
			require.Len(t, rep.Families, 47, "the default matrix")
			sc := rep.CheckSelf(regexp.MustCompile(expr))
			require.Equal(t, 10, len(sc.Named)+len(sc.Undecided)+len(sc.Silent), "ten picks")
			assert.Empty(t, sc.Silent, "no pick passes silently")
			others += len(sc.Others)
			assert.GreaterOrEqual(t, len(sc.Named), 9, "named: %v; UNDECIDED: %v", sc.Named, sc.Undecided)
			var ds []float64
			for _, f := range rep.Families {
				ds = append(ds, f.Detectable)
			}
			slices.Sort(ds)
			assert.LessOrEqual(t, ds[len(ds)/2], 0.15, "median smallest detectable slowdown")
		})
	}
}
