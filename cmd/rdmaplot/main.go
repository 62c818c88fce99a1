// Command rdmaplot draws rdmabench results as SVG and PNG charts.
//
// Usage:
//
//	go run ./cmd/rdmaplot -o DIR RESULTS.txt [HLOG...]
//
// RESULTS.txt is Go benchmark output (go test -bench, any -count). Only
// benchmarks with a /size=<bytes> name part are drawn; a family is the
// full name without that part (e.g. "WriteBW/transport=RC/qd=64-2").
// Each point is the median over the repeated runs of one benchmark, and
// its error bar spans the smallest to the largest run. Charts:
//
//   - bandwidth.{svg,png}: MB/s as printed by testing.B (SetBytes bytes
//     per op over the timed region; 1 MB = 10^6 bytes) vs message size.
//   - msgrate.{svg,png}: msgs/s vs message size.
//   - latency-<family>.{svg,png}: p50-ns, p99-ns, p99.9-ns in µs vs size,
//     one chart per family, log y.
//   - spectrum.{svg,png} (when .hlog files are given): latency vs
//     percentile for each HdrHistogram interval log (all intervals merged,
//     values in ns, drawn in µs) on the classic 1/(1−q) log axis.
//
// The size axis is log2 with binary labels (1Ki = 1024 bytes). File
// configuration lines (rdma-device, rdma-fw, ...) are not used: a results
// file mixing devices or firmware versions is drawn as if it were one
// setup, so plot one setup per file (benchstat -col rdma-fw compares them).
// Exit status: 0 written, 1 error (unreadable input, nothing to draw),
// 2 usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rdmaplot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outDir := fs.String("o", "plots", "output directory (created if missing)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: rdmaplot -o DIR RESULTS.txt [HLOG...]\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	paths, err := plotFiles(*outDir, fs.Arg(0), fs.Args()[1:])
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmaplot: %v\n", err)
		return 1
	}
	return 0
}

// plotFiles reads the inputs and writes all charts into outDir.
func plotFiles(outDir, results string, hlogs []string) ([]string, error) {
	res, err := ReadResultsFile(results)
	if err != nil {
		return nil, err
	}
	var spectra []*Spectrum
	for _, h := range hlogs {
		s, err := ReadHlogFile(h)
		if err != nil {
			return nil, err
		}
		spectra = append(spectra, s)
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, fmt.Errorf("create output directory: %w", err)
	}
	return Plot(outDir, res, spectra)
}

// Plot writes every chart that has data and returns the file paths.
func Plot(outDir string, res *Results, spectra []*Spectrum) ([]string, error) {
	figs := map[string]*figure{}
	var order []string
	add := func(name string, f *figure, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if f != nil && f.entries > 0 {
			figs[name] = f
			order = append(order, name)
		}
		return nil
	}
	f, err := sizeFigure(res, "MB/s", "Bandwidth vs message size",
		"bandwidth (MB/s, 1 MB = 10^6 bytes)", 1)
	if err := add("bandwidth", f, err); err != nil {
		return nil, err
	}
	scale, unit := rateScale(res.Series("msgs/s"))
	f, err = sizeFigure(res, "msgs/s", "Message rate vs message size", "message rate ("+unit+")", scale)
	if err := add("msgrate", f, err); err != nil {
		return nil, err
	}
	for _, fam := range res.Families() {
		f, err := latencyFigure(res, fam)
		if err := add("latency-"+fileName(fam), f, err); err != nil {
			return nil, err
		}
	}
	if len(spectra) > 0 {
		f, err := spectrumFigure(spectra)
		if err := add("spectrum", f, err); err != nil {
			return nil, err
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("nothing to draw: no MB/s, msgs/s or p50-ns/p99-ns/p99.9-ns values and no .hlog file")
	}
	var paths []string
	for _, name := range order {
		p, err := figs[name].save(outDir, name)
		paths = append(paths, p...)
		if err != nil {
			return paths, err
		}
	}
	return paths, nil
}

const sizeAxis = "message size (bytes, log2 scale; Ki = 1024)"

// sizeFigure draws unit (divided by div) vs size, one line per family.
func sizeFigure(res *Results, unit, title, yLabel string, div float64) (*figure, error) {
	fig := newFigure(title+" (median of runs; bars: min–max)", sizeAxis, yLabel)
	fig.p.X.Scale, fig.p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
	fig.p.Y.Min, fig.p.Y.Tick.Marker = 0, linearTicks{}
	for i, s := range res.Series(unit) {
		xys, errs := seriesXY(s, div)
		if err := fig.addLine(s.Family, i, 0, true, xys, errs); err != nil {
			return nil, err
		}
	}
	return fig, nil
}

// seriesXY converts a series to plot points (value/div) and min–max bars.
func seriesXY(s Series, div float64) (plotter.XYs, plotter.YErrors) {
	xys := make(plotter.XYs, 0, len(s.Points))
	errs := make(plotter.YErrors, 0, len(s.Points))
	for _, p := range s.Points {
		xys = append(xys, plotter.XY{X: float64(p.Size), Y: p.Median / div})
		errs = append(errs, struct{ Low, High float64 }{(p.Median - p.Min) / div, (p.Max - p.Median) / div})
	}
	return xys, errs
}

// rateScale picks a divisor so message-rate tick labels stay short.
func rateScale(series []Series) (float64, string) {
	top := 0.0
	for _, s := range series {
		for _, p := range s.Points {
			top = max(top, p.Max)
		}
	}
	switch {
	case top >= 1e6:
		return 1e6, "millions of msgs/s"
	case top >= 1e4:
		return 1e3, "thousands of msgs/s"
	}
	return 1, "msgs/s"
}

// latencyUnits are the percentiles drawn per family, with their labels.
var latencyUnits = []struct{ unit, label string }{
	{"p50-ns", "p50 (median)"}, {"p99-ns", "p99"}, {"p99.9-ns", "p99.9"},
}

// latencyFigure draws the latency percentiles of one family vs size.
func latencyFigure(res *Results, family string) (*figure, error) {
	fig := newFigure("Latency percentiles: "+family+" (median of runs; bars: min–max)",
		sizeAxis, "latency (µs, log scale)")
	fig.p.X.Scale, fig.p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
	fig.p.Y.Scale, fig.p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	for i, lu := range latencyUnits {
		for _, s := range res.Series(lu.unit) {
			if s.Family != family {
				continue
			}
			xys, errs := seriesXY(positive(s), 1000)
			if err := fig.addLine(lu.label, i, i, true, xys, errs); err != nil {
				return nil, err
			}
		}
	}
	return fig, nil
}

// positive drops points a log axis cannot show (a min of 0 is clamped
// to the median so the bar stays drawable).
func positive(s Series) Series {
	out := Series{Family: s.Family}
	for _, p := range s.Points {
		if p.Median > 0 {
			if p.Min <= 0 {
				p.Min = p.Median
			}
			out.Points = append(out.Points, p)
		}
	}
	return out
}

// spectrumFigure draws latency vs percentile, one line per hlog file.
func spectrumFigure(spectra []*Spectrum) (*figure, error) {
	fig := newFigure("Latency by percentile (HdrHistogram logs, all intervals merged)",
		"percentile (log scale of 1/(1−q))", "latency (µs, log scale)")
	fig.p.X.Scale, fig.p.X.Tick.Marker = plot.LogScale{}, percentileTicks{}
	fig.p.Y.Scale, fig.p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	for i, s := range spectra {
		var xys plotter.XYs
		for j, q := range s.Quantiles {
			if s.Values[j] > 0 {
				xys = append(xys, plotter.XY{X: 1 / (1 - q), Y: s.Values[j] / 1000})
			}
		}
		label := fmt.Sprintf("%s (%d values, max %.1f µs)", s.Name, s.Count, s.Values[len(s.Values)-1]/1000)
		if err := fig.addLine(label, i, i, false, xys, nil); err != nil {
			return nil, err
		}
	}
	return fig, nil
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

// fileName turns a family name into a file name component.
func fileName(family string) string {
	return strings.Trim(unsafeChars.ReplaceAllString(family, "_"), "_")
}
