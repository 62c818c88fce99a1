//go:build rdmaslow && linux && cgo

package engine

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/internal/hist"
	"github.com/rdmabench/rdmabench/verbs"
)

// SlowEnv names the environment variable that holds this build's
// self-check slowdown, "PCT:REGEX" (e.g.
// "25%:^BenchmarkWriteLat/transport=RC/size=8/inline=false$"), read at
// run time: the benchmarks whose full name (b.Name()) matches REGEX have
// their ping and stream loops' results PCT worse (see
// verbs.Loop.SetSlowdown); every other benchmark, and every benchmark of
// a process without the variable, runs as in a normal build. So one
// binary, built with
//
//	go test -c -tags rdmaslow ./bench_test
//
// serves both sides of a self-check (ci/compare.sh SLOW=..., which sets
// the variable for NEW's processes only), and the draw of the slowed
// benchmarks can be made after the benchmarks are listed. The results
// carry the spec in the rdma-selfcheck-slowdown configuration line.
const SlowEnv = "RDMA_SELFCHECK_SLOW"

var slowSpec = os.Getenv(SlowEnv)

var parseSlow = sync.OnceValues(func() (slowdownSpec, error) { return parseSlowSpec(slowSpec) })

// slowdown applies this build's self-check slowdown to l when b's name
// matches it.
func slowdown(b testing.TB, l *verbs.Loop) {
	b.Helper()
	s, err := parseSlow()
	if err != nil {
		b.Fatal(err)
	}
	if s.re != nil && s.re.MatchString(b.Name()) {
		if err := l.SetSlowdown(s.frac); err != nil {
			b.Fatal(err)
		}
	}
}

// slowCounts returns l's histogram counts with every sample times its
// slowdown's factor (verbs.Loop.SetSlowdown).
func slowCounts(l *verbs.Loop, counts []int64) []int64 {
	if f := l.Slowdown(); f > 0 {
		return hist.ScaleCounts(counts, 1+f)
	}
	return counts
}

// slowConfig is the configuration line that marks a self-check build's
// results.
func slowConfig() [][2]string {
	if slowSpec == "" {
		return nil
	}
	return [][2]string{{"rdma-selfcheck-slowdown", strings.ReplaceAll(slowSpec, " ", "")}}
}

type slowdownSpec struct {
	frac float64
	re   *regexp.Regexp
}

// parseSlowSpec parses "PCT:REGEX" (PCT in (0%, 1000%]); "" is no
// slowdown.
func parseSlowSpec(spec string) (slowdownSpec, error) {
	if spec == "" {
		return slowdownSpec{}, nil
	}
	pct, expr, ok := strings.Cut(spec, ":")
	if !ok || expr == "" {
		return slowdownSpec{}, fmt.Errorf("rdmatest: this is the rdmaslow self-check build, and its slowdown %q is not PCT:REGEX (%s=25%%:REGEX)", spec, SlowEnv)
	}
	v, err := strconv.ParseFloat(strings.TrimSuffix(pct, "%"), 64)
	if err != nil || !(v > 0 && v <= 1000) {
		return slowdownSpec{}, fmt.Errorf("rdmatest: self-check slowdown %q: want a percentage in (0, 1000]", pct)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return slowdownSpec{}, fmt.Errorf("rdmatest: self-check slowdown regexp %q: %w", expr, err)
	}
	return slowdownSpec{frac: v / 100, re: re}, nil
}
