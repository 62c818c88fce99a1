package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/changepoint"
	"github.com/rdmabench/rdmabench/internal/history"
)

// runCmd runs rdmahistory with args: exit status, stdout, stderr.
func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	rc := run(args, &out, &errb)
	return rc, out.String(), errb.String()
}

// writeRun writes one run's results file: WriteLat at lat ns.
func writeRun(t *testing.T, dir string, i int, lat float64) string {
	f := filepath.Join(dir, fmt.Sprintf("bench-%02d.txt", i))
	body := fmt.Sprintf("rdma-device: rxe0\nrdma-fw: %d\nrun: %d\nUnit p50-ns better=lower\n", i/10, i)
	for c := range 3 {
		body += fmt.Sprintf("BenchmarkWriteLat/transport=RC/size=8-2 1000 %.0f ns/op %.0f p50-ns\n", lat+1000, lat+float64(c)*50)
	}
	require.NoError(t, os.WriteFile(f, []byte(body), 0o644))
	return f
}

func TestStoreAndReport(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "h.db")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + ln.Addr().String()
	ln.Close()

	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20 {
		lat := 11000.0
		if i >= 16 {
			lat = 14000 // 27% worse from run 17 on
		}
		f := writeRun(t, dir, i, lat)
		args := []string{"store", "-db", db, "-commit", fmt.Sprint("c", i), "-run-time", t0.Add(time.Duration(i) * time.Hour).Format(time.RFC3339)}
		if i == 0 {
			args = append(args, "-server", refused, "-timeout", "2s")
		}
		rc, out, errs := runCmd(append(args, f)...)
		require.Equal(t, 0, rc, "a server that refuses does not fail the store: %s", errs)
		assert.Contains(t, out, "stored in "+db)
		if i == 0 {
			assert.Contains(t, errs, "WARNING")
			assert.Contains(t, errs, refused, "the warning names the server")
			rc, out, _ := runCmd("store", "-db", db, f)
			assert.Equal(t, 0, rc)
			assert.Contains(t, out, "already", "a stored file is not stored twice")
		}
	}
	page := filepath.Join(dir, "trend.html")
	rc, out, errs := runCmd("-db", db, "-html", page)
	assert.Equal(t, 1, rc, "a new 27%% step fails: %s%s", out, errs)
	assert.Contains(t, out, "REGRESSION")
	assert.Contains(t, out, "run 17")
	assert.Contains(t, out, "commit c15 → c16")
	assert.FileExists(t, page)

	rc, out, _ = runCmd("report", "-db", db, "-threshold", "30%")
	assert.Equal(t, 0, rc, "a 27%% step is below a 30%% threshold: %s", out)
	rc, _, _ = runCmd("report", "-db", db, "-last", "2")
	assert.Equal(t, 0, rc, "the step is older than the last 2 runs")
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	f := writeRun(t, dir, 0, 1000)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"store"}, "no result files"},
		{[]string{"store", "-timeout", "0s", f}, "-timeout 0s: want 1s..10m"},
		{[]string{"store", "-run-time", "yesterday", f}, `-run-time "yesterday"`},
		{[]string{"store", "-label", "nokey", f}, `"nokey": want key=value`},
		{[]string{"store", "-db", filepath.Join(dir, "h.db"), "-label", "Bad=x", f}, `label key "Bad"`},
		{[]string{"store", "-db", filepath.Join(dir, "h.db"), filepath.Join(dir, "missing.txt")}, "missing.txt"},
		{[]string{"-db", filepath.Join(dir, "none.db")}, "no local store"},
		{[]string{"-threshold", "0"}, `"0": want a fraction above 0`},
		{[]string{"-threshold", "ten"}, `"ten"`},
		{[]string{"-last", "0"}, "-last 0: want 1..1000"},
		{[]string{"-decide", "SendLat"}, `"SendLat": want Family=unit`},
		{[]string{"report", "extra"}, `unexpected argument "extra"`},
	} {
		rc, _, errs := runCmd(tc.args...)
		assert.Equal(t, 2, rc, "%v", tc.args)
		assert.Contains(t, errs, tc.want, "%v", tc.args)
	}
	_, err := os.Stat(filepath.Join(dir, "none.db"))
	assert.True(t, os.IsNotExist(err), "report does not make a store it cannot find")
}

// TestVerdict: each state of a series has its own words, and a series
// that could not have confirmed a step does not read "no change".
func TestVerdict(t *testing.T) {
	pts := make([]history.Point, 20)
	for _, tc := range []struct {
		j    judged
		want string
	}{
		{judged{Series: history.Series{Points: pts}}, "no change"},
		{judged{Series: history.Series{Points: pts[:5]}}, "too few runs to judge (5 of 13)"},
		{judged{Series: history.Series{Points: pts}, Result: changepoint.Result{TooNoisy: true, Noise: 0.2}}, "too noisy (spread 20%)"},
		{judged{Series: history.Series{Points: pts}, Result: changepoint.Result{TooSlow: true, Slow: 0.45}}, "no change seen, but too often slow to confirm one within 5 runs (45% of runs beyond the bar)"},
		{judged{Series: history.Series{Points: pts}, Result: changepoint.Result{Changes: make([]changepoint.Change, 2), TooSlow: true}}, "2 change points"},
		{judged{Series: history.Series{Points: pts}, New: make([]changepoint.Change, 1)}, "REGRESSION"},
	} {
		assert.Equal(t, tc.want, tc.j.verdict())
	}
}
