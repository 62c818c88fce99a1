package engine

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
	"github.com/rdmabench/rdmabench/rdmatest/internal/turn"
	"github.com/rdmabench/rdmabench/rdmatest/internal/units"
)

// notes keeps, for each *testing.B that Benchmark runs, why it failed or
// was skipped: testing.Benchmark discards a run's messages.
var notes sync.Map // testing.TB → *[]string

func keepNote(tb testing.TB, args []any) {
	if v, ok := notes.Load(tb); ok {
		l := v.(*[]string)
		*l = append(*l, fmt.Sprint(args...))
	}
}

// fatal is tb.Fatal, the message kept for Benchmark.
func fatal(tb testing.TB, args ...any) {
	tb.Helper()
	keepNote(tb, args)
	tb.Fatal(args...)
}

// takeTurn waits for this run's turn under RDMA_TURN (see package turn)
// and fails b when the wait fails.
func takeTurn(b *testing.B) {
	b.Helper()
	if err := turn.Take(b); err != nil {
		fatal(b, err)
	}
}

// skip is tb.Skip, the reason kept for Benchmark.
func skip(tb testing.TB, args ...any) {
	tb.Helper()
	keepNote(tb, args)
	tb.Skip(args...)
}

// BenchmarkOutput is where Benchmark writes its results.
var BenchmarkOutput io.Writer = os.Stderr

var (
	configOnce   sync.Once
	printedMu    sync.Mutex
	printedUnits int // units whose Unit lines Benchmark has written
)

// Benchmark runs f as testing.Benchmark does — for an Example or a
// program of one's own, where `go test -bench` does not run it — and
// writes the result to BenchmarkOutput (standard error) in the benchmark
// format: the configuration lines (once), the Unit lines, and
// "Benchmark<name>-<GOMAXPROCS>" with its metrics, so that benchstat and
// the regression gate read it like `go test -bench` output. A skipped run
// (no device, and none required) writes why and returns a zero result. A
// failed run panics with the reason rdmatest gave; testing.Benchmark
// discards the run's own messages, so a failure of f's own code (b.Fatal)
// is reported without its text. name is a benchmark name without the
// Benchmark prefix and the -N suffix (rdmatest/benchname); -rdma.hlog
// does not apply (testing.Benchmark gives the run no name to file it
// under).
func Benchmark(name string, f func(b *testing.B)) testing.BenchmarkResult {
	var failed, skipped bool
	var msgs []string
	if n, err := benchname.Parse(name); err != nil || n.Procs != 0 {
		panic(fmt.Sprintf("rdmatest: Benchmark(%q): not a benchmark name without the Benchmark prefix and -N suffix, such as Commit/size=4096 (%v)", name, err))
	}
	res := testing.Benchmark(func(b *testing.B) {
		notes.Store(b, &msgs)
		// Registered first, so it runs after every cleanup f registers
		// (the leak check, closing the pair and the device), whose
		// failures count too.
		b.Cleanup(func() {
			failed, skipped = failed || b.Failed(), skipped || b.Skipped()
			notes.Delete(b)
		})
		f(b)
	})
	switch {
	case failed:
		if len(msgs) == 0 {
			msgs = []string{"failed (testing.Benchmark discards the message: run it with go test -bench to see it)"}
		}
		panic(fmt.Sprintf("rdmatest: Benchmark%s: %s", name, strings.Join(msgs, "; ")))
	case skipped || res.N == 0:
		fmt.Fprintf(BenchmarkOutput, "rdmatest: Benchmark%s skipped: %s\n", name, strings.Join(msgs, "; "))
		return res
	}
	printedMu.Lock()
	configOnce.Do(func() {
		PrintConfig(BenchmarkOutput)
		printedUnits = units.Count()
	})
	units.PrintFrom(BenchmarkOutput, printedUnits) // units registered since, by Measure
	printedUnits = units.Count()
	printedMu.Unlock()
	fmt.Fprintf(BenchmarkOutput, "Benchmark%s-%d\t%s\t%s\n", name, runtime.GOMAXPROCS(0), res.String(), res.MemString())
	return res
}

// Fatal is tb.Fatal with the message kept for Benchmark (rdmatest's own
// failures).
func Fatal(tb testing.TB, args ...any) {
	tb.Helper()
	fatal(tb, args...)
}
