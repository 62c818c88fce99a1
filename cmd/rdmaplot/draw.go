package main

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure geometry: the legend goes below the plot so it never hides data.
const (
	figWidth    = 9 * vg.Inch
	plotHeight  = 5.5 * vg.Inch
	legendLine  = 17 // points per legend entry
	legendPad   = 10 // points around the legend
	pngDPI      = 110
	fontSizePts = 12
	// maxLines bounds the lines of one chart: a legend entry each, and
	// the canvas grows with the legend (a results file of thousands of
	// families would take gigabytes to draw).
	maxLines = 64
)

// figure is one chart: a plot and its legend entries, drawn below it.
type figure struct {
	p       *plot.Plot
	legend  plot.Legend
	entries int
}

func newFigure(title, xLabel, yLabel string) *figure {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = fontSizePts + 2
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = fontSizePts
		a.Tick.Label.Font.Size = fontSizePts - 1
	}
	p.Add(plotter.NewGrid())
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = fontSizePts - 1
	leg.Padding = 4
	return &figure{p: p, legend: leg}
}

// style is how line i of a figure looks.
func style(i int, dashes int) (color.Color, []vg.Length, draw.GlyphDrawer) {
	return plotutil.Color(i), plotutil.Dashes(dashes), plotutil.Shape(i)
}

// addLine adds a line with point markers (unless markers is false) and,
// when errs is not nil, vertical error bars (offsets below and above each
// point).
func (f *figure) addLine(label string, colorIdx, dashIdx int, markers bool, xys plotter.XYs, errs plotter.YErrors) error {
	if len(xys) == 0 {
		return nil
	}
	if f.entries >= maxLines {
		return fmt.Errorf("line %s: a chart holds at most %d lines: plot fewer families (make bench BENCH=..., or benchstat -filter)", label, maxLines)
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("line %s: %w", label, err)
	}
	c, dashes, shape := style(colorIdx, dashIdx)
	line.Color, line.Dashes, line.Width = c, dashes, vg.Points(1.5)
	points.Color, points.Shape, points.Radius = c, shape, vg.Points(3)
	f.p.Add(line)
	thumbs := []plot.Thumbnailer{line}
	if markers {
		f.p.Add(points)
		thumbs = append(thumbs, points)
	}
	if errs != nil {
		bars, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xys, errs})
		if err != nil {
			return fmt.Errorf("error bars %s: %w", label, err)
		}
		bars.Color = c
		f.p.Add(bars)
	}
	f.legend.Add(label, thumbs...)
	f.entries++
	return nil
}

// addXErrors adds horizontal error bars (offsets left and right of each
// point) in line colorIdx's colour.
func (f *figure) addXErrors(label string, colorIdx int, xys plotter.XYs, errs plotter.XErrors) error {
	if len(xys) == 0 {
		return nil
	}
	bars, err := plotter.NewXErrorBars(struct {
		plotter.XYs
		plotter.XErrors
	}{xys, errs})
	if err != nil {
		return fmt.Errorf("error bars %s: %w", label, err)
	}
	bars.Color, _, _ = style(colorIdx, 0)
	f.p.Add(bars)
	return nil
}

// addLabels writes texts just above and right of the points xys.
func (f *figure) addLabels(xys plotter.XYs, texts []string) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return fmt.Errorf("point labels: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = fontSizePts - 1
	}
	l.Offset = vg.Point{X: 5, Y: 5}
	f.p.Add(l)
	return nil
}

// save writes dir/base.svg and dir/base.png and returns their paths.
func (f *figure) save(dir, base string) ([]string, error) {
	legendH := vg.Length(f.entries*legendLine + 2*legendPad)
	h := plotHeight + legendH
	svg := vgsvg.New(figWidth, h)
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(figWidth, h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))}
	var paths []string
	for _, out := range []struct {
		ext    string
		canvas vg.CanvasWriterTo
	}{{"svg", svg}, {"png", png}} {
		dc := draw.New(out.canvas)
		f.p.Draw(draw.Crop(dc, 0, -10, legendH, -8))
		f.legend.Draw(draw.Crop(dc, vg.Length(legendPad)+40, 0, 0, -plotHeight-legendPad))
		path := filepath.Join(dir, base+"."+out.ext)
		if err := writeFile(path, out.canvas); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

func writeFile(path string, w io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create plot: %w", err)
	}
	if _, err := w.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// sizeTicks marks powers of two on a log-scaled byte axis, labelled with
// binary prefixes (1 KiB = 1024 bytes); with many of them every other is minor.
type sizeTicks struct{}

// Ticks implements plot.Ticker.
func (sizeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log2(min)); e <= math.Ceil(math.Log2(max)); e++ {
		v := math.Exp2(e)
		if v >= min/1.0001 && v <= max*1.0001 {
			ticks = append(ticks, plot.Tick{Value: v, Label: byteLabel(v)})
		}
	}
	if len(ticks) > 12 {
		for i := 1; i < len(ticks); i += 2 {
			ticks[i].Label = ""
		}
	}
	return ticks
}

// byteLabel formats a size with binary prefixes: "8 B", "4 KiB", "64 KiB".
func byteLabel(v float64) string {
	for _, p := range []struct {
		div    float64
		suffix string
	}{{1 << 30, " GiB"}, {1 << 20, " MiB"}, {1 << 10, " KiB"}} {
		if v >= p.div {
			return strconv.FormatFloat(v/p.div, 'g', -1, 64) + p.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', -1, 64) + " B"
}

// logTicks marks 1-2-5 steps per decade on a log axis (1..9 when the
// range is under one decade) so that narrow ranges still get labels.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(min, max float64) []plot.Tick {
	mults := []float64{1, 2, 5}
	if max/min < 10 {
		mults = []float64{1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9}
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range mults {
			v := m * math.Pow(10, e)
			if v >= min && v <= max {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)}) // 50000, not 5e+04
			}
		}
	}
	return ticks
}

// percentileTicks marks x = 1/(1−q) at q = 0, 90%, 99%, 99.9%, ... with
// unlabelled minor ticks in between.
type percentileTicks struct{}

// Ticks implements plot.Ticker.
func (percentileTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := 0.0; math.Pow(10, e) <= max*1.0001; e++ {
		decade := math.Pow(10, e)
		ticks = append(ticks, plot.Tick{Value: decade, Label: percentileLabel(e)})
		for m := 2.0; m < 10 && m*decade <= max; m++ {
			ticks = append(ticks, plot.Tick{Value: m * decade})
		}
	}
	return ticks
}

// percentileLabel names q = 1 − 10^−e as a percentage: 0%, 90%, 99%, 99.9%...
func percentileLabel(e float64) string {
	if e == 0 {
		return "0%"
	}
	return strconv.FormatFloat(100*(1-math.Pow(10, -e)), 'f', max(0, int(e)-2), 64) + "%"
}

// linearTicks labels "nice" steps (1, 2, 5 × 10^k), 4 to 10 of them.
type linearTicks struct{}

// Ticks implements plot.Ticker.
func (linearTicks) Ticks(min, max float64) []plot.Tick {
	if !(max > min) {
		return []plot.Tick{{Value: min, Label: strconv.FormatFloat(min, 'g', 4, 64)}}
	}
	raw := (max - min) / 10
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*step >= raw {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(min/step) * step; v <= max+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0 // avoid "-1e-17"
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 6, 64)})
	}
	return ticks
}
