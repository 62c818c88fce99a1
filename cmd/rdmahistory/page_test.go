package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/internal/changepoint"
)

var pageShot = flag.String("page.shot", "", "TestTrendPageChromium: also write the screenshot here (docs/img/history-trend.png)")

// chromium finds Debian's headless browser. Under CI or
// RDMAHISTORY_CHROMIUM=1 (make test) a missing one fails the test: make
// deps installs it with make test's packages.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" || os.Getenv("RDMAHISTORY_CHROMIUM") == "1" {
		t.Fatal("no chromium on PATH: make deps installs Debian's chromium for make test (ci/deps)")
	}
	t.Skip("no chromium on PATH (make deps DEPS_VM=-vm installs it)")
	return ""
}

// browse runs headless Chromium on the page: the DOM after the scripts
// ran, and a screenshot (PNG) when shot is set.
func browse(t *testing.T, bin, page, shot string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--window-size=1400,1800", "--hide-scrollbars"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if shot != "" {
		args = append(args, "--screenshot="+shot)
	} else {
		args = append(args, "--dump-dom")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	require.False(t, errors.Is(ctx.Err(), context.DeadlineExceeded), "chromium did not finish in 90 s: %s", errb.String())
	require.NoError(t, err, "chromium: %s", errb.String())
	return out.String()
}

var bodyRE = regexp.MustCompile(`<body data-charts="(\d+)" data-heatmaps="(\d+)" data-errors="(\d+)"`)

// pageState reads what the page's script left on <body>.
func pageState(t *testing.T, dom string) (charts, heatmaps, errs int) {
	m := bodyRE.FindStringSubmatch(dom)
	require.NotNil(t, m, "no <body data-…> in the DOM Chromium dumped")
	charts, _ = strconv.Atoi(m[1])
	heatmaps, _ = strconv.Atoi(m[2])
	errs, _ = strconv.Atoi(m[3])
	return
}

// TestTrendPageChromium renders the trend page of the stored real series
// and loads it in headless Chromium: no script error, one chart per
// series, a heatmap per family, and a screenshot that is not blank. A
// page whose script breaks must fail the same check.
func TestTrendPageChromium(t *testing.T) {
	bin := chromium(t)
	var js []judged
	for _, series := range realRuns(t) {
		js = append(js, judge(series, changepoint.Default, changepoint.Default.Lookback, 0.1)...)
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "trend.html")
	require.NoError(t, writePage(page, js, "testdata"))

	charts, heatmaps, errs := pageState(t, browse(t, bin, page, ""))
	assert.Zero(t, errs, "script errors on the page")
	assert.Equal(t, len(js), charts, "one chart drawn per series")
	assert.Positive(t, heatmaps, "a heatmap per family of several series")

	shot := filepath.Join(dir, "trend.png")
	browse(t, bin, page, shot)
	f, err := os.Open(shot)
	require.NoError(t, err)
	img, err := png.Decode(f)
	f.Close()
	require.NoError(t, err)
	colors, ink := map[[3]uint32]bool{}, 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 2 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			if r < 0xe000 || g < 0xe000 || b < 0xe000 {
				ink++
			}
		}
	}
	area := bounds.Dx() * bounds.Dy() / 4
	t.Logf("screenshot %dx%d: %d colours, %.1f%% ink", bounds.Dx(), bounds.Dy(), len(colors), 100*float64(ink)/float64(area))
	assert.Greater(t, len(colors), 20, "the screenshot has charts, not a blank page")
	assert.Greater(t, float64(ink), 0.02*float64(area), "the screenshot has charts, not a blank page")
	if *pageShot != "" {
		b, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(*pageShot, b, 0o644))
	}

	// the check fails a page whose script breaks
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	broken := filepath.Join(dir, "broken.html")
	require.NoError(t, os.WriteFile(broken, bytes.Replace(b, []byte("var DATA = "), []byte("var DATA = noSuchThing || "), 1), 0o644))
	charts, _, errs = pageState(t, browse(t, bin, broken, ""))
	assert.Equal(t, 1, errs, "a script error is counted")
	assert.Zero(t, charts)
}
