package blame

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckBaseline(t *testing.T) {
	require.NoError(t, CheckBaseline(synth{nodes: 4, scens: []scen{bw(), lat()}}.fabric(t), DefaultOptions()))
	err := CheckBaseline(badNodeAndLink().fabric(t), DefaultOptions())
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrBaselineNotHealthy))
	assert.Contains(t, err.Error(), "node node3 (slow-with-all)")
	assert.Contains(t, err.Error(), "link node0 -> node1 (slow-link)")
}

// TestRealRunsBaseline judges every stored faults pass with its own
// healthy pass as the baseline (what ci/fabric/pass.sh does): each
// healthy pass is a valid baseline, no faults pass names a node or a
// link without a fault, CI's faults are named exactly in every CI run,
// and so is issue #44's case; every faults pass of make test's shape
// (faultRuns runs a link) is named exactly, a node with a one-way fault
// in its direction. ci-f665301-fresh12 is the fresh clone
// that failed without a baseline: node2's one healthy partner left
// (node4) answered 8-byte writes in 2.9 and 3.6 ms against 0.4 ms
// elsewhere, a TCG phase its healthy pass had shown too (up to 4.0 ms).
func TestRealRunsBaseline(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*-faults.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), "-faults.txt")
		t.Run(name, func(t *testing.T) {
			o := DefaultOptions()
			o.Baseline = readTestdata(t, name+"-healthy.txt")
			require.NoError(t, CheckBaseline(o.Baseline, o))
			rep := Judge(readTestdata(t, name+"-faults.txt"), o)
			nodes, links := names(rep)
			t.Logf("named nodes %v, links %v", nodes, links)
			if strings.HasPrefix(name, "ci-") {
				assertFaultsNamed(t, rep)
				return
			}
			text := readSpec(t, name)
			node, link := parseSpec(t, text)
			for _, n := range nodes {
				assert.Equal(t, node, n, "a node without a fault named")
			}
			for _, l := range links {
				assert.Contains(t, []Link{link, {link.Dst, link.Src}}, l, "a link without a fault named")
			}
			if strings.HasSuffix(name, "loss5-delay40") {
				assert.Equal(t, []string{"node4"}, nodes)
				assert.NotEmpty(t, links)
			}
			if f := readTestdata(t, name+"-faults.txt"); minRuns(f) >= faultRuns {
				assert.Equal(t, "exact", verdict(rep, parseFaults(t, text)), "a faults pass of make test's shape")
				assertDirections(t, rep, text)
			}
		})
	}
}

// minRuns is the fewest runs of any link in the metrics blamed in f.
func minRuns(f *Fabric) int {
	r := 0
	for _, m := range metricsOf(f, DefaultOptions().withDefaults()) {
		for _, runs := range f.Runs[m.Scenario][m.Unit] {
			if r == 0 || len(runs) < r {
				r = len(runs)
			}
		}
	}
	return r
}

// assertDirections checks that rep names the node of a one-way node
// fault in spec (egress, ingress), and in that direction, as make
// test's check (ci/fabric/faults) wants.
func assertDirections(t *testing.T, rep Report, spec string) {
	t.Helper()
	for _, w := range strings.Fields(spec) {
		want := map[string]string{"egress": "sending", "ingress": "receiving"}[w[strings.LastIndex(w, ":")+1:]]
		if !strings.HasPrefix(w, "node=") || want == "" {
			continue
		}
		node, _, _ := strings.Cut(strings.TrimPrefix(w, "node="), ":")
		i := slices.IndexFunc(rep.Nodes, func(v NodeVerdict) bool { return v.Node == node })
		if assert.GreaterOrEqual(t, i, 0, "%s is not named", node) {
			assert.True(t, slices.ContainsFunc(rep.Nodes[i].Findings, func(f Finding) bool { return f.Direction == want }), "%s: no %s finding", node, want)
		}
	}
}

// faultRuns and faultNoise are the faults pass of make test
// (ci/fabric/pass.sh) against its healthy pass: 4 runs of 25
// iterations against 3 of 100, with 1.4 times its run noise (measured:
// see rateDraw).
const (
	faultRuns  = 4
	faultNoise = 1.4
)

// TestBaselineRandomModes draws fabrics like CI's TCG guests: a node
// in a run falls, with probability p, into a slow phase that makes the
// 8-byte round trips it starts M times slower (M 6–10, the same in a
// fabric; on fresh clones 0.35 ms against 3–4 ms), bandwidth unmoved,
// every value ±10%. The baseline is a healthy pass of 3 runs, the
// judged one faultRuns runs with a node whose egress is slowed F× (F 15–60) and
// half the time a link (one way or both) slowed the same way. Without
// a baseline a healthy node in its slow phase in both runs is named;
// with the healthy pass as baseline it must be named at most in 3% of
// the fabrics (when the baseline never saw the phase), while the faults
// are still named in 97% of them. The seed is printed; put it in place
// of the clock's to replay.
func TestBaselineRandomModes(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 45))
	const trials = 300
	var falseWith, falseWithout, missedWith int
	for trial := range trials {
		p := 0.1 + 0.3*rng.Float64()
		m := 6 + 4*rng.Float64()
		bad := nodeName(rng.IntN(4))
		f := 15 + 45*rng.Float64()
		slow := map[Link]bool{}
		for _, l := range allPairs(4) {
			if l.Src == bad {
				slow[l] = true
			}
		}
		var link []Link
		if rng.IntN(2) == 0 {
			link = otherLink(rng, bad)
			for _, l := range link {
				slow[l] = true
			}
		}
		healthy := phased(t, rng, 3, p, m, 0, nil)
		faults := phased(t, rng, faultRuns, p, m, f, slow)
		what := fmt.Sprintf("trial %d: p %.2f, M %.1f, %s ×%.0f, link %v", trial, p, m, bad, f, link)

		nodes, _ := names(Judge(faults, DefaultOptions()))
		if slices.ContainsFunc(nodes, func(n string) bool { return n != bad }) {
			falseWithout++
		}
		o := DefaultOptions()
		o.Baseline = healthy
		nodes, links := names(Judge(faults, o))
		if slices.ContainsFunc(nodes, func(n string) bool { return n != bad }) ||
			slices.ContainsFunc(links, func(l Link) bool { return !slow[l] || l.Src == bad || l.Dst == bad }) {
			falseWith++
			t.Logf("%s: named nodes %v, links %v", what, nodes, links)
		}
		if !slices.Contains(nodes, bad) || (link != nil && !slices.ContainsFunc(links, func(l Link) bool { return slices.Contains(link, l) })) {
			missedWith++
			t.Logf("%s: missed; named nodes %v, links %v", what, nodes, links)
		}
	}
	t.Logf("%d fabrics: a healthy node or link named in %d without a baseline, %d with; a fault missed with one in %d",
		trials, falseWithout, falseWith, missedWith)
	assert.LessOrEqual(t, falseWith, trials*3/100, "false names with a baseline")
	assert.LessOrEqual(t, missedWith, trials*3/100, "faults missed with a baseline")
}

// phased renders a 4-node fabric of runs passes (WriteBW and WriteLat,
// see TestBaselineRandomModes): the links in slow are slowed by f on
// both scenarios.
func phased(t *testing.T, rng *rand.Rand, runs int, p, m, f float64, slow map[Link]bool) *Fabric {
	t.Helper()
	return renderPass(t, rng, runs, p, m, func(l Link, _ int, _ scen) float64 {
		q := 1 + 0.1*(2*rng.Float64()-1)
		if slow[l] {
			q /= f
		}
		return q
	})
}

// otherLink draws a link between two of the 4 nodes other than bad,
// one way or (half the time) both.
func otherLink(rng *rand.Rand, bad string) []Link {
	var others []string
	for i := range 4 {
		if nodeName(i) != bad {
			others = append(others, nodeName(i))
		}
	}
	pr := rng.Perm(3)
	a, b := others[pr[0]], others[pr[1]]
	link := []Link{{a, b}}
	if rng.IntN(2) == 0 {
		link = append(link, Link{b, a})
	}
	return link
}

// renderPass renders runs passes of a 4-node fabric, WriteBW and
// WriteLat on every link: each row's factor is q(link, scenario index,
// scenario), and in each run a node is in a slow latency phase with
// probability p, which divides its sending latency rows by m.
func renderPass(t *testing.T, rng *rand.Rand, runs int, p, m float64, q func(Link, int, scen) float64) *Fabric {
	t.Helper()
	var b strings.Builder
	b.WriteString("Unit MB/s better=higher\nUnit msgs/s better=higher\nUnit p50-ns better=lower\n")
	for range runs {
		phase := map[string]bool{}
		for i := range 4 {
			phase[nodeName(i)] = rng.Float64() < p
		}
		for si, sc := range []scen{bw(), lat()} {
			for _, l := range allPairs(4) {
				x := q(l, si, sc)
				if sc.lat && phase[l.Src] {
					x /= m
				}
				b.WriteString(row(l, sc, x) + "\n")
			}
		}
	}
	fab, err := Read(strings.NewReader(b.String()))
	require.NoError(t, err)
	return fab
}

// TestBaselineRandomRates draws fabrics like the real rate-limited runs
// (testdata/given-rate50, seed11, seed22, random4-44bd6e1-1; see
// drawRates) and judges the faults pass (faultRuns runs) with the
// healthy pass (3 runs) as the baseline. At most 0.8% of the fabrics
// have a healthy node or link named, 1.5% an end of the slow link named
// in its place, 3.5% a link the limited node slows named in its place
// (misattributed: that node is unnamed), and at least 63% are named
// exactly. Measured 2026-12-07, six clock seeds of 4000 fabrics: 0.2-
// 0.4%, 0.55-0.97%, 1.7-2.5% and 65.6-67.8%; before the per-run bar
// followed the run count (runKFor) and links were asked on their own
// sides (linkEnds), 49-50% were exact
// (docs/notes/fabric-2026-12-07-rate-limits.md). Fabrics whose healthy
// pass cannot be a baseline (CheckBaseline) are drawn again. The seed
// is printed; put it in place of the clock's to replay.
func TestBaselineRandomRates(t *testing.T) {
	const trials = 4000
	tl := rateTrials(t, 46, trials, func(rng *rand.Rand, d rateDraw, o Options) Report {
		return Judge(d.pass(t, rng), o)
	})
	t.Logf("%d rate-limited fabrics with a baseline: %s", trials, tl)
	tl.check(t, trials, 8, 15, 35, 630)
}

// TestConfirmRandom is TestBaselineRandomRates through make test's
// path (rdmafabric run -confirm, ci/fabric/pass.sh): the suspects of
// the faults pass are retested (Retests, 2 healthy partners a suspect
// node) in a second pass of faultRuns runs, drawn with the same faults
// and fresh noise and lasting effects (a pass's own effects did not
// carry to the next in the real runs), and Confirm names what it shows
// again. At most 0.3% of the fabrics have a healthy node or link named,
// 1.2% an end of the slow link, 1% a misattributed link, and at least
// 56% are named exactly (measured, six seeds of 2000: 0-0.05%,
// 0.35-0.7%, 0.05-0.5%, 61.6-63.7%; 41.6-45.7% exact before runKFor and
// linkEnds: docs/notes/fabric-2026-12-07-rate-limits.md). The seed is
// printed; put it in place of the clock's to replay.
func TestConfirmRandom(t *testing.T) {
	const trials = 2000
	tl := rateTrials(t, 47, trials, func(rng *rand.Rand, d rateDraw, o Options) Report {
		faults := d.pass(t, rng)
		co := o
		co.Confirm = true
		second := onlyPairs(d.pass(t, rng), Retests(Judge(faults, co), faults.Nodes, 2))
		return Confirm(faults, second, o)
	})
	t.Logf("%d rate-limited fabrics, confirmed on retest: %s", trials, tl)
	tl.check(t, trials, 3, 12, 10, 560)
}

// rateTrials draws trials fabrics (drawRates) from a PCG stream seeded
// by the clock (the seed is printed; put it in place of the clock's to
// replay), has judge name the faults of each with its healthy pass as
// the baseline in o, logs every report that is not exact and returns
// the tally.
func rateTrials(t *testing.T, stream uint64, trials int, judge func(rng *rand.Rand, d rateDraw, o Options) Report) tally {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, stream))
	var tl tally
	for range trials {
		d, healthy := drawRates(t, rng)
		o := DefaultOptions()
		o.Baseline = healthy
		if tl.add(d, judge(rng, d, o)) != "exact" {
			t.Logf("%s: %s", d, tl.last)
		}
	}
	return tl
}

// rateDraw is one fabric of TestBaselineRandomRates: a 4-node fabric
// whose links differ by a lasting effect of their own in each pass (log
// sd sl, 0.05-0.2; in the real runs a link's effect in one pass did not
// carry to the next), with run noise of sd sr (0.05-0.2, ×faultNoise in
// the faults pass's shorter runs) and the latency phases of
// TestBaselineRandomModes; in the faults passes a node (bad) whose
// egress bandwidth is cut to r (30-50%) and a link between two others
// (one way or both) cut to r2 (30-50%). The run noise of the faults
// pass is faultNoise times the healthy pass's: measured on the stored
// runs (runSigma of MB/s, faults over healthy) its median is 1.4 for 2
// runs of 50 (22 runs) and for 4 of 25 (6 runs, at f2f1486).
type rateDraw struct {
	sl, sr, p, m float64
	bad          string
	r, r2        float64
	link         []Link
	cut          map[Link]float64
}

// drawRates draws a fabric and its healthy pass (3 runs), drawn again
// until that pass can be a baseline (CheckBaseline).
func drawRates(t *testing.T, rng *rand.Rand) (rateDraw, *Fabric) {
	t.Helper()
	for {
		d := rateDraw{
			sl: 0.05 + 0.15*rng.Float64(), sr: 0.05 + 0.15*rng.Float64(),
			p: 0.1 + 0.3*rng.Float64(), m: 6 + 4*rng.Float64(),
			bad: nodeName(rng.IntN(4)), r: 0.3 + 0.2*rng.Float64(), cut: map[Link]float64{},
		}
		for _, l := range allPairs(4) {
			if l.Src == d.bad {
				d.cut[l] = d.r
			}
		}
		d.link = otherLink(rng, d.bad)
		d.r2 = 0.3 + 0.2*rng.Float64()
		for _, l := range d.link {
			d.cut[l] = d.r2
		}
		healthy := ratePass(t, rng, 3, d.sl, d.sr, d.p, d.m, nil)
		if CheckBaseline(healthy, DefaultOptions()) == nil {
			return d, healthy
		}
	}
}

// pass renders a faults pass of d: faultRuns runs, its own lasting
// effects and noise.
func (d rateDraw) pass(t *testing.T, rng *rand.Rand) *Fabric {
	t.Helper()
	return ratePass(t, rng, faultRuns, d.sl, faultNoise*d.sr, d.p, d.m, d.cut)
}

// String describes d for a log line.
func (d rateDraw) String() string {
	return fmt.Sprintf("%s ×%.2f, link %v ×%.2f, link sd %.2f, run sd %.2f", d.bad, d.r, d.link, d.r2, d.sl, d.sr)
}

// onlyPairs keeps of f the links in pairs: a second pass runs those.
func onlyPairs(f *Fabric, pairs []Pair) *Fabric {
	f.Links = slices.DeleteFunc(f.Links, func(l Link) bool { return !slices.Contains(pairs, l) })
	for _, units := range f.Runs {
		for _, runs := range units {
			for l := range runs {
				if !slices.Contains(pairs, l) {
					delete(runs, l)
				}
			}
		}
	}
	return f
}

// tally counts reports of drawn fabrics by what they name, the first
// that holds: a healthy node or link (a node without a fault and not an
// end of the slow link, a link the faults do not slow), an end of the
// slow link (named in its place), a misattributed link (one the limited
// node slows, named in its place), or exactly the faults.
type tally struct {
	healthy, ends, misattributed, exact int
	last                                string
}

// add counts rep against d and returns what it was: "healthy named",
// "link end named", "misattributed", "missed" or "exact" (last also
// holds the names).
func (tl *tally) add(d rateDraw, rep Report) string {
	nodes, links := names(rep)
	what := "exact"
	end := func(n string) bool { return n == d.link[0].Src || n == d.link[0].Dst }
	switch {
	case slices.ContainsFunc(nodes, func(n string) bool { return n != d.bad && !end(n) }) ||
		slices.ContainsFunc(links, func(l Link) bool { return d.cut[l] == 0 }):
		what = "healthy named"
		tl.healthy++
	case slices.ContainsFunc(nodes, func(n string) bool { return n != d.bad }):
		what = "link end named"
		tl.ends++
	case slices.ContainsFunc(links, func(l Link) bool { return !slices.Contains(d.link, l) }):
		what = "misattributed"
		tl.misattributed++
	case !slices.Contains(nodes, d.bad) || !slices.ContainsFunc(links, func(l Link) bool { return slices.Contains(d.link, l) }):
		what = "missed"
	default:
		tl.exact++
	}
	tl.last = fmt.Sprintf("%s: nodes %v, links %v", what, nodes, links)
	return what
}

// String gives the counts.
func (tl tally) String() string {
	return fmt.Sprintf("a healthy node or link named in %d, an end of the slow link named in %d, a link misattributed in %d, named exactly in %d",
		tl.healthy, tl.ends, tl.misattributed, tl.exact)
}

// check asserts the counts of trials fabrics against per-mille bounds.
func (tl tally) check(t *testing.T, trials, healthy, ends, misattributed, exact int) {
	t.Helper()
	assert.LessOrEqual(t, tl.healthy, trials*healthy/1000, "healthy nodes or links named")
	assert.LessOrEqual(t, tl.ends, trials*ends/1000, "ends of the slow link named")
	assert.LessOrEqual(t, tl.misattributed, trials*misattributed/1000, "links named in place of their node")
	assert.GreaterOrEqual(t, tl.exact, trials*exact/1000, "rate limits named exactly")
}

// ratePass renders a pass of TestBaselineRandomRates: each link has a
// lasting effect (log sd sl) on each scenario, each run noise (sd sr);
// the latency phases as in phased; the bandwidth of the links in cut
// multiplied by their factor (a rate limit leaves 8-byte latency be).
func ratePass(t *testing.T, rng *rand.Rand, runs int, sl, sr, p, m float64, cut map[Link]float64) *Fabric {
	t.Helper()
	lasting := map[Link][2]float64{}
	for _, l := range allPairs(4) {
		lasting[l] = [2]float64{math.Exp(sl * rng.NormFloat64()), math.Exp(sl * rng.NormFloat64())}
	}
	return renderPass(t, rng, runs, p, m, func(l Link, si int, sc scen) float64 {
		q := lasting[l][si] * math.Exp(sr*rng.NormFloat64())
		if c, ok := cut[l]; ok && !sc.lat {
			q *= c
		}
		return q
	})
}
