//go:build rdmaslow && linux && cgo

package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/verbs"
)

// slowSpec is the self-check slowdown of this build, "PCT:REGEX" (e.g.
// "25%:^BenchmarkWriteLat/transport=RC/size=8/inline=false$"), set with
//
//	go test -c -tags rdmaslow -ldflags "-X github.com/rdmabench/rdmabench/rdmatest/internal/engine.slowSpec=PCT:REGEX"
//
// (ci/compare.sh SLOW=...). The benchmarks whose full name (b.Name())
// matches REGEX run their ping and stream loops PCT slower (see
// verbs.Loop.SetSlowdown); every other benchmark runs as in a normal
// build. The results carry it in the rdma-selfcheck-slowdown
// configuration line.
var slowSpec string

var parseSlow = sync.OnceValues(func() (slowdownSpec, error) { return parseSlowSpec(slowSpec) })

// slowdown applies this build's self-check slowdown to l when b's name
// matches it.
func slowdown(b testing.TB, l *verbs.Loop) {
	b.Helper()
	s, err := parseSlow()
	if err != nil {
		b.Fatal(err)
	}
	if s.re.MatchString(b.Name()) {
		if err := l.SetSlowdown(s.frac); err != nil {
			b.Fatal(err)
		}
	}
}

// slowConfig is the configuration line that marks a self-check build's
// results.
func slowConfig() [][2]string {
	return [][2]string{{"rdma-selfcheck-slowdown", strings.ReplaceAll(slowSpec, " ", "")}}
}

type slowdownSpec struct {
	frac float64
	re   *regexp.Regexp
}

// parseSlowSpec parses "PCT:REGEX" (PCT in (0%, 1000%]).
func parseSlowSpec(spec string) (slowdownSpec, error) {
	pct, expr, ok := strings.Cut(spec, ":")
	if !ok || expr == "" {
		return slowdownSpec{}, fmt.Errorf("rdmatest: this is the rdmaslow self-check build, and its slowdown %q is not PCT:REGEX (go test -c -tags rdmaslow -ldflags \"-X github.com/rdmabench/rdmabench/rdmatest/internal/engine.slowSpec=25%%:REGEX\")", spec)
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
