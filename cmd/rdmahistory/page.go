package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"html/template"
	"os"
	"slices"
	"time"

	"github.com/rdmabench/rdmabench/internal/results"
	"github.com/rdmabench/rdmabench/internal/stats"
)

// The trend page is one HTML file with its data and script inside: no
// server and no network to view it. The script draws one SVG chart per
// series (runs in order, change points as vertical lines, worse red and
// better green, with what changed at each) and one heatmap per family
// with more than one series on one machine (a fabric's links): a row
// per series, a column per run, each cell the run's value against the
// series' median, coloured worse or better. When done it sets
// data-charts, data-heatmaps and data-errors on <body>, which make
// test's headless Chromium check reads (TestTrendPageChromium).

type pagePoint struct {
	T      string            `json:"t"`
	V      float64           `json:"v"`
	Upload string            `json:"upload"`
	Steps  map[string]string `json:"steps,omitempty"`
}

type pageChange struct {
	At    int     `json:"at"`
	Shift float64 `json:"shift"`
	Worse bool    `json:"worse"`
	P     float64 `json:"p"`
	What  string  `json:"what"`
	New   bool    `json:"new"`
}

type pageSeries struct {
	Name    string       `json:"name"`
	Unit    string       `json:"unit"`
	Env     string       `json:"env"`
	Higher  bool         `json:"higher"`
	Verdict string       `json:"verdict"`
	Points  []pagePoint  `json:"points"`
	Changes []pageChange `json:"changes"`
}

type pageHeatmap struct {
	Family string   `json:"family"`
	Env    string   `json:"env"`
	Unit   string   `json:"unit"`
	Rows   []string `json:"rows"`
	Runs   []string `json:"runs"`
	// Cells[row][run]: the run's value / the row's median, 0 for none.
	Cells  [][]float64 `json:"cells"`
	Higher bool        `json:"higher"`
}

type pageData struct {
	From     string        `json:"from"`
	Made     string        `json:"made"`
	Series   []pageSeries  `json:"series"`
	Heatmaps []pageHeatmap `json:"heatmaps"`
}

func buildPage(js []judged, from string) pageData {
	d := pageData{From: from, Made: time.Now().UTC().Format(time.RFC3339), Series: []pageSeries{}}
	for _, j := range js {
		ps := pageSeries{Name: j.Name, Unit: j.Unit, Env: j.Env, Higher: j.HigherBetter, Verdict: j.verdict(),
			Points: []pagePoint{}, Changes: []pageChange{}}
		for _, p := range j.Points {
			ps.Points = append(ps.Points, pagePoint{T: p.RunTime, V: p.Best, Upload: p.Upload, Steps: p.Steps})
		}
		for _, c := range j.Changes {
			ps.Changes = append(ps.Changes, pageChange{At: c.At, Shift: c.Shift, Worse: c.Worse, P: c.P,
				What: stepText(j.Points, c.At), New: containsChange(j.New, c)})
		}
		d.Series = append(d.Series, ps)
	}
	d.Heatmaps = append([]pageHeatmap{}, heatmaps(js)...)
	return d
}

// heatmaps groups the series by family, unit and machine; each group of
// two or more is one heatmap over the union of their runs.
func heatmaps(js []judged) []pageHeatmap {
	type gk struct{ fam, unit, env string }
	groups := map[gk][]judged{}
	var order []gk
	for _, j := range js {
		k := gk{results.Family(j.Name), j.Unit, j.Env}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], j)
	}
	var out []pageHeatmap
	for _, k := range order {
		g := groups[k]
		if len(g) < 2 {
			continue
		}
		h := pageHeatmap{Family: k.fam, Env: k.env, Unit: k.unit, Higher: g[0].HigherBetter}
		runs, at := runIndex(g)
		for _, r := range runs {
			h.Runs = append(h.Runs, r.t)
		}
		for _, j := range g {
			h.Rows = append(h.Rows, j.Name)
			med := stats.Median(j.Bests())
			row := make([]float64, len(runs))
			for _, p := range j.Points {
				if med > 0 {
					row[at[runKey{p.RunTime, p.Upload}]] = p.Best / med
				}
			}
			h.Cells = append(h.Cells, row)
		}
		out = append(out, h)
	}
	return out
}

// runKey names one run: its run time and upload.
type runKey struct{ t, up string }

// runIndex is the union of the series' runs in run-time order (then
// upload order), and each run's index in it.
func runIndex(js []judged) ([]runKey, map[runKey]int) {
	at := map[runKey]int{}
	var runs []runKey
	for _, j := range js {
		for _, p := range j.Points {
			if k := (runKey{p.RunTime, p.Upload}); at[k] == 0 {
				at[k] = 1
				runs = append(runs, k)
			}
		}
	}
	slices.SortFunc(runs, func(a, b runKey) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		return cmp.Compare(a.up, b.up)
	})
	for i, k := range runs {
		at[k] = i
	}
	return runs, at
}

func writePage(path string, js []judged, from string) error {
	data, err := json.Marshal(buildPage(js, from))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := pageTmpl.Execute(&b, template.JS(data)); err != nil {
		return err
	}
	return os.WriteFile(path, b.Bytes(), 0o644)
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rdmabench history</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px} h2{font-size:15px;margin:18px 0 6px}
.grid{display:flex;flex-wrap:wrap;gap:10px}
figure{margin:0;border:1px solid #ddd;padding:6px;width:560px}
figcaption{font-size:12px;margin-bottom:4px;word-break:break-all}
.REGRESSION{color:#b00;font-weight:bold} .noisy{color:#888}
#errors{color:#b00;white-space:pre}
svg text{font-size:10px;fill:#444}
</style></head>
<body data-charts="0" data-heatmaps="0" data-errors="0">
<h1>rdmabench history</h1>
<div id="about"></div>
<div id="errors"></div>
<h2>Fabric and family heatmaps</h2><div id="heatmaps" class="grid"></div>
<h2>Series</h2><div id="charts" class="grid"></div>
<script>
"use strict";
window.onerror = function(msg, src, line) {
  var b = document.body; b.dataset.errors = String(Number(b.dataset.errors) + 1);
  document.getElementById("errors").textContent += "script error: " + msg + " (line " + line + ")\n";
};
var DATA = {{.}};
var NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(v) { return Math.abs(v) >= 1000 ? (v/1000).toPrecision(3) + "k" : v.toPrecision(3); }
function chart(s) {
  var W = 560, H = 190, L = 52, R = 8, T = 10, B = 22;
  var fig = document.createElement("figure");
  var cap = document.createElement("figcaption");
  cap.innerHTML = "";
  cap.appendChild(document.createTextNode(s.name + "  " + s.unit + (s.higher ? " (higher is better)" : " (lower is better)") + "  [" + s.env + "]  "));
  var v = document.createElement("span");
  v.className = s.verdict === "REGRESSION" ? "REGRESSION" : (s.verdict.indexOf("noisy") >= 0 || s.verdict.indexOf("too often slow") >= 0 ? "noisy" : "");
  v.textContent = s.verdict; cap.appendChild(v); fig.appendChild(cap);
  var svg = el("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H});
  fig.appendChild(svg);
  var n = s.points.length;
  if (n === 0) return fig;
  var lo = Infinity, hi = -Infinity;
  s.points.forEach(function(p) { lo = Math.min(lo, p.v); hi = Math.max(hi, p.v); });
  if (hi === lo) { hi = lo * 1.05 + 1; lo = lo * 0.95; }
  var pad = (hi - lo) * 0.08; lo -= pad; hi += pad;
  function X(i) { return L + (n === 1 ? (W - L - R) / 2 : i * (W - L - R) / (n - 1)); }
  function Y(y) { return T + (hi - y) * (H - T - B) / (hi - lo); }
  el("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999"}, svg);
  el("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#999"}, svg);
  [lo + pad, (lo + hi) / 2, hi - pad].forEach(function(y) {
    el("text", {x: L - 4, y: Y(y) + 3, "text-anchor": "end"}, svg).textContent = fmt(y);
  });
  el("text", {x: L, y: H - 6}, svg).textContent = "run 1: " + s.points[0].t;
  el("text", {x: W - R, y: H - 6, "text-anchor": "end"}, svg).textContent = "run " + n + ": " + s.points[n - 1].t;
  s.changes.forEach(function(c) {
    var x = X(c.at) - (n > 1 ? (X(1) - X(0)) / 2 : 0);
    el("line", {x1: x, y1: T, x2: x, y2: H - B, stroke: c.worse ? "#c00" : "#080", "stroke-dasharray": "4 3", "stroke-width": c.new ? 2 : 1}, svg);
    var t = el("text", {x: x + 3, y: T + 10, fill: c.worse ? "#c00" : "#080"}, svg);
    t.textContent = (c.shift >= 0 ? "+" : "") + (100 * c.shift).toFixed(1) + "%" + c.what.replace(/^, /, " ");
  });
  el("polyline", {points: s.points.map(function(p, i) { return X(i) + "," + Y(p.v); }).join(" "), fill: "none", stroke: "#36c", "stroke-width": 1.2}, svg);
  s.points.forEach(function(p, i) {
    var c = el("circle", {cx: X(i), cy: Y(p.v), r: 2.2, fill: "#36c"}, svg);
    var steps = []; for (var k in (p.steps || {})) steps.push(k + " " + p.steps[k]);
    el("title", {}, c).textContent = "run " + (i + 1) + " " + p.t + " (upload " + p.upload + "): " + fmt(p.v) + " " + s.unit + (steps.length ? "\n" + steps.join("\n") : "");
  });
  svg.dataset.points = String(n);
  return fig;
}
function color(r, higher) {
  if (!r) return "#eee";
  var worse = higher ? 1 / r - 1 : r - 1;
  var a = Math.min(1, Math.abs(worse) / 0.5);
  return worse > 0 ? "rgba(200,0,0," + a.toFixed(2) + ")" : "rgba(0,130,0," + a.toFixed(2) + ")";
}
function heatmap(h) {
  var cw = Math.max(4, Math.min(14, Math.floor(480 / h.runs.length))), ch = 14, L = 260;
  var W = L + cw * h.runs.length + 10, H = 16 + ch * h.rows.length + 20;
  var fig = document.createElement("figure"); fig.style.width = W + "px";
  var cap = document.createElement("figcaption");
  cap.textContent = h.family + " " + h.unit + " [" + h.env + "]: each run against the series' median (red worse, green better, full colour at 50%)";
  fig.appendChild(cap);
  var svg = el("svg", {width: W, height: H}, null); fig.appendChild(svg);
  h.rows.forEach(function(name, r) {
    el("text", {x: L - 4, y: 16 + r * ch + 10, "text-anchor": "end"}, svg).textContent = name.length > 44 ? "…" + name.slice(-43) : name;
    h.cells[r].forEach(function(v, i) {
      var c = el("rect", {x: L + i * cw, y: 16 + r * ch, width: cw - 1, height: ch - 1, fill: color(v, h.higher)}, svg);
      el("title", {}, c).textContent = name + " run " + (i + 1) + " " + h.runs[i] + ": " + (v ? (v * 100).toFixed(0) + "% of its median" : "no run");
    });
  });
  el("text", {x: L, y: H - 4}, svg).textContent = h.runs.length + " runs, " + (h.runs[0] || "") + " … " + (h.runs[h.runs.length - 1] || "");
  return fig;
}
var about = document.getElementById("about");
about.textContent = DATA.series.length + " series from " + DATA.from + ", made " + DATA.made + ". Change points: docs/history.md.";
var charts = document.getElementById("charts"), drawn = 0;
DATA.series.forEach(function(s) { var f = chart(s); charts.appendChild(f); if (s.points.length) drawn++; });
var hm = document.getElementById("heatmaps");
(DATA.heatmaps || []).forEach(function(h) { hm.appendChild(heatmap(h)); });
document.body.dataset.charts = String(drawn);
document.body.dataset.heatmaps = String((DATA.heatmaps || []).length);
</script>
</body></html>
`))
