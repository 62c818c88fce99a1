package bench

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

var update = flag.Bool("update", false, "rewrite testdata/names.txt from the default matrix")

// benchmarks are the package's benchmark functions in the order go test
// runs them (files by name, functions as declared), for listing the
// matrix without a device; TestMatrixNames fails when one is missing or
// out of order.
var benchmarks = []func(*testing.B){
	// atc16_test.go
	BenchmarkDoorbellWrite, BenchmarkDoorbellRead, BenchmarkDoorbellSend, BenchmarkThreads,
	BenchmarkInboundSend, BenchmarkInboundWrite, BenchmarkHeaderOnly, BenchmarkEchoRPC,
	BenchmarkAtomicContention, BenchmarkReadWindow,
	// control_test.go
	BenchmarkRegMR, BenchmarkConnect, BenchmarkCreateQueue,
	// load_test.go
	BenchmarkSendLoad, BenchmarkWriteLoad,
	// perftest_test.go
	BenchmarkSendLat, BenchmarkWriteLat, BenchmarkWriteLatGap, BenchmarkWriteLatMTU, BenchmarkReadLat, BenchmarkAtomicLat,
	BenchmarkSendBW, BenchmarkWriteBW, BenchmarkReadBW, BenchmarkAtomicBW,
}

// listFamilies returns the names of every point of every family, in the
// order go test runs them, as they are without -short, -rdma.sizes and
// -rdma.qd; full chooses the -rdma.full sweeps. Procs is 0: go test
// adds the -GOMAXPROCS suffix when it prints a result.
func listFamilies(t *testing.T, full bool) []benchname.Name {
	saved := *flagFull
	*flagFull = full
	var names []benchname.Name
	listing = &names
	defer func() { *flagFull, listing = saved, nil }()

	var all []benchname.Name
	for _, fn := range benchmarks {
		fname := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name() // …/bench_test.BenchmarkSendLat
		base, ok := strings.CutPrefix(fname[strings.LastIndexByte(fname, '.')+1:], benchname.Prefix)
		require.True(t, ok, fname)
		names = nil
		fn(nil) // listing: run and control return before using b
		require.NotEmpty(t, names, "%s lists no sub-benchmark", fname)
		for _, n := range names {
			n.Base = base
			all = append(all, n)
		}
	}
	return all
}

// TestMatrixNames checks the names of the benchmark matrix without a
// device:
//
//   - testdata/names.txt is the default matrix's names (go test -bench's
//     names without "Benchmark" and -GOMAXPROCS), so that other packages
//     can check the names they refer to (ci/calibrate's
//     TestScenariosInMatrix) although this package is test-only and
//     cannot be imported. The file is derived from the declarations,
//     never written by hand: this test fails whenever the two differ
//     (go test ./bench_test -run TestMatrixNames -update rewrites it), so
//     it cannot drift, and a diff of it shows every renamed benchmark.
//   - every variant of a family declares the same axes: all its names
//     have the same keys in the same order, so that their columns line
//     up in benchstat (default and -rdma.full matrices);
//   - names are unique (go test would add "#01" to a repeated one) and
//     parse back to themselves;
//   - benchmarks lists every benchmark function of the package, in the
//     order go test runs them (the order of names.txt).
func TestMatrixNames(t *testing.T) {
	declared := benchmarkFuncs(t)
	var listed []string
	for _, fn := range benchmarks {
		fname := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
		listed = append(listed, fname[strings.LastIndexByte(fname, '.')+1:])
	}
	assert.Equal(t, declared, listed, "benchmarks must list every benchmark function, in go test's order")

	for _, full := range []bool{false, true} {
		names := listFamilies(t, full)
		keys := map[string][]string{} // base → keys of its first name
		seen := map[string]bool{}
		for _, n := range names {
			s := n.String()
			assert.False(t, seen[s], "full=%v: %s twice", full, s)
			seen[s] = true
			back, err := benchname.Parse(benchname.Prefix + s)
			if assert.NoError(t, err) {
				assert.Equal(t, n, back, "Parse(String())")
			}
			if first, ok := keys[n.Base]; !ok {
				keys[n.Base] = n.Keys()
			} else {
				assert.Equal(t, first, n.Keys(), "full=%v: %s: every variant of %s must declare the same axes", full, s, n.Base)
			}
		}
		if full {
			continue
		}
		var b strings.Builder
		for _, n := range names {
			b.WriteString(n.String() + "\n")
		}
		const golden = "testdata/names.txt"
		if *update {
			require.NoError(t, os.WriteFile(golden, []byte(b.String()), 0o644))
		}
		want, err := os.ReadFile(golden)
		require.NoError(t, err)
		assert.Equal(t, string(want), b.String(), "%s is not the default matrix: check the change, then rewrite it with -update", golden)
	}
}

// benchmarkFuncs lists the benchmark functions declared in the package's
// files, in the order go test runs them.
func benchmarkFuncs(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	var out []string
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, benchname.Prefix) {
				out = append(out, fd.Name.Name)
			}
		}
	}
	return out
}

// TestMainRefusesBadFlags: a bad matrix flag, -rdma.* flag or
// environment value ends the test binary with status 2 and the value
// before any benchmark runs (this binary, run again as a child).
func TestMainRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"-rdma.sizes=0,64"}, "", `message size "0" is out of range`},
		{[]string{"-rdma.qd=-3"}, "", `-rdma.qd "-3"`},
		{nil, "RDMA_FULL=yes", `RDMA_FULL="yes" is not a boolean`},
		{[]string{"-rdma.timeout=-1s"}, "", "-rdma.timeout -1s is out of range"},
		{nil, "RDMA_REQUIRE=yes", `RDMA_REQUIRE="yes" is not a boolean`},
		{[]string{"-rdma.hlog=" + filepath.Join(os.Args[0], "hlogs")}, "", `-rdma.hlog "` + filepath.Join(os.Args[0], "hlogs")},
	} {
		cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "-test.bench=WriteLat"}, tc.args...)...)
		cmd.Env = os.Environ()
		if tc.env != "" {
			cmd.Env = append(cmd.Env, tc.env)
		}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%v %s: %s", tc.args, tc.env, out)
		assert.Equal(t, 2, ee.ExitCode(), "%v %s", tc.args, tc.env)
		assert.Contains(t, string(out), tc.want)
		assert.NotContains(t, string(out), "Benchmark", "nothing ran")
	}
}
