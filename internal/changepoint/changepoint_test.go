package changepoint

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seed draws the test's seed and prints it, for a replay.
func seed(t *testing.T) uint64 {
	s := uint64(time.Now().UnixNano())
	t.Logf("seed %d", s)
	return s
}

// noisy is n runs of level lvl with lognormal noise of relative spread sd.
func noisy(r *rand.Rand, n int, lvl, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = lvl * math.Exp(sd*r.NormFloat64())
	}
	return x
}

// TestStepFound: a 40% step in lognormal noise of 1–4% is found within
// 5 runs, at its run, with about its size, at least 95% of the time
// (the rest: a false alarm just before the step took the baseline).
func TestStepFound(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	found, drawn := 0, 0
	for range 300 {
		n := 40 + r.IntN(40)
		step := Default.MinBaseline + 5 + r.IntN(n-Default.MinBaseline-Default.Lookback-5)
		sd := 0.01 + 0.03*r.Float64()
		x := noisy(r, n, 1000*(1+r.Float64()), sd)
		higher := r.IntN(2) == 0
		for i := step; i < n; i++ {
			if higher {
				x[i] /= 1.4 // a rate 40% slower
			} else {
				x[i] *= 1.4
			}
		}
		want := map[bool]float64{false: 0.4, true: 1/1.4 - 1}[higher]
		drawn++
		for _, c := range Detect(x, higher, Default).Changes {
			if c.At >= step-2 && c.At <= step+2 && c.Worse && c.Confirmed <= step+Default.Lookback-1 && math.Abs(c.Shift-want) < 0.35*math.Abs(want) {
				found++
				break
			}
		}
	}
	t.Logf("40%% steps found within 5 runs: %d of %d", found, drawn)
	assert.GreaterOrEqual(t, float64(found), 0.95*float64(drawn))
}

func TestNoStepNoAlarm(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 2))
	alarms, runs := 0, 0
	for range 200 {
		n := 100
		x := noisy(r, n, 500, 0.02+0.05*r.Float64())
		// and a lone outlier, which a rank test shrugs off
		x[20+r.IntN(70)] *= 3
		alarms += len(Detect(x, r.IntN(2) == 0, Default).Changes)
		runs += n
	}
	t.Logf("%d alarms in %d runs without a step", alarms, runs)
	assert.LessOrEqual(t, float64(alarms)/float64(runs), 0.01, "at most 1 false alarm per 100 runs")
}

// TestTooNoisy: of series with 80% lognormal noise nearly all end too
// noisy to judge (a last baseline of 20 runs can, rarely, look calmer:
// 0.5% of 20,000 draws did), none of series with 2% noise does, and no
// change point is ever taken on a baseline noisier than MaxNoise.
func TestTooNoisy(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 3))
	const n = 200
	noisyN, calm := 0, 0
	for range n {
		res := Detect(noisy(r, 60, 100, 0.8), false, Default)
		if res.TooNoisy {
			noisyN++
			assert.Greater(t, res.Noise, Default.MaxNoise)
		}
		for _, ch := range res.Changes {
			assert.LessOrEqual(t, ch.Noise, Default.MaxNoise, "a change point taken on a baseline too noisy to judge")
		}
		if Detect(noisy(r, 60, 100, 0.02), false, Default).TooNoisy {
			calm++
		}
	}
	t.Logf("80%% noise: %d of %d too noisy; 2%% noise: %d", noisyN, n, calm)
	assert.GreaterOrEqual(t, noisyN, n*95/100)
	assert.Zero(t, calm)
}

// TestTooSlow: a series whose runs land in a slow phase (1.3–2× its
// fast level) 60% of the time cannot confirm a step within Lookback
// runs by a streak, and says so (or that it is too noisy); one slow 5%
// of the time can.
func TestTooSlow(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 4))
	phases := func(share float64) []float64 {
		x := noisy(r, 60, 100, 0.01)
		for i := range x {
			if r.Float64() < share {
				x[i] *= 1.3 + 0.7*r.Float64()
			}
		}
		return x
	}
	often, rare := 0, 0
	const n = 200
	for range n {
		if res := Detect(phases(0.6), false, Default); res.TooSlow || res.TooNoisy {
			often++
		}
		if res := Detect(phases(0.05), false, Default); res.TooSlow || res.TooNoisy {
			rare++
		}
	}
	t.Logf("not judgeable: %d of %d series slow 60%% of the time, %d of %d slow 5%%", often, n, rare, n)
	assert.GreaterOrEqual(t, often, n*8/10, "slow 60%% of the time: too often slow (or too noisy)")
	assert.LessOrEqual(t, rare, n/20, "slow 5%% of the time: judgeable")
}

func TestShortAndFlat(t *testing.T) {
	assert.Empty(t, Detect(nil, false, Default).Changes)
	assert.Empty(t, Detect([]float64{1, 2}, false, Default).Changes)
	flat := make([]float64, 30)
	for i := range flat {
		flat[i] = 7
	}
	assert.Empty(t, Detect(flat, false, Default).Changes)
}

func TestValidate(t *testing.T) {
	require.NoError(t, Default.Validate())
	for _, bad := range []func(*Config){
		func(c *Config) { c.MinBaseline = 2 },
		func(c *Config) { c.Window = c.MinBaseline - 1 },
		func(c *Config) { c.Confirm = 0 },
		func(c *Config) { c.Lookback = c.Confirm - 1 },
		func(c *Config) { c.Alpha = 1 },
		func(c *Config) { c.MaxNoise = 0 },
		func(c *Config) { c.MinShift = math.NaN() },
	} {
		c := Default
		bad(&c)
		assert.Error(t, c.Validate(), "%+v", c)
	}
}

// phases is n runs as qemu TCG gives them: each run's best result in a
// fast phase (tight) or, with chance slow, a slow one 1.3–2× higher.
func phases(r *rand.Rand, n int, lvl, slow float64) []float64 {
	x := noisy(r, n, lvl, 0.015)
	for i := range x {
		if r.Float64() < slow {
			x[i] *= 1.3 + 0.7*r.Float64()
		}
	}
	return x
}

func TestPhases(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 4))
	found, drawn, alarms, runs := 0, 0, 0, 0
	for range 300 {
		slow := 0.3 * r.Float64()
		x := phases(r, 80, 20000, slow)
		alarms += len(Detect(x, false, Default).Changes)
		runs += len(x)
		at := 15 + r.IntN(60)
		y := slices.Clone(x[:at+5])
		for i := at; i < len(y); i++ {
			y[i] *= 1.25
		}
		drawn++
		for _, c := range Detect(y, false, Default).Changes {
			if c.Worse && c.At >= at-2 && c.At <= at+2 {
				found++
				break
			}
		}
	}
	t.Logf("phases: 25%% steps found within 5 runs %d of %d; %d false alarms in %d runs", found, drawn, alarms, runs)
	assert.GreaterOrEqual(t, float64(found), 0.9*float64(drawn))
	assert.LessOrEqual(t, float64(alarms), float64(runs)/100)
}

func TestDeadLink(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 5))
	x := noisy(r, 30, 50, 0.02) // MB/s
	for i := 20; i < len(x); i++ {
		x[i] = 0
	}
	res := Detect(x, true, Default)
	require.NotEmpty(t, res.Changes)
	c := res.Changes[0]
	assert.Equal(t, 20, c.At)
	assert.True(t, c.Worse)
	assert.Equal(t, -1.0, c.Shift)
}
