// Command rdmaplot draws rdmabench results as SVG and PNG charts.
//
// Usage:
//
//	go run ./cmd/rdmaplot -o DIR RESULTS.txt [HLOG...]
//
// RESULTS.txt is Go benchmark output (go test -bench, any -count). Only
// benchmarks with a /size=<bytes> or a /rate= name part are drawn. A
// benchmark with a rate= part (an offered load: SendLoad, WriteLoad)
// belongs to a load family, the full name without that part (e.g.
// "SendLoad/transport=RC/size=64/qd=128-2"), and is drawn only in that
// family's load chart, not in the size charts (at its one size they
// would get a chart of a single point per rate). For the others a family
// is the full name without the size part (e.g.
// "WriteBW/transport=RC/qd=128-2"). Each point is the median over the
// repeated runs of one benchmark, and its error bar spans the smallest
// to the largest run. Units other than those below (ns/op, B/op, port
// counters ending in /run, ...) are read and ignored. Charts:
//
//   - bandwidth-<base>.{svg,png}, one per streaming base (WriteBW,
//     SendBW, ReadBW, ...): MB/s as printed by testing.B (1 MB = 10^6
//     bytes; first post to last completion) vs message size, one line per
//     family. The legend shows only the name parts that differ between
//     the lines, the title those they share. Ping-pong families (*Lat)
//     are left out: they report no MB/s, and their msgs/s (round trips
//     per second) is not a stream's rate.
//   - msgrate-<base>.{svg,png}: msgs/s vs message size, likewise.
//   - latency-<family>.{svg,png}: p50-ns, p99-ns, p99.9-ns in µs vs size,
//     one chart per family, log y (for *BW: latency under load).
//   - load-<family>.{svg,png}, one per load family: the latency–throughput
//     curve. p50-ns, p99-ns, p99.9-ns in µs (log y, one line each) vs the
//     achieved rate msgs/s, a point per offered rate, joined in order of
//     offered rate and labelled with the rate= value (rate=25% is a
//     quarter of the peak rate measured just before on the same pair).
//     Bars are min–max both ways (x: achieved rate, y: the percentile);
//     each median is taken on its own. A label says "achieved N% of
//     offered" where the median msgs/s is below 95% of the median
//     offered-msgs/s: the run did not sustain its load.
//   - spectrum-<base>.{svg,png} (when .hlog files are given): latency vs
//     percentile for each HdrHistogram interval log of that base (all
//     intervals merged, values in ns, drawn in µs) on the classic
//     1/(1−q) log axis. rdmatest names the files after the benchmark
//     (BenchmarkWriteLat_transport=RC_size=8.hlog).
//
// The size axis is log2 with binary labels (8 B, 4 KiB, 64 KiB); the
// load charts' rate axis is linear from 0. File
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
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
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
	for _, g := range groupByBase(res.Families(), isStream) {
		f, err := sizeFigure(res, "MB/s", g, "bandwidth", "bandwidth (MB/s, 1 MB = 10^6 bytes)", 1)
		if err := add("bandwidth-"+fileName(g.base), f, err); err != nil {
			return nil, err
		}
		scale, unit := rateScale(res.Series("msgs/s"), g)
		f, err = sizeFigure(res, "msgs/s", g, "message rate", "message rate ("+unit+")", scale)
		if err := add("msgrate-"+fileName(g.base), f, err); err != nil {
			return nil, err
		}
	}
	for _, fam := range res.Families() {
		f, err := latencyFigure(res, fam)
		if err := add("latency-"+fileName(fam), f, err); err != nil {
			return nil, err
		}
	}
	for _, fam := range res.LoadFamilies() {
		f, err := loadFigure(res, fam)
		if err := add("load-"+fileName(fam), f, err); err != nil {
			return nil, err
		}
	}
	for _, g := range groupSpectra(spectra) {
		f, err := spectrumFigure(g)
		if err := add("spectrum-"+fileName(g.base), f, err); err != nil {
			return nil, err
		}
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("nothing to draw: no *BW family with MB/s or msgs/s, no p50-ns/p99-ns/p99.9-ns values, no rate= family with msgs/s and percentiles, and no .hlog file")
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

// isStream tells streaming families (WriteBW, SendBW, ...): only their
// MB/s and msgs/s are bandwidth. A ping-pong's msgs/s is round trips per
// second and would mislead next to them.
func isStream(n benchname.Name) bool { return strings.HasSuffix(n.Base, "BW") }

// group is the families of one base (e.g. all WriteBW variants), drawn
// in one chart, with the name parts that tell them apart.
type group struct {
	base     string
	families []string
	names    []benchname.Name
	vary     map[string]bool // keys whose values differ: the legend
	common   map[string]bool // keys with one value: the title
}

// groupByBase groups the families that keep() accepts by base name, in
// order of first appearance.
func groupByBase(families []string, keep func(benchname.Name) bool) []group {
	var out []group
	idx := map[string]int{}
	for _, fam := range families {
		n := familyName(fam)
		if !keep(n) {
			continue
		}
		i, ok := idx[n.Base]
		if !ok {
			i = len(out)
			idx[n.Base] = i
			out = append(out, group{base: n.Base})
		}
		out[i].families = append(out[i].families, fam)
		out[i].names = append(out[i].names, n)
	}
	for i := range out {
		out[i].vary, out[i].common = varying(out[i].names)
	}
	return out
}

// legend is the label of member i: the parts that vary, or all parts
// when it is alone.
func (g group) legend(i int) string {
	if len(g.vary) == 0 {
		if l := label(g.names[i], nil); l != "" {
			return l
		}
		return g.base
	}
	return label(g.names[i], g.vary)
}

// subtitle names the parts every member shares.
func (g group) subtitle() string {
	if len(g.names) == 0 || len(g.vary) == 0 {
		return ""
	}
	return label(g.names[0], g.common)
}

// title is a chart's first line over lines of notes; the last says what
// the points and bars are.
func title(first string, notes ...string) string {
	lines := []string{first}
	for _, n := range notes {
		if n != "" {
			lines = append(lines, n)
		}
	}
	const bars = "median of runs, bars: min–max"
	if len(lines) == 1 {
		return first + "\n" + bars
	}
	lines[len(lines)-1] += "; " + bars
	return strings.Join(lines, "\n")
}

// shared describes the name parts common to all lines of a group.
func shared(g group) string {
	if s := g.subtitle(); s != "" {
		return "all lines: " + s
	}
	return ""
}

const sizeAxis = "message size (log2 scale; KiB = 1024 bytes)"

// sizeFigure draws unit (divided by div) vs size, one line per family
// of g.
func sizeFigure(res *Results, unit string, g group, what, yLabel string, div float64) (*figure, error) {
	apart := ""
	if len(g.families) > 1 {
		apart = "lines drawn slightly apart at each size"
	}
	fig := newFigure(title(g.base+": "+what+" vs message size", shared(g), apart), sizeAxis, yLabel)
	fig.p.X.Scale, fig.p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
	fig.p.Y.Min, fig.p.Y.Tick.Marker = 0, linearTicks{}
	series := map[string]Series{}
	for _, s := range res.Series(unit) {
		series[s.Family] = s
	}
	var drawn []Series
	for i, fam := range g.families {
		s, ok := series[fam]
		if !ok {
			continue
		}
		drawn = append(drawn, s)
		xys, errs := seriesXY(s, div)
		shift(xys, i, len(g.families))
		if err := fig.addLine(g.legend(i), i, 0, true, xys, errs); err != nil {
			return nil, err
		}
	}
	sizeRange(fig.p, drawn, len(g.families))
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

// rateScale picks a divisor so message-rate tick labels stay short,
// from the largest value among g's families.
func rateScale(series []Series, g group) (float64, string) {
	top := 0.0
	for _, s := range series {
		if slices.Contains(g.families, s.Family) {
			for _, p := range s.Points {
				top = max(top, p.Max)
			}
		}
	}
	return rateUnit(top)
}

// rateUnit picks a divisor and its axis label for message rates up to top.
func rateUnit(top float64) (float64, string) {
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
	n := familyName(family)
	what := "latency percentiles"
	if isStream(n) {
		what = "latency under load (post → completion)"
	}
	fig := newFigure(title(n.Base+": "+what, label(n, nil),
		"p50, p99, p99.9 drawn slightly apart at each size"), sizeAxis, "latency (µs, log scale)")
	fig.p.X.Scale, fig.p.X.Tick.Marker = plot.LogScale{}, sizeTicks{}
	fig.p.Y.Scale, fig.p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	var drawn []Series
	for i, lu := range latencyUnits {
		for _, s := range res.Series(lu.unit) {
			if s.Family != family {
				continue
			}
			xys, errs := seriesXY(positive(s), 1000)
			shift(xys, i, len(latencyUnits))
			if err := fig.addLine(lu.label, i, i, true, xys, errs); err != nil {
				return nil, err
			}
			drawn = append(drawn, s)
		}
	}
	sizeRange(fig.p, drawn, len(latencyUnits))
	return fig, nil
}

// loadFigure draws the latency–throughput curve of one load family:
// p50, p99 and p99.9 against the achieved rate, a point per offered
// rate, each labelled with its rate= value.
func loadFigure(res *Results, family string) (*figure, error) {
	achieved, ok := res.LoadSeries("msgs/s", family)
	if !ok {
		return nil, nil
	}
	offered, _ := res.LoadSeries("offered-msgs/s", family)
	top := 0.0
	for _, p := range achieved.Points {
		top = max(top, p.Max)
	}
	div, unit := rateUnit(top)
	n := familyName(family)
	fig := newFigure(title(n.Base+": latency vs offered load", label(n, nil),
		"x: achieved rate; point labels: offered rate, rate% of the peak rate measured just before",
		"lines join the points in order of offered rate"),
		"achieved message rate ("+unit+")", "latency (µs, log scale)")
	fig.p.X.Min, fig.p.X.Max, fig.p.X.Tick.Marker = 0, top/div*1.05, linearTicks{}
	fig.p.Y.Scale, fig.p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	lo, hi := math.Inf(1), math.Inf(-1)
	labels := loadLabels(achieved, offered)
	for i, lu := range latencyUnits {
		lat, ok := res.LoadSeries(lu.unit, family)
		if !ok {
			continue
		}
		var xys plotter.XYs
		var xerrs plotter.XErrors
		var yerrs plotter.YErrors
		var texts []string
		for _, x := range achieved.Points {
			j := slices.IndexFunc(lat.Points, func(p LoadPoint) bool { return p.Rate == x.Rate })
			if j < 0 || lat.Points[j].Median <= 0 {
				continue // a log axis cannot show 0
			}
			y := lat.Points[j]
			if y.Min <= 0 {
				y.Min = y.Median // keep the bar drawable on a log axis
			}
			lo, hi = min(lo, y.Min/1000), max(hi, y.Max/1000)
			xys = append(xys, plotter.XY{X: x.Median / div, Y: y.Median / 1000})
			xerrs = append(xerrs, struct{ Low, High float64 }{(x.Median - x.Min) / div, (x.Max - x.Median) / div})
			yerrs = append(yerrs, struct{ Low, High float64 }{(y.Median - y.Min) / 1000, (y.Max - y.Median) / 1000})
			texts = append(texts, labels[x.Rate])
		}
		if err := fig.addLine(lu.label, i, i, true, xys, yerrs); err != nil {
			return nil, err
		}
		if err := fig.addXErrors(lu.label, i, xys, xerrs); err != nil {
			return nil, err
		}
		if i == 0 { // label the p50 line's points
			if err := fig.addLabels(xys, texts); err != nil {
				return nil, err
			}
		}
	}
	if lo <= hi { // room for the labels and the bars' ends
		fig.p.Y.Min, fig.p.Y.Max = lo/1.6, hi*1.6
	}
	return fig, nil
}

// loadLabels names each offered rate for the chart: its rate= value,
// and the achieved share of the offered rate (medians) when the run did
// not sustain it (below 95%, as rdmatest logs).
func loadLabels(achieved, offered LoadSeries) map[string]string {
	out := map[string]string{}
	for _, a := range achieved.Points {
		out[a.Rate] = a.Rate
		for _, o := range offered.Points {
			if o.Rate == a.Rate && o.Median > 0 && a.Median < 0.95*o.Median {
				out[a.Rate] = fmt.Sprintf("%s (achieved %.0f%% of offered)", a.Rate, 100*a.Median/o.Median)
			}
		}
	}
	return out
}

// dodge is the sideways offset between the lines of a chart, in
// octaves of message size, so that their min–max bars do not overlap.
const dodge = 0.06

// sizeRange sets the size axis to the true sizes of the lines, widened
// by the sideways shift of n lines so that every size keeps its tick.
func sizeRange(p *plot.Plot, series []Series, n int) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range series {
		for _, pt := range s.Points {
			lo, hi = min(lo, float64(pt.Size)), max(hi, float64(pt.Size))
		}
	}
	if lo > hi {
		return
	}
	pad := math.Exp2(dodge * float64(n) / 2)
	if lo == hi {
		pad = 2 // one size: an octave either side
	}
	p.X.Min, p.X.Max = lo/pad, hi*pad
}

// shift moves line i of n sideways by its share of dodge (the lines
// centred on the true size).
func shift(xys plotter.XYs, i, n int) {
	f := math.Exp2(dodge * (float64(i) - float64(n-1)/2))
	for j := range xys {
		xys[j].X *= f
	}
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

// spectrumGroup is the .hlog spectra of one base family, with their
// names and the parts that tell them apart.
type spectrumGroup struct {
	group
	spectra []*Spectrum
}

// groupSpectra groups spectra by the base of their benchmark name.
func groupSpectra(spectra []*Spectrum) []spectrumGroup {
	var out []spectrumGroup
	idx := map[string]int{}
	for _, s := range spectra {
		n := spectrumName(s.Name)
		i, ok := idx[n.Base]
		if !ok {
			i = len(out)
			idx[n.Base] = i
			out = append(out, spectrumGroup{group: group{base: n.Base}})
		}
		out[i].names = append(out[i].names, n)
		out[i].spectra = append(out[i].spectra, s)
	}
	for i := range out {
		out[i].vary, out[i].common = varying(out[i].names)
	}
	return out
}

// spectrumFigure draws latency vs percentile, one line per hlog file.
func spectrumFigure(g spectrumGroup) (*figure, error) {
	first := g.base + ": latency by percentile (HdrHistogram logs, all runs and intervals merged)"
	shared := g.subtitle()
	if shared != "" {
		first += "\nall lines: " + shared
	}
	fig := newFigure(first, "percentile (log scale of 1/(1−q))", "latency (µs, log scale)")
	fig.p.X.Scale, fig.p.X.Tick.Marker = plot.LogScale{}, percentileTicks{}
	fig.p.Y.Scale, fig.p.Y.Tick.Marker = plot.LogScale{}, logTicks{}
	for i, s := range g.spectra {
		var xys plotter.XYs
		for j, q := range s.Quantiles {
			if s.Values[j] > 0 {
				xys = append(xys, plotter.XY{X: 1 / (1 - q), Y: s.Values[j] / 1000})
			}
		}
		label := fmt.Sprintf("%s (%d values, max %s µs)", g.legend(i), s.Count, strconv.FormatFloat(s.Values[len(s.Values)-1]/1000, 'f', 1, 64))
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
