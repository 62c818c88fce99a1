package bench

import (
	"maps"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/rdmatest/scenario"
)

// listedFamily is one benchmark function's default points: its names,
// and its cases when it is a family of run (none for control's).
type listedFamily struct {
	base  string
	names []benchname.Name
	cases []listedCase
}

// listCases lists every family of the matrix (full: the -rdma.full
// sweeps) without a device, as listFamilies does, with the points' specs
// and runner kinds.
func listCases(t *testing.T, full bool) []listedFamily {
	saved := *flagFull
	*flagFull = full
	defer func() { *flagFull, listing, listingCases = saved, nil, nil }()

	var out []listedFamily
	for _, fn := range benchmarks {
		fname := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
		base, ok := strings.CutPrefix(fname[strings.LastIndexByte(fname, '.')+1:], benchname.Prefix)
		require.True(t, ok, fname)
		lf := listedFamily{base: base}
		listing, listingCases = &lf.names, &lf.cases
		fn(nil) // listing: run and control return before using b
		require.NotEmpty(t, lf.names, "%s lists no sub-benchmark", fname)
		require.True(t, lf.cases == nil || len(lf.cases) == len(lf.names), "%s: a case per name", fname)
		out = append(out, lf)
	}
	return out
}

// TestParseMatrix: every point of the matrix (default and -rdma.full)
// of a family whose runner is Latency or Stream parses back, by its
// name, to the spec and runner the matrix measures it with, and its
// canonical name is the matrix's; every other family's names are
// refused as not runnable against a remote peer; scenario.Families is
// exactly the families of the first kind.
func TestParseMatrix(t *testing.T) {
	for _, full := range []bool{false, true} {
		parsed := map[string]bool{}
		for _, lf := range listCases(t, full) {
			if len(lf.cases) == 0 || lf.cases[0].kind == 0 {
				assertRefused(t, lf)
				continue
			}
			parsed[lf.base] = true
			for _, c := range lf.cases {
				c.name.Base = lf.base
				assertRoundTrip(t, c)
			}
		}
		assert.Equal(t, scenario.Families(), slices.Sorted(maps.Keys(parsed)), "full=%v: the families Parse takes", full)
	}
}

// assertRoundTrip checks that Parse reads c's name, as go test prints
// it, back to c.
func assertRoundTrip(t *testing.T, c listedCase) {
	t.Helper()
	printed := c.name
	printed.Procs = 8
	got, err := scenario.Parse(benchname.Prefix + printed.String())
	require.NoError(t, err)
	want := c.spec
	want.Kind = c.kind // the runner's
	assert.Equal(t, want, got.Spec, c.name.String())
	assert.Equal(t, c.name.Base, got.Family)
	assert.Equal(t, c.name.String(), got.String(), "canonical name")
	runner := map[scenario.Kind]scenario.Runner{scenario.KindLatency: scenario.Latency, scenario.KindStream: scenario.Stream}[c.kind]
	assert.Equal(t, reflect.ValueOf(runner).Pointer(), reflect.ValueOf(got.Runner()).Pointer(), "%s: runner of %v", c.name, c.kind)
}

// assertRefused checks that Parse refuses every name of lf, naming the
// family.
func assertRefused(t *testing.T, lf listedFamily) {
	t.Helper()
	for _, n := range lf.names {
		n.Base = lf.base
		_, err := scenario.Parse(n.String())
		if assert.Error(t, err, n.String()) {
			assert.Contains(t, err.Error(), "family "+lf.base+" is not one Parse takes")
		}
	}
}

// TestMatrixAxes: points sets every axis of scenario.Axes and no other
// key.
func TestMatrixAxes(t *testing.T) {
	var keys []string
	for _, a := range scenario.Axes() {
		keys = append(keys, a.Key)
	}
	assert.ElementsMatch(t, keys, slices.Collect(maps.Keys(setters(axes{}))))
}
