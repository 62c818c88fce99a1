package blame

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Heat map geometry.
const (
	// maxHeatmapNodes bounds the matrix: 512² cells already make a
	// many-megabyte SVG.
	maxHeatmapNodes = 512
	// maxCellLabels is the most nodes for which each cell shows its value.
	maxCellLabels = 16
	// maxAxisLabels is the most node names per axis; past it every k-th.
	maxAxisLabels = 64
	heatmapDPI    = 110
	heatFontPts   = 11
	colorBarH     = 0.9 * vg.Inch
	paletteColors = 256
	// paleShare widens the colour range past the best value.
	paleShare = 0.15
)

// emptyGray is the grey of the empty cells, the diagonal among them.
const emptyGray = 0xd0

// grid is the src×dst matrix of a metric's link medians: column c is
// destination node c, row r source node n−1−r (the first source on
// top); a cell with no link, the diagonal among them, is NaN.
type grid struct {
	z [][]float64 // z[c][r]
}

// Dims implements plotter.GridXYZ.
func (g grid) Dims() (c, r int) { return len(g.z), len(g.z) }

// Z implements plotter.GridXYZ.
func (g grid) Z(c, r int) float64 { return g.z[c][r] }

// X implements plotter.GridXYZ.
func (g grid) X(c int) float64 { return float64(c) }

// Y implements plotter.GridXYZ.
func (g grid) Y(r int) float64 { return float64(r) }

// Heatmap writes path.png and path.svg (path without extension; a .png
// or .svg one is dropped): the src×dst matrix of the medians over runs
// of unit in scenario, node names on the axes, sources down the side
// and destinations along the bottom, the diagonal and links without a
// value empty, a colour bar below; dark is worse, grey empty. It fails for an
// unknown scenario or unit and for more than 512 nodes.
func Heatmap(f *Fabric, scenario, unit, path string) error {
	runs := f.Runs[scenario][unit]
	switch {
	case len(runs) == 0:
		return fmt.Errorf("heat map: no %s values in scenario %q", unit, scenario)
	case len(f.Nodes) > maxHeatmapNodes:
		return fmt.Errorf("heat map: %d nodes, at most %d: draw a sub-fabric", len(f.Nodes), maxHeatmapNodes)
	}
	g, lo, hi := matrix(f, runs)
	// The best values get a pale colour short of white, the page's.
	if f.Better[unit] < 0 {
		lo -= paleShare * (hi - lo)
	} else {
		hi += paleShare * (hi - lo)
	}
	p, err := heatPlot(f, g, lo, hi, scenario, unit)
	if err != nil {
		return err
	}
	bar := colorBar(heatColors(f.Better[unit]), lo, hi, unit)
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".png"), ".svg")
	return saveHeatmap(p, bar, len(f.Nodes), base)
}

// matrix builds the grid of link medians and their range.
func matrix(f *Fabric, runs map[Link][]float64) (grid, float64, float64) {
	n := len(f.Nodes)
	index := make(map[string]int, n)
	for i, node := range f.Nodes {
		index[node] = i
	}
	g := grid{z: make([][]float64, n)}
	for c := range g.z {
		g.z[c] = make([]float64, n)
		for r := range g.z[c] {
			g.z[c][r] = math.NaN()
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for l, vals := range runs {
		v := median(vals)
		g.z[index[l.Dst]][n-1-index[l.Src]] = v
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	return g, lo, hi
}

// heatColors is the colour map, dark for worse values.
func heatColors(better int) palette.ColorMap {
	cm := moreland.ExtendedBlackBody()
	if better < 0 {
		return palette.Reverse(cm)
	}
	return cm
}

// heatPlot draws the matrix with names on the axes and, for a small
// fabric, each cell's value.
func heatPlot(f *Fabric, g grid, lo, hi float64, scenario, unit string) (*plot.Plot, error) {
	cm := heatColors(f.Better[unit])
	cm.SetMin(lo)
	cm.SetMax(hi)
	hm := plotter.NewHeatMap(g, cm.Palette(paletteColors))
	hm.Min, hm.Max = lo, hi
	hm.NaN = color.Gray{Y: emptyGray}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s %s, median over runs (row: src, column: dst)", scenario, unit)
	p.Title.TextStyle.Font.Size = heatFontPts + 2
	p.X.Label.Text, p.Y.Label.Text = "dst", "src"
	p.Add(hm)
	rows := slices.Clone(f.Nodes)
	slices.Reverse(rows)
	p.NominalX(axisNames(f.Nodes)...)
	p.NominalY(axisNames(rows)...)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Tick.Label.Font.Size = heatFontPts
		a.Label.TextStyle.Font.Size = heatFontPts
	}
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YCenter
	if len(f.Nodes) > maxCellLabels {
		return p, nil
	}
	return p, addCellLabels(p, g, lo, hi, f.Better[unit])
}

// axisNames returns names, blanking all but every k-th past
// maxAxisLabels.
func axisNames(names []string) []string {
	out := slices.Clone(names)
	step := (len(names) + maxAxisLabels - 1) / maxAxisLabels
	for i := range out {
		if step > 1 && i%step != 0 {
			out[i] = ""
		}
	}
	return out
}

// addCellLabels writes each cell's value in it, light on the dark
// (worse) half of the colour range, dark on the other.
func addCellLabels(p *plot.Plot, g grid, lo, hi float64, better int) error {
	var xys plotter.XYs
	var texts []string
	var dark []bool
	c, r := g.Dims()
	for i := range c {
		for j := range r {
			if v := g.Z(i, j); !math.IsNaN(v) {
				xys = append(xys, plotter.XY{X: g.X(i), Y: g.Y(j)})
				texts = append(texts, num(v))
				dark = append(dark, (v < (lo+hi)/2) == (better >= 0))
			}
		}
	}
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return fmt.Errorf("heat map labels: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Font.Size = heatFontPts - 2
		l.TextStyle[i].Color = color.Black
		if dark[i] {
			l.TextStyle[i].Color = color.White
		}
		l.TextStyle[i].XAlign, l.TextStyle[i].YAlign = draw.XCenter, draw.YCenter
	}
	p.Add(l)
	return nil
}

// colorBar draws the colour scale of the heat map.
func colorBar(cm palette.ColorMap, lo, hi float64, unit string) *plot.Plot {
	cm.SetMin(lo)
	cm.SetMax(hi)
	p := plot.New()
	p.Add(&plotter.ColorBar{ColorMap: cm})
	p.HideY()
	p.X.Label.Text = unit
	p.X.Label.TextStyle.Font.Size = heatFontPts
	p.X.Tick.Label.Font.Size = heatFontPts - 1
	return p
}

// saveHeatmap draws the heat map above its colour bar into base.svg and
// base.png.
func saveHeatmap(p, bar *plot.Plot, nodes int, base string) error {
	side := min(max(6*vg.Inch, vg.Length(nodes)*0.35*vg.Inch), 40*vg.Inch)
	w, h := side+1.5*vg.Inch, side+1.5*vg.Inch+colorBarH
	svg := vgsvg.New(w, h)
	png := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(heatmapDPI), vgimg.UseBackgroundColor(color.White))}
	for _, out := range []struct {
		ext    string
		canvas vg.CanvasWriterTo
	}{{"svg", svg}, {"png", png}} {
		dc := draw.New(out.canvas)
		p.Draw(draw.Crop(dc, 0, -10, colorBarH, -8))
		bar.Draw(draw.Crop(dc, 1.2*vg.Inch, -0.5*vg.Inch, 8, -(h - colorBarH)))
		if err := writeTo(base+"."+out.ext, out.canvas); err != nil {
			return err
		}
	}
	return nil
}

// writeTo writes w's content to the file path.
func writeTo(path string, w io.WriterTo) error {
	fh, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heat map: %w", err)
	}
	if _, err := w.WriteTo(fh); err != nil {
		fh.Close()
		return fmt.Errorf("heat map: write %s: %w", path, err)
	}
	if err := fh.Close(); err != nil {
		return fmt.Errorf("heat map: close %s: %w", path, err)
	}
	return nil
}
