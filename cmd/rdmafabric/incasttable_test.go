package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/stats"
)

var updateIncast = flag.Bool("update", false, "render docs/fabric.md's table of real incast runs again")

const (
	incastBegin = "<!-- begin: real incast runs (rendered from every cmd/rdmafabric/testdata/incast-*.txt by go test ./cmd/rdmafabric -run TestIncastTable -update; do not edit) -->\n"
	incastEnd   = "<!-- end: real incast runs -->\n"
)

// TestIncastTable: docs/fabric.md's table of real incast runs is
// rendered from every stored stream, never picked or edited; its last
// column is ci/fabric's check (victim p99 above 2× idle), which a run
// can fail, on the cases whose victim ran inside the incast (median
// overlap at least 0.9, incast-report's -min-overlap default).
func TestIncastTable(t *testing.T) {
	doc := filepath.Join("..", "..", "docs", "fabric.md")
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	i, j := strings.Index(string(b), incastBegin), strings.Index(string(b), incastEnd)
	require.True(t, i >= 0 && j > i, "%s: no %q … %q", doc, incastBegin, incastEnd)
	files, err := filepath.Glob(filepath.Join("testdata", "incast-*.txt"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var w strings.Builder
	w.WriteString("| stored run | receiver | N | runs | MB/s | jain | FCT p50 s | skew ms | victim p99 idle → incast ms | ×idle | overlap | p99 > 2× idle |\n")
	w.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		cases, _, err := readIncast(data)
		require.NoError(t, err, f)
		for _, c := range cases {
			x, ov := stats.Median(c.vals["victim-p99-x"]), stats.Median(c.vals["victim-overlap"])
			verdict := "FAIL"
			switch {
			case ov < 0.9:
				verdict = fmt.Sprintf("not judged: overlap %.2f < 0.90", ov)
			case x > 2:
				verdict = "PASS"
			}
			fmt.Fprintf(&w, "| %s | %s | %d | %d | %.2f | %.3f | %.1f | %.0f | %.1f → %.1f | %.1f | %.2f | %s |\n",
				strings.TrimSuffix(filepath.Base(f), ".txt"), c.dst, c.n, len(c.vals["jain"]), stats.Median(c.vals["MB/s"]), stats.Median(c.vals["jain"]),
				stats.Median(c.vals["fct-p50-ns"])/1e9, stats.Median(c.vals["sender-skew-ns"])/1e6, stats.Median(c.idle["p99-ns"])/1e6, stats.Median(c.load["p99-ns"])/1e6,
				x, stats.Median(c.vals["victim-overlap"]), verdict)
		}
	}
	want := w.String()
	if *updateIncast {
		out := string(b[:i+len(incastBegin)]) + want + string(b[j:])
		require.NoError(t, os.WriteFile(doc, []byte(out), 0o644))
		return
	}
	assert.Equal(t, want, string(b[i+len(incastBegin):j]), "docs/fabric.md's incast table is stale: go test ./cmd/rdmafabric -run TestIncastTable -update")
}
