package history

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmabench/rdmabench/internal/results"
	"github.com/rdmabench/rdmabench/internal/stats"
)

// EnvLabels are the labels that tell one series' machine from another's:
// results of the same benchmark under other values are other series.
var EnvLabels = []string{"host", "rdma-device", "rdma-provider", "cpu"}

// StepLabels are the labels whose change a series point shows: what
// changed between two runs of one series.
var StepLabels = []string{"commit", "rdma-fw", "kernel", "rdmabench-version"}

// Key names a series.
type Key struct {
	// Name is the benchmark's full name without "Benchmark":
	// "WriteLat/transport=RC/size=8-2".
	Name string
	// Unit is its deciding unit (results.Deciding).
	Unit string
	// Env is the EnvLabels' values, "host=a rdma-device=rxe0 ...".
	Env string
}

func (k Key) String() string { return k.Name + " " + k.Unit + " [" + k.Env + "]" }

// Point is one run in a series: the upload's results of the benchmark
// in the unit (a file of go test -count N has N of them).
type Point struct {
	// Upload is the perfdata upload ID ("20261206.3").
	Upload string
	// RunTime is the run-time label (RFC 3339), else upload-time.
	RunTime string
	// Best is the run's best result (the lowest for a unit better
	// lower, the highest for one better higher): what change points are
	// judged on (go doc ./internal/changepoint says why). Median is the
	// median of its N results.
	Best, Median float64
	N            int
	// Steps are the StepLabels' values of the run.
	Steps map[string]string
}

// Series is one benchmark's deciding unit, run by run in RunTime order
// (then upload order).
type Series struct {
	Key
	// HigherBetter tells the unit's direction: its Unit line's better=,
	// else higher for a rate (a unit ending in /s), lower otherwise.
	HigherBetter bool
	Points       []Point
}

// Bests is the series' value per run: each point's Best, in order.
func (s Series) Bests() []float64 {
	x := make([]float64, len(s.Points))
	for i, p := range s.Points {
		x[i] = p.Best
	}
	return x
}

// Options select what Load builds.
type Options struct {
	// Decide overrides a family's deciding unit ("WriteLat" → "p99-ns").
	Decide map[string]string
}

type run struct {
	upload, runTime string
	steps           map[string]string
	vals            map[string][]float64 // unit → values
}

type bench struct {
	key    Key // Name and Env
	units  []string
	better map[string]bool // unit → higher is better
	runs   map[string]*run // upload → run
}

// Load reads every result of q from s and builds the series, sorted by
// key.
func Load(ctx context.Context, s Store, q string, opt Options) ([]Series, error) {
	it := s.Query(ctx, q)
	defer it.Close()
	benches := map[Key]*bench{}
	for it.Next() {
		r := it.Result()
		if err := add(benches, r.Labels, r.Content); err != nil {
			return nil, err
		}
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("history: query %q: %w", q, err)
	}
	out := make([]Series, 0, len(benches))
	for _, b := range benches {
		out = append(out, b.series(opt))
	}
	slices.SortFunc(out, func(a, b Series) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Env, b.Env))
	})
	return out, nil
}

func envOf(labels map[string]string) string {
	var b strings.Builder
	for _, k := range EnvLabels {
		if v := labels[k]; v != "" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(k + "=" + v)
		}
	}
	return b.String()
}

// add files one result line under its benchmark and upload.
func add(benches map[Key]*bench, labels map[string]string, line string) error {
	f := strings.Fields(line)
	if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
		return fmt.Errorf("history: stored result %q: not a benchmark line", line)
	}
	k := Key{Name: strings.TrimPrefix(f[0], "Benchmark"), Env: envOf(labels)}
	b := benches[k]
	if b == nil {
		b = &bench{key: k, better: directions(labels["rdmabench-units"]), runs: map[string]*run{}}
		benches[k] = b
	}
	up := labels["upload"]
	r := b.runs[up]
	if r == nil {
		r = &run{upload: up, runTime: cmp.Or(labels["run-time"], labels["upload-time"]), vals: map[string][]float64{}, steps: map[string]string{}}
		for _, s := range StepLabels {
			if v := labels[s]; v != "" {
				r.steps[s] = v
			}
		}
		b.runs[up] = r
	}
	for i := 2; i+1 < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil || v != v || v > 1e300 || v < -1e300 {
			continue // NaN ns/op and the like: no measurement
		}
		u := f[i+1]
		if !slices.Contains(b.units, u) {
			b.units = append(b.units, u)
		}
		r.vals[u] = append(r.vals[u], v)
	}
	return nil
}

// directions parses rdmabench-units ("p50-ns=lower msgs/s=higher").
func directions(s string) map[string]bool {
	m := map[string]bool{}
	for _, e := range strings.Fields(s) {
		if u, d, ok := strings.Cut(e, "="); ok {
			m[u] = d == "higher"
		}
	}
	return m
}

func (b *bench) higher(u string) bool {
	if h, ok := b.better[u]; ok {
		return h
	}
	return strings.HasSuffix(u, "/s")
}

func (b *bench) series(opt Options) Series {
	i := results.Deciding(b.key.Name, b.units, func(i int) bool { return b.higher(b.units[i]) }, opt.Decide)
	s := Series{Key: b.key, Points: make([]Point, 0, len(b.runs))}
	if i < 0 {
		return s
	}
	s.Unit, s.HigherBetter = b.units[i], b.higher(b.units[i])
	for _, r := range b.runs {
		if v := r.vals[s.Unit]; len(v) > 0 {
			best := slices.Min(v)
			if s.HigherBetter {
				best = slices.Max(v)
			}
			s.Points = append(s.Points, Point{Upload: r.upload, RunTime: r.runTime, Best: best, Median: stats.Median(v), N: len(v), Steps: maps.Clone(r.steps)})
		}
	}
	slices.SortFunc(s.Points, func(a, b Point) int {
		return cmp.Or(cmp.Compare(a.RunTime, b.RunTime), compareUploads(a.Upload, b.Upload))
	})
	return s
}

// compareUploads orders perfdata upload IDs "day.seq" by day, then seq.
func compareUploads(a, b string) int {
	ad, as, _ := strings.Cut(a, ".")
	bd, bs, _ := strings.Cut(b, ".")
	an, _ := strconv.Atoi(as)
	bn, _ := strconv.Atoi(bs)
	return cmp.Or(cmp.Compare(ad, bd), cmp.Compare(an, bn), cmp.Compare(a, b))
}
