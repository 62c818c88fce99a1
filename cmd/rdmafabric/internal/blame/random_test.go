package blame

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestJudgeRandomFaults draws fabrics nobody picked: 4 to 16 nodes, one
// bad node slowed on what it sends, on what it receives or both, and
// half the time a bad link between two other nodes, one way or both.
// Judge must name exactly the node, in the drawn directions, and the
// link. Two settings: the defaults with faults 2–10× and noise ±1–3%,
// and CI's -min-drop 0.7 with faults 4–12× and noise ±10% (there a
// score over both directions of a node left a one-way fault unnamed).
// The seed is printed: to replay a failure, put it in place of the
// clock's.
func TestJudgeRandomFaults(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 44))
	for _, set := range []struct {
		name             string
		o                Options
		fLo, fHi         float64 // the bad node's and link's factor
		noiseLo, noiseHi float64
	}{
		{"defaults", Options{}, 0.1, 0.5, 0.01, 0.03},
		{"ci", Options{MinDrop: 0.7}, 0.08, 0.25, 0.1, 0.1},
	} {
		t.Run(set.name, func(t *testing.T) { randomFaults(t, rng, set.o, set.fLo, set.fHi, set.noiseLo, set.noiseHi) })
	}
}

// randomFaults runs 200 drawn fabrics through Judge with o.
func randomFaults(t *testing.T, rng *rand.Rand, o Options, fLo, fHi, noiseLo, noiseHi float64) {
	for trial := range 200 {
		n := 4 + rng.IntN(13)
		bad := nodeName(rng.IntN(n))
		dirs := [][]string{{"sending"}, {"receiving"}, {"sending", "receiving"}}[rng.IntN(3)]
		f := fLo + (fHi-fLo)*rng.Float64()
		s := synth{nodes: n, noise: noiseLo + (noiseHi-noiseLo)*rng.Float64(), seed: rng.Uint64(), factor: map[Link]float64{}}
		for _, l := range allPairs(n) {
			if (l.Src == bad && slices.Contains(dirs, "sending")) || (l.Dst == bad && slices.Contains(dirs, "receiving")) {
				s.factor[l] = f
			}
		}
		var link []Link
		if rng.IntN(2) == 0 {
			var others []string
			for i := range n {
				if nodeName(i) != bad {
					others = append(others, nodeName(i))
				}
			}
			p := rng.Perm(len(others))
			a, b := others[p[0]], others[p[1]]
			lf := fLo + (fHi-fLo)*rng.Float64()
			link = []Link{{a, b}}
			if rng.IntN(2) == 0 {
				link = append(link, Link{b, a})
			}
			for _, l := range link {
				s.factor[l] = lf
			}
		}
		what := fmt.Sprintf("trial %d: %d nodes, %s slow ×%.2f %v, link %v", trial, n, bad, f, dirs, link)
		rep := Judge(s.fabric(t), o)
		nodes, links := names(rep)
		if !assert.Equal(t, []string{bad}, nodes, what) {
			continue
		}
		var got []string
		for _, fd := range rep.Nodes[0].Findings {
			if !slices.Contains(got, fd.Direction) {
				got = append(got, fd.Direction)
			}
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(dirs))
		assert.Equal(t, want, got, what)
		slices.SortFunc(links, compareLinks)
		slices.SortFunc(link, compareLinks)
		assert.Equal(t, link, links, what)
	}
}
