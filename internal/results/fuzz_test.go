package results

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// FuzzRead checks that any input reads without panicking, strict or
// not, and that what it yields is well formed: results at ascending
// lines with finite values in named units, notes that name their line,
// configuration keys as benchfmt reads them. Seeds are the tools' result
// files cut to 2000 bytes.
func FuzzRead(f *testing.F) {
	for _, name := range []string{
		"../../ci/gate/testdata/base.txt",
		"../../ci/gate/testdata/fabric-link.txt",
		"../../cmd/rdmaplot/testdata/load.txt",
		"../../cmd/rdmasummary/testdata/results.txt",
	} {
		data, err := os.ReadFile(filepath.FromSlash(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 2000)], false)
	}
	f.Add([]byte("Unit x better=higher\nk: v\nBenchmarkX-2 1 NaN ns/op 3 MB/s -Inf x\nBenchmarkX 1 xx ns/op\nk:\n"), true)
	f.Add([]byte("fabric.node.a.mtu: 1\r\nBenchmarkFabric/src=a/dst=b 1 1e308 MB/s\nfabric.node.a.counter.x: 2"), false)
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		rd := NewReader(bytes.NewReader(data), "fuzz")
		if strict {
			rd.Strict()
		}
		last := 0
		for rd.Scan() {
			res := rd.Result()
			file, line := res.Pos()
			if file != "fuzz" || line <= last {
				t.Fatalf("result %q at %s:%d after line %d", res.Name, file, line, last)
			}
			last = line
			for _, v := range res.Values {
				if v.Unit == "" || v.Tidy == "" || math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
					t.Fatalf("line %d: bad value %+v", line, v)
				}
			}
		}
		for _, s := range rd.Skipped() {
			if !strings.HasPrefix(s, "fuzz:") {
				t.Fatalf("note without its line: %q", s)
			}
		}
		for k, v := range rd.FinalConfig() {
			if r := []rune(k)[0]; !unicode.IsLower(r) || strings.ContainsFunc(k, unicode.IsSpace) || v == "" {
				t.Fatalf("configuration %q: %q", k, v)
			}
		}
	})
}
