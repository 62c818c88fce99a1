package blame

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// poisson draws a Poisson count of mean lambda (Knuth's method; lambda
// small here).
func poisson(r *rand.Rand, lambda float64) int {
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// errStream renders n nodes' every ordered pair, runs runs of 100
// iterations of a 64 KiB WRITE stream at healthy timing (±5%), with
// Poisson retries of mean base a run, times mult on the links of bad
// (every link it is an end of) and on both directions of the link bad
// names.
func errStream(r *rand.Rand, n, runs int, base, mult float64, badNode string, badLink Link) string {
	var b strings.Builder
	b.WriteString("pkg: x\nUnit completer_retry_err/run better=lower\n")
	for k := range runs {
		_ = k
		for _, l := range allPairs(n) {
			lambda := base
			if l.Src == badNode || l.Dst == badNode || l == badLink || l == (Link{badLink.Dst, badLink.Src}) {
				lambda *= mult
			}
			mbps := bwBase * (1 + 0.05*(2*r.Float64()-1))
			fmt.Fprintf(&b, "BenchmarkFabric/src=%s/dst=%s/%s\t100\t%.0f ns/op\t%.2f MB/s", l.Src, l.Dst, bwName, 1e9*msgBytes/(mbps*1e6), mbps)
			if c := poisson(r, lambda); c > 0 {
				fmt.Fprintf(&b, "\t%d completer_retry_err/run", c)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// TestErrorRate draws fabrics (seed printed) whose timing is healthy
// and whose retries are Poisson: healthy ones must name nothing; with
// one node's links and one other link erring 20× as often, the report
// names exactly that node, on both sides, and that link, by error rate.
func TestErrorRate(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	falseNames := 0
	const draws = 200
	for range draws {
		n := 4 + r.IntN(5)
		base := []float64{0.2, 2, 10}[r.IntN(3)]
		f, err := Read(strings.NewReader(errStream(r, n, 2+r.IntN(2), base, 1, "", Link{})))
		require.NoError(t, err)
		rep := Judge(f, DefaultOptions())
		falseNames += len(rep.Nodes) + len(rep.Links)
	}
	assert.LessOrEqual(t, falseNames, 2, "false names in %d healthy fabrics", draws)

	for range 100 {
		n := 4 + r.IntN(5)
		base := []float64{5, 10, 20}[r.IntN(3)]
		bad := nodeName(r.IntN(n))
		var link Link
		for link.Src == "" || link.Src == bad || link.Dst == bad || link.Src == link.Dst {
			link = Link{nodeName(r.IntN(n)), nodeName(r.IntN(n))}
		}
		f, err := Read(strings.NewReader(errStream(r, n, 2, base, 20, bad, link)))
		require.NoError(t, err)
		rep := Judge(f, DefaultOptions())
		nodes, links := names(rep)
		require.Equal(t, []string{bad}, nodes, "n=%d base %g bad %s link %s", n, base, bad, link)
		for _, l := range links {
			assert.Contains(t, []Link{link, {link.Dst, link.Src}}, l)
		}
		require.NotEmpty(t, links, "n=%d base %g link %s", n, base, link)
		dirs := map[string]bool{}
		for _, fd := range rep.Nodes[0].Findings {
			assert.Equal(t, CodeErrorRate, fd.Code)
			dirs[fd.Direction] = true
		}
		assert.True(t, dirs["sending"] && dirs["receiving"], "a node erring on all its links errs both ways: %v", dirs)
		assert.Equal(t, CodeErrorRate, rep.Links[0].Code)
		assert.Contains(t, rep.Links[0].Findings[0].Text(), "errors/op")
	}
}

func TestCounterUnit(t *testing.T) {
	for unit, want := range map[string]bool{
		"completer_retry_err/run": true, "duplicate_request/run": true, "preempted/run": false,
		"sent_pkts/run": false, "MB/s": false, "/run": false,
	} {
		assert.Equal(t, want, counterUnit(unit), unit)
	}
}
