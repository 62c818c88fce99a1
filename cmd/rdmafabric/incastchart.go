package main

import (
	"fmt"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/rdmabench/rdmabench/internal/stats"
)

// chartCase is one case of one stored stream, as the chart shows it.
type chartCase struct {
	label string // the stream's name, its receiver and N
	c     *incastCase
}

// incastChart writes path.svg and path.png: for every case, the victim
// flow's p50, p99 and p99.9 idle and under incast (the medians over the
// case's runs, ms, log scale), one column of points a case and state,
// joined per percentile; each point's bar spans the case's runs from
// the smallest to the largest.
func incastChart(cases []chartCase, path string) error {
	if len(cases) == 0 {
		return fmt.Errorf("incast chart: no case")
	}
	p := plot.New()
	p.Title.Text = "victim flow, idle then under incast: median over runs, bars min–max"
	p.Y.Label.Text = "half round trip, ms"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var labels []string
	for _, cc := range cases {
		labels = append(labels, cc.label+"\nidle", "incast")
	}
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = vg.Points(7)
	for k, q := range []string{"p50-ns", "p99-ns", "p99.9-ns"} {
		var pts plotter.XYs
		var bars errorPoints
		for i, cc := range cases {
			for j, rows := range []map[string][]float64{cc.c.idle, cc.c.load} {
				v := rows[q]
				if len(v) == 0 {
					continue
				}
				x := float64(2*i+j) + 0.12*float64(k-1)
				lo, hi := v[0], v[0]
				for _, y := range v {
					lo, hi = min(lo, y), max(hi, y)
				}
				m := stats.Median(v) / 1e6
				pts = append(pts, plotter.XY{X: x, Y: m})
				bars.XYs = append(bars.XYs, plotter.XY{X: x, Y: m})
				bars.YErrors = append(bars.YErrors, struct{ Low, High float64 }{m - lo/1e6, hi/1e6 - m})
			}
		}
		if len(pts) == 0 {
			continue
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		s.GlyphStyle.Color = plotutil.Color(k)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(3)
		eb, err := plotter.NewYErrorBars(bars)
		if err != nil {
			return err
		}
		eb.LineStyle.Color = plotutil.Color(k)
		p.Add(s, eb)
		p.Legend.Add(strings.TrimSuffix(q, "-ns"), s)
	}
	p.Legend.Top, p.Legend.Left = true, true
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".png"), ".svg")
	width := vg.Points(float64(max(360, 80*2*len(cases))))
	for _, ext := range []string{".svg", ".png"} {
		if err := p.Save(width, 4*vg.Inch, base+ext); err != nil {
			os.Remove(base + ".svg")
			return fmt.Errorf("incast chart: %w", err)
		}
	}
	return nil
}

// errorPoints are points with their low and high errors
// (plotter.YErrorer).
type errorPoints struct {
	plotter.XYs
	plotter.YErrors
}
