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
// see TestBaselineRandomRates).
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
// (testdata/given-rate50, seed11, seed22): a node whose egress bandwidth
// is cut to 30–50% and a link between two others cut the same way, one
// way or both, on a 4-node fabric whose links differ by a lasting
// effect of their own in each pass (sd 0.05–0.2 in log; in the real
// runs a link's effect in one pass did not carry to the next), with run
// noise of sd 0.05–0.2 (×faultNoise in the faults pass's shorter runs) and
// the latency phases of TestBaselineRandomModes. The healthy pass (3
// runs) is the baseline. Judged with it, at most 2.5% of the fabrics
// have a healthy node or link named, and the faults are named exactly
// in at least 45%. Measured with the faults pass of 4 runs and the
// others' spread no longer barring the medians (spreadOptions), six
// clock seeds, 2026-12-07: 40–59 of 4000 false, 1948–2011 exact. The
// same draws with 2 runs and that spread (2026-12-07, 8 seeds): 120–153
// false, 1723–1772 exact; with 4 runs and the spread: 32–34 false,
// 1943 exact. The run noise of the faults pass is faultNoise times the
// healthy pass's: measured on the stored runs (runSigma of MB/s, faults
// over healthy) its median is 1.4 for 2 runs of 50 (22 runs) and for 4
// of 25 (6 runs, at f2f1486). Fabrics whose healthy pass cannot be a baseline
// (CheckBaseline) are drawn again. The seed is printed; put it in place
// of the clock's to replay.
func TestBaselineRandomRates(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 46))
	const trials = 4000
	var falseNames, exact int
	for trial := 0; trial < trials; {
		sl, sr := 0.05+0.15*rng.Float64(), 0.05+0.15*rng.Float64()
		p, m := 0.1+0.3*rng.Float64(), 6+4*rng.Float64()
		bad := nodeName(rng.IntN(4))
		cut := map[Link]float64{}
		r := 0.3 + 0.2*rng.Float64()
		for _, l := range allPairs(4) {
			if l.Src == bad {
				cut[l] = r
			}
		}
		link := otherLink(rng, bad)
		r2 := 0.3 + 0.2*rng.Float64()
		for _, l := range link {
			cut[l] = r2
		}
		healthy := ratePass(t, rng, 3, sl, sr, p, m, nil)
		faults := ratePass(t, rng, faultRuns, sl, faultNoise*sr, p, m, cut)
		if CheckBaseline(healthy, DefaultOptions()) != nil {
			continue
		}
		trial++
		o := DefaultOptions()
		o.Baseline = healthy
		nodes, links := names(Judge(faults, o))
		wrong := slices.ContainsFunc(nodes, func(n string) bool { return n != bad }) ||
			slices.ContainsFunc(links, func(l Link) bool { return !slices.Contains(link, l) })
		if wrong {
			falseNames++
			t.Logf("trial %d: %s ×%.2f, link %v ×%.2f, link sd %.2f, run sd %.2f: named nodes %v, links %v", trial, bad, r, link, r2, sl, sr, nodes, links)
		}
		if !wrong && slices.Contains(nodes, bad) && slices.ContainsFunc(links, func(l Link) bool { return slices.Contains(link, l) }) {
			exact++
		}
	}
	t.Logf("%d rate-limited fabrics with a baseline: a healthy node or link named in %d, named exactly in %d", trials, falseNames, exact)
	assert.LessOrEqual(t, falseNames, trials*25/1000, "false names with a baseline")
	assert.GreaterOrEqual(t, exact, trials*45/100, "rate limits named exactly")
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
